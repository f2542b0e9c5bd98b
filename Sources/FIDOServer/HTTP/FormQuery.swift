import FIDOServerCore
import Foundation

/// A request's query read as a form is (`application/x-www-form-urlencoded`, as the WHATWG URL standard and every
/// browser write one): `+` is a space, then `%XX` is a byte of UTF-8.
///
/// Why not the router's query parameters: they keep `+` as it is, so a client that form-encodes `alice smith` as
/// `alice+smith` would name another user, and on an endpoint that acts on a user that is the wrong user's data. A
/// literal `+` is sent as `%2B`. A query that is not valid percent-encoded UTF-8 is refused, never guessed at.
struct FormQuery {
    private let pairs: [(name: String, value: String)]

    init(_ query: String?) throws(ServiceFailure) {
        var pairs: [(String, String)] = []
        for item in (query ?? "").split(separator: "&", omittingEmptySubsequences: true) {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]), let value = Self.decode(parts.count > 1 ? parts[1] : "") else {
                throw ServiceFailure(.badRequest, "the query is not valid percent-encoded UTF-8")
            }
            pairs.append((name, value))
        }
        self.pairs = pairs
    }

    private static func decode(_ text: Substring) -> String? { text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }

    /// The first value of `name`.
    func get(_ name: String) -> String? { pairs.first { $0.name == name }?.value }

    /// Every value of `name`, in order.
    func getAll(_ name: String) -> [String] { pairs.filter { $0.name == name }.map(\.value) }
}
