import Foundation
import NevisProtocol
import UAF

/// What kind of user verification an authenticator performs.
package enum AuthenticatorKind: String, Sendable, Codable {
    /// Application PIN, matched by the SDK.
    case pin
    /// Application password, matched by the SDK.
    case password
    /// iOS Touch ID, or the Android fingerprint authenticator (FingerprintManager).
    case fingerprint
    /// iOS Face ID.
    case faceRecognition
    /// The Android biometric authenticator (BiometricPrompt; fingerprint, face, iris).
    case biometric
    /// The operating system's device passcode.
    case devicePasscode

    /// Whether the SDK matches the user's secret itself (and so keeps a verifier and a cool-down counter).
    package var isKnowledgeFactor: Bool { self == .pin || self == .password }
}

/// One signing scheme an authenticator can use: the algorithm and the public key format that goes with it.
struct SigningScheme: Sendable, Hashable {
    let algorithm: SignatureAlgorithm
    let keyEncoding: PublicKeyEncoding
    let keyType: KeyType

    static let ecdsaP256 = SigningScheme(algorithm: .secp256r1ECDSASHA256DER, keyEncoding: .eccX962DER, keyType: .p256)
    static let rsaPKCS1 = SigningScheme(algorithm: .rsaEMSAPKCS1SHA256DER, keyEncoding: .rsa2048DER, keyType: .rsa2048)
}

/// What the SDK knows about one of its authenticators. The capabilities come from `NevisProtocol.NevisAuthenticatorMetadata` (the
/// statements the server ships), so the client and the server describe each AAID in one place.
package struct AuthenticatorDescriptor: Sendable {
    let aaid: String
    package let kind: AuthenticatorKind
    let profile: DeviceProfile
    /// The signing schemes in order of preference: ECDSA first, RSA (Android only) where the server asks for it.
    let schemes: [SigningScheme]
    /// Capabilities without algorithms; ``capabilities(for:)`` adds the scheme's algorithm.
    private let statementCapabilities: AuthenticatorCapabilities

    init(aaid: String, kind: AuthenticatorKind, profile: DeviceProfile, schemes: [SigningScheme]) {
        self.aaid = aaid
        self.kind = kind
        self.profile = profile
        self.schemes = schemes
        guard let statement = NevisAuthenticatorMetadata.statements.first(where: { AAID.equal($0.aaid, aaid) }) else {
            preconditionFailure("no default metadata statement for \(aaid)")
        }
        statementCapabilities = statement.capabilities
    }

    /// The capabilities policy matching sees when the authenticator signs with `scheme`.
    func capabilities(for scheme: SigningScheme, keyIDs: Set<String> = []) -> AuthenticatorCapabilities {
        var capabilities = statementCapabilities
        capabilities.authenticationAlgorithms = [scheme.algorithm]
        capabilities.keyIDs = keyIDs
        return capabilities
    }

    /// The first scheme with which this authenticator alone satisfies `policy`, or nil.
    func scheme(satisfying policy: Policy, keyIDs: Set<String> = []) -> SigningScheme? {
        schemes.first { PolicyMatcher.isSatisfied(policy, by: [capabilities(for: $0, keyIDs: keyIDs)]) }
    }

    /// The scheme of an existing registration.
    func scheme(for algorithm: SignatureAlgorithm) -> SigningScheme? { schemes.first { $0.algorithm == algorithm } }

    /// The five authenticators of a profile (seed 001; seed 000 §4.3.2 for the algorithms).
    static func all(for profile: DeviceProfile) -> [AuthenticatorDescriptor] {
        switch profile {
        case .ios:
            let table: [(String, AuthenticatorKind)] = [
                ("F1D0#1001", .pin), ("F1D0#1002", .fingerprint), ("F1D0#1003", .faceRecognition),
                ("F1D0#1004", .devicePasscode), ("F1D0#1005", .password),
            ]
            return
                table
                .map { AuthenticatorDescriptor(aaid: $0.0, kind: $0.1, profile: .ios, schemes: [.ecdsaP256]) }
        case .android:
            let table: [(String, AuthenticatorKind)] = [
                ("F1D0#0001", .pin), ("F1D0#0002", .fingerprint), ("F1D0#0003", .biometric),
                ("F1D0#0004", .devicePasscode), ("F1D0#0005", .password),
            ]
            return
                table
                .map { AuthenticatorDescriptor(aaid: $0.0, kind: $0.1, profile: .android, schemes: [.ecdsaP256, .rsaPKCS1]) }
        }
    }
}
