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
    /// A passkey's registration and sign-in count alike (200: the FIDO2 API answers in HTTP statuses).
    public var provesAKey: Bool {
        (statusCode == 1200 && (operation == "registration" || operation == "authentication"))
            || (statusCode == 200 && (operation == "passkey registration" || operation == "passkey authentication"))
    }

    package init(operation: OperationName, username: String?, statusCode: Int, detail: String) {
        self.operation = operation
        self.username = username
        self.statusCode = statusCode
        self.detail = detail
    }

    public var description: String {
        "\(operation)\(username.map { " for \($0)" } ?? ""): \(statusCode) \(detail)"
    }
}
