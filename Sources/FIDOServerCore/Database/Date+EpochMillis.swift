import Foundation

/// Epoch milliseconds, the one time representation in every table.
extension Date {
    var epochMillis: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }
    init(epochMillis: Int64) { self.init(timeIntervalSince1970: TimeInterval(epochMillis) / 1000) }
}
