import Foundation

/// A decision the server took, for logs and for the demo's narration.
public struct ServerDecision: Sendable, CustomStringConvertible {
    public var operation: OperationName
    public var username: String?
    public var statusCode: Int
    public var detail: String
    /// A verified registration or authentication: only the holder of a registered key (or one a relying party let
    /// register) can cause it, so the audit trail keeps it even from a caller without credentials, whose other
    /// events are budgeted. Many users' logins may share one address (a carrier's NAT).
    public var provesAKey: Bool { statusCode == 1200 && (operation == "registration" || operation == "authentication") }

    public var description: String {
        "\(operation)\(username.map { " for \($0)" } ?? ""): \(statusCode) \(detail)"
    }
}
