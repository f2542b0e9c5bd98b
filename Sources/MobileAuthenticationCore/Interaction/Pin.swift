import Foundation

/// PIN length rules; validation happens inside the SDK (a bad PIN gives ``PinEnrollmentError/InvalidPinFormat(message:)``).
public struct PinPolicy: Decodable, Sendable, Equatable {
    public let minLength: Int
    public let maxLength: Int
    /// The default: exactly 6 digits.
    public init() { self.init(minLength: 6, maxLength: 6)! }
    /// Nil unless `1 ≤ minLength ≤ maxLength ≤ 64`.
    public init?(minLength: Int, maxLength: Int) {
        guard minLength >= 1, minLength <= maxLength, maxLength <= 64 else { return nil }
        self.minLength = minLength
        self.maxLength = maxLength
    }

    private enum CodingKeys: String, CodingKey { case minLength, maxLength }

    /// A decoded policy obeys the same bounds as a made one: outside them it is a `DecodingError`, not a policy
    /// that crashes at the first PIN it checks.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let minLength = try container.decode(Int.self, forKey: .minLength)
        let maxLength = try container.decode(Int.self, forKey: .maxLength)
        guard let policy = PinPolicy(minLength: minLength, maxLength: maxLength) else {
            throw DecodingError.dataCorruptedError(
                forKey: .maxLength, in: container,
                debugDescription: "a PIN policy needs 1 ≤ minLength ≤ maxLength ≤ 64; got \(minLength) and \(maxLength)")
        }
        self = policy
    }

    /// The reason `pin` is not acceptable, or nil.
    package func violation(_ pin: String) -> String? {
        guard pin.allSatisfy({ $0.isASCII && $0.isNumber }) else { return "The PIN must contain digits only." }
        guard (minLength...maxLength).contains(pin.count) else {
            return minLength == maxLength
                ? "The PIN must have exactly \(minLength) digits." : "The PIN must have \(minLength) to \(maxLength) digits."
        }
        return nil
    }
}

/// Protection state of a PIN or password authenticator.
public enum PinAuthenticatorProtectionStatus: Equatable, Encodable, Sendable, CustomStringConvertible {
    case Unlocked
    /// The last attempt failed; `coolDownTimeInSeconds` must pass before the next one (0: none).
    case LastAttemptFailed(remainingTries: Int, coolDownTimeInSeconds: Int)
    case LockedOut

    package init(_ state: ProtectionState) {
        switch state {
        case .unlocked: self = .Unlocked
        case .lastAttemptFailed(let remaining, let coolDown): self = .LastAttemptFailed(remainingTries: remaining, coolDownTimeInSeconds: coolDown)
        case .lockedOut: self = .LockedOut
        }
    }

    /// The state this status shows.
    package var state: ProtectionState {
        switch self {
        case .Unlocked: return .unlocked
        case .LastAttemptFailed(let remaining, let coolDown): return .lastAttemptFailed(remainingTries: remaining, coolDownTimeInSeconds: coolDown)
        case .LockedOut: return .lockedOut
        }
    }

    public var description: String {
        switch self {
        case .Unlocked: return "Unlocked"
        case .LastAttemptFailed(let remaining, let coolDown):
            return "Last attempt failed: \(remaining) tries left" + (coolDown > 0 ? ", wait \(coolDown) s" : "")
        case .LockedOut: return "Locked out"
        }
    }
}

public protocol PinEnrollmentContext: Sendable {
    var username: Username { get }
    var lastRecoverableError: PinEnrollmentError? { get }
}

public protocol PinEnrollmentHandler: Sendable {
    func pin(_ pin: String)
    func cancel()
}

/// Implemented by the app: asks the user for a new PIN.
public protocol PinEnroller: ValidCredentialsObserver {
    func enrollPin(context: any PinEnrollmentContext, handler: any PinEnrollmentHandler)
    func pinPolicy() -> PinPolicy
}

extension PinEnroller {
    public func pinPolicy() -> PinPolicy { PinPolicy() }
}

public protocol PinUserVerificationContext: Sendable {
    var authenticator: any Authenticator { get }
    var authenticatorProtectionStatus: PinAuthenticatorProtectionStatus { get }
}

public protocol PinUserVerificationHandler: Sendable {
    func verify(_ pin: String)
    func cancel()
}

/// Implemented by the app: asks the user for their PIN. Called again after a wrong PIN, with the new status.
public protocol PinUserVerifier: ValidCredentialsObserver {
    func verifyPin(context: any PinUserVerificationContext, handler: any PinUserVerificationHandler)
}

struct PinEnrollmentContextValue: PinEnrollmentContext {
    let username: Username
    let lastRecoverableError: PinEnrollmentError?
}

struct PinVerificationContextValue: PinUserVerificationContext {
    let authenticator: any Authenticator
    let authenticatorProtectionStatus: PinAuthenticatorProtectionStatus
}

/// Implemented by the app: asks the user for the current and a new PIN (seed 002, "Change PIN").
public protocol PinChanger: Sendable {
    func changePin(context: any PinChangeContext, handler: any PinChangeHandler)
    func pinPolicy() -> PinPolicy
}

extension PinChanger {
    public func pinPolicy() -> PinPolicy { PinPolicy() }
}

public protocol PinChangeContext: Sendable {
    var username: Username { get }
    var authenticatorProtectionStatus: PinAuthenticatorProtectionStatus { get }
    var lastRecoverableError: PinChangeRecoverableError? { get }
}

public protocol PinChangeHandler: Sendable {
    func pins(_ oldPin: String, _ newPin: String)
    func cancel()
}

package struct PinChangeContextValue: PinChangeContext {
    package let username: Username
    package let authenticatorProtectionStatus: PinAuthenticatorProtectionStatus
    package let lastRecoverableError: PinChangeRecoverableError?

    package init(
        username: Username, authenticatorProtectionStatus: PinAuthenticatorProtectionStatus, lastRecoverableError: PinChangeRecoverableError?
    ) {
        self.username = username
        self.authenticatorProtectionStatus = authenticatorProtectionStatus
        self.lastRecoverableError = lastRecoverableError
    }
}

/// The old and new secret of a change.
package struct SecretPair: Sendable {
    package let old: String
    package let new: String
}
