import UAF

/// The name of a server operation, as it appears in decision logs and as the `operation` label of
/// `mauth_decisions_total`.
///
/// A metric label must come from a bounded set, or a caller creates a new series, kept for the process's life, with
/// every distinct value it can make us count. So an operation name is either a string literal written in this module
/// (the literal type is `StaticString`, and the type is deliberately not `ExpressibleByStringInterpolation`, so
/// `"auth cloud \(path)"` does not compile) or one of the names derived from a closed enum below. Nothing a caller
/// sends can become one.
public struct OperationName: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    public init(stringLiteral value: StaticString) { rawValue = value.description }
    public var description: String { rawValue }

    /// The dispatch of an operation (`dispatch Reg`, `dispatch Auth`, `dispatch Dereg`).
    package static func dispatch(_ operation: UAFOperation) -> OperationName {
        switch operation {
        case .registration: "dispatch Reg"
        case .authentication: "dispatch Auth"
        case .deregistration: "dispatch Dereg"
        }
    }

    /// The redeem of a dispatch token (named after the redeem path's last component).
    package static func redeem(_ operation: UAFOperation) -> OperationName {
        switch operation {
        case .registration: "redeem registration"
        case .authentication: "redeem authentication"
        case .deregistration: "redeem deregistration"
        }
    }
}
