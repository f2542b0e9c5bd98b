/// Why an App Attest attestation or assertion was refused, with the step of Apple's validation that refused it.
public struct AppAttestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why, as a value: compare with the static values (`reason == .nonceMismatch`). The cases behind them are
    /// internal, so the module can add one without breaking a caller's `switch`.
    public struct Reason: Sendable, Equatable, CustomStringConvertible {
        enum Kind: Sendable, Equatable {
            case malformed(String)
            case formatUnexpected(String)
            case certificateUnreadable(index: Int)
            case chainNotTrusted
            case nonceMissing
            case nonceMismatch
            case keyIDMismatch
            case appIDNotAccepted
            case counterNotZero(UInt32)
            case environmentNotAccepted
            case credentialIDMismatch
            case signatureInvalid
            case counterNotIncreased(stored: UInt32, received: UInt32)
        }

        let kind: Kind
        init(_ kind: Kind) { self.kind = kind }
        /// The reason's name and values, as the case behind it reads (`counterNotZero(1)`), for logs and tests.
        public var description: String { "\(kind)" }

        /// The object is not the CBOR structure Apple documents (or a member has the wrong type or size).
        public static func malformed(_ value: String) -> Self { Self(.malformed(value)) }
        /// Attestation step 1: `fmt` is not `apple-appattest`.
        public static func formatUnexpected(_ value: String) -> Self { Self(.formatUnexpected(value)) }
        /// Attestation step 1: a certificate of `x5c` is not DER X.509.
        public static func certificateUnreadable(index: Int) -> Self { Self(.certificateUnreadable(index: index)) }
        /// Attestation step 1: the chain does not reach an accepted root at the verification time (a forged or
        /// replaced root, an expired or not yet valid certificate, a broken signature).
        public static let chainNotTrusted = Self(.chainNotTrusted)
        /// Attestation step 4: the leaf has no nonce extension (1.2.840.113635.100.8.2) of the documented shape.
        public static let nonceMissing = Self(.nonceMissing)
        /// Attestation steps 2–4: SHA-256(authData ‖ clientDataHash) is not the nonce the leaf certifies, so the
        /// attestation was made for another challenge.
        public static let nonceMismatch = Self(.nonceMismatch)
        /// Attestation step 5: the key ID is not SHA-256 of the leaf's public key.
        public static let keyIDMismatch = Self(.keyIDMismatch)
        /// Attestation step 6, assertion step 4: the rpIdHash is SHA-256 of no accepted app ID.
        public static let appIDNotAccepted = Self(.appIDNotAccepted)
        /// Attestation step 7: a new key's counter must be 0.
        public static func counterNotZero(_ value: UInt32) -> Self { Self(.counterNotZero(value)) }
        /// Attestation step 8: the AAGUID names an environment (`appattest` production, `appattestdevelop`
        /// development) the relying party does not accept.
        public static let environmentNotAccepted = Self(.environmentNotAccepted)
        /// Attestation step 9: the credential ID is not the key ID.
        public static let credentialIDMismatch = Self(.credentialIDMismatch)
        /// Assertion step 3: the signature does not verify with the stored key over SHA-256(authenticatorData ‖
        /// clientDataHash).
        public static let signatureInvalid = Self(.signatureInvalid)
        /// Assertion step 5: the counter is not greater than the stored one (a replayed or cloned assertion).
        public static func counterNotIncreased(stored: UInt32, received: UInt32) -> Self {
            Self(.counterNotIncreased(stored: stored, received: received))
        }
    }

    public var reason: Reason
    public init(_ reason: Reason) { self.reason = reason }

    public var description: String {
        switch reason.kind {
        case .malformed(let what): "App Attest object malformed: \(what)"
        case .formatUnexpected(let fmt): "App Attest attestation format is \"\(fmt)\", not apple-appattest"
        case .certificateUnreadable(let index): "App Attest certificate x5c[\(index)] is not DER X.509"
        case .chainNotTrusted: "App Attest certificate chain does not reach an accepted root at the verification time"
        case .nonceMissing: "App Attest leaf certificate has no nonce extension (1.2.840.113635.100.8.2) of the documented shape"
        case .nonceMismatch: "App Attest nonce does not match SHA-256(authData || clientDataHash): another challenge"
        case .keyIDMismatch: "App Attest key ID is not SHA-256 of the attested public key"
        case .appIDNotAccepted: "App Attest rpIdHash is not SHA-256 of an accepted app ID"
        case .counterNotZero(let value): "App Attest attestation counter is \(value), not 0"
        case .environmentNotAccepted: "App Attest AAGUID names an environment that is not accepted"
        case .credentialIDMismatch: "App Attest credential ID is not the key ID"
        case .signatureInvalid: "App Attest assertion signature does not verify with the attested key"
        case .counterNotIncreased(let stored, let received): "App Attest counter \(received) is not greater than the stored \(stored)"
        }
    }

    static func malformed(_ what: String) -> Self { Self(.malformed(what)) }
}
