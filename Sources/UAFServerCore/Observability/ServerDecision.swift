import Foundation

/// A decision the server took, for logs and for the demo's narration.
public struct ServerDecision: Sendable, CustomStringConvertible {
    public var operation: OperationName
    public var username: String?
    public var statusCode: Int
    public var detail: String
    public var description: String {
        "\(operation)\(username.map { " for \($0)" } ?? ""): \(statusCode) \(detail)"
    }
}
