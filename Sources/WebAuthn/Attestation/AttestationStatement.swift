import CBOR
import Crypto
import Foundation
import SwiftASN1
import X509

/// The attestation types of WebAuthn §6.5.3.
public enum AttestationType: String, Sendable, Hashable, CaseIterable {
    /// No attestation (`none`): nothing is known about the authenticator.
    case none
    /// Signed with the credential's own key: proves possession, not the model.
    case `self`
    /// Signed with a key shared by a batch of one model. `packed` (full) and `fido-u2f` statements are reported as
    /// basic: on the wire they cannot be told from AttCA (§6.5.3), and nothing we verify depends on the difference.
    case basic
    /// A TPM's attestation identity key, certified by an attestation CA.
    case attCA
    /// A per-credential certificate from an anonymising CA (Apple).
    case anonCA
}

/// An attestation statement that verified (WebAuthn §7.1 step 22): its format, type and trust path. Whether the
/// trust path leads to a root the relying party accepts is decided after (steps 23 and 24).
public struct VerifiedAttestation: Sendable {
    /// The statement format (`packed`, `tpm`…).
    public var format: String
    public var type: AttestationType
    /// The certificates, leaf first, as the statement carried them (DER); empty for `none` and `self`.
    public var trustPath: [[UInt8]]
    /// For `compound`: each statement it held, in order.
    public var components: [VerifiedAttestation]
    /// What, if anything, signs the model the authenticator data names.
    public var modelBinding: ModelBinding
    /// The parsed trust path, for chain validation.
    let certificates: [Certificate]

    init(
        format: String, type: AttestationType, certificates: [Certificate] = [], trustPath: [[UInt8]] = [], components: [VerifiedAttestation] = [],
        modelBinding: ModelBinding = .unbound
    ) {
        self.format = format
        self.type = type
        self.certificates = certificates
        self.trustPath = trustPath
        self.components = components
        self.modelBinding = modelBinding
    }

    /// How an attestation binds the authenticator's model (its AAGUID, or a U2F key's certificate key identifier).
    /// The AAGUID is a field of the authenticator data: a format that does not sign it with a key only the model's
    /// maker holds leaves it the client's word, which never satisfies an allow-list or a metadata requirement.
    public enum ModelBinding: Sendable, Equatable {
        /// Nothing but the credential's own key signs the AAGUID, or nothing at all: `none`, self attestation,
        /// `android-key` (the credential key signs; its certificate names no model) and `android-safetynet` (Google
        /// signs a nonce any app on the device may choose).
        case unbound
        /// A certificate names the model: the attestation certificate's id-fido-gen-ce-aaguid extension, checked
        /// against the authenticator data (`packed`, `tpm`), or Apple's anonymous CA, which certifies the
        /// authenticator data's hash for Apple's own authenticator only (`apple`).
        case certificate
        /// The attestation key signed the authenticator data, AAGUID included, but its certificate names no model:
        /// bound only when the chain reaches a root of that model's own metadata (FIDO's certification rule: a root
        /// shared by several models puts the extension in its certificates).
        case attestationKey
        /// `fido-u2f`: no AAGUID (it must be zero); the model is the attestation certificate's key identifier, the
        /// lower-case hex SHA-1 of its subjectPublicKey bits, as the Metadata Service's
        /// `attestationCertificateKeyIdentifiers` list it.
        case keyIdentifier(String)

        /// The strongest of several (a `compound` statement's): each component's signature covers the same
        /// authenticator data, so one that binds the model binds it for all.
        static func strongest(_ bindings: [ModelBinding]) -> ModelBinding {
            if bindings.contains(.certificate) { return .certificate }
            if let identifier = bindings.lazy.compactMap({
                if case .keyIdentifier(let id) = $0 { return id }
                return nil
            }).first {
                return .keyIdentifier(identifier)
            }
            return bindings.contains(.attestationKey) ? .attestationKey : .unbound
        }
    }
}

/// Why an attestation statement did not verify (WebAuthn §8, the format's verification procedure): the format and a
/// reason for each of its steps.
public struct AttestationStatementError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why, as a value: compare with the static values (`reason == .memberMissing`). The cases behind them are
    /// internal, so the module can add one without breaking a caller's `switch`.
    public struct Reason: Sendable, Equatable, CustomStringConvertible {
        enum Kind: Sendable, Equatable {
            case memberMissing(String)
            case memberUnexpected(String)
            case unknownAlgorithm(Int64)
            case algorithmUnavailable(Int64)
            case algorithmMismatch(statement: Int64, credential: Int64)
            case certificateUnreadable(index: Int)
            case certificateKeyUnsuitable(String)
            case certificateRequirement(String)
            case aaguidMismatch
            case aaguidNotZero
            case signatureInvalid
            case credentialKeyMismatch
            case nonceMismatch
            case keyDescription(String)
            case tpm(String)
            case safetyNet(String)
            case compound(String)
            case compoundEntry(index: Int, format: String, reason: String)
        }

        let kind: Kind
        init(_ kind: Kind) { self.kind = kind }
        /// The reason's name and values, as the case behind it reads (`tooDeep(limit: 16)`), for logs and tests.
        public var description: String { "\(kind)" }

        /// A member the format requires is missing or of the wrong CBOR type (`alg`, `sig`, `x5c`…).
        public static func memberMissing(_ value: String) -> Self { Self(.memberMissing(value)) }

        /// A member the format does not allow here (`none` with any member; `fido-u2f` with more than one certificate).
        public static func memberUnexpected(_ value: String) -> Self { Self(.memberUnexpected(value)) }

        /// `alg` names an algorithm this module does not know, or cannot verify (Ed448, SHA-1).
        public static func unknownAlgorithm(_ value: Int64) -> Self { Self(.unknownAlgorithm(value)) }

        public static func algorithmUnavailable(_ value: Int64) -> Self { Self(.algorithmUnavailable(value)) }

        /// Self attestation whose `alg` is not the credential key's.
        public static func algorithmMismatch(statement: Int64, credential: Int64) -> Self {
            Self(.algorithmMismatch(statement: statement, credential: credential))
        }

        /// A certificate of `x5c` that does not parse (its index, leaf 0).
        public static func certificateUnreadable(index: Int) -> Self { Self(.certificateUnreadable(index: index)) }

        /// The attestation certificate's key cannot make `alg` signatures (an ES256 `alg` with an RSA certificate).
        public static func certificateKeyUnsuitable(_ value: String) -> Self { Self(.certificateKeyUnsuitable(value)) }

        /// A rule for the attestation certificate (§8.2.1, §8.3.1) it breaks, named.
        public static func certificateRequirement(_ value: String) -> Self { Self(.certificateRequirement(value)) }

        /// The certificate's AAGUID extension (1.3.6.1.4.1.45724.1.1.4) names another model than the authenticator data.
        public static let aaguidMismatch = Self(.aaguidMismatch)

        /// `fido-u2f` with a non-zero AAGUID: the U2F signature does not cover it, so it would be a claim nothing signs.
        public static let aaguidNotZero = Self(.aaguidNotZero)

        /// The signature does not verify with the key the format names.
        public static let signatureInvalid = Self(.signatureInvalid)

        /// The certificate (android-key, apple) or `pubArea` (tpm) holds another key than the credential's.
        public static let credentialKeyMismatch = Self(.credentialKeyMismatch)

        /// The signed challenge or nonce is not bound to this registration's data.
        public static let nonceMismatch = Self(.nonceMismatch)

        /// Android's key description (§8.4): unreadable, or a key any app may use, not generated in the device, or not for signing.
        public static func keyDescription(_ value: String) -> Self { Self(.keyDescription(value)) }

        /// A TPM structure (`pubArea`, `certInfo`) that does not parse, or a field of it that is wrong, named.
        public static func tpm(_ value: String) -> Self { Self(.tpm(value)) }

        /// The SafetyNet response (§8.5): its JWS, its certificate, or a payload claim, named.
        public static func safetyNet(_ value: String) -> Self { Self(.safetyNet(value)) }

        /// `compound`: fewer than two statements, a nested `compound`, or an entry that failed (its index and its error).
        public static func compound(_ value: String) -> Self { Self(.compound(value)) }

        public static func compoundEntry(index: Int, format: String, reason: String) -> Self {
            Self(.compoundEntry(index: index, format: format, reason: reason))
        }
    }

    public var format: String
    public var reason: Reason
    public init(_ format: String, _ reason: Reason) {
        self.format = format
        self.reason = reason
    }

    public var description: String {
        let what: String
        switch reason.kind {
        case .memberMissing(let name): what = "\(name) is missing or of the wrong type"
        case .memberUnexpected(let name): what = "\(name) is not allowed here"
        case .unknownAlgorithm(let alg): what = "unknown algorithm \(alg)"
        case .algorithmUnavailable(let alg): what = "algorithm \(alg) cannot be verified here"
        case .algorithmMismatch(let statement, let credential): what = "alg \(statement) is not the credential key's \(credential)"
        case .certificateUnreadable(let index): what = "x5c[\(index)] is not an X.509 certificate"
        case .certificateKeyUnsuitable(let detail): what = "the attestation certificate's key \(detail)"
        case .certificateRequirement(let rule): what = "the attestation certificate \(rule)"
        case .aaguidMismatch: what = "the certificate's AAGUID is not the authenticator data's"
        case .aaguidNotZero: what = "the authenticator data names an AAGUID, which a U2F signature does not cover (it must be zero)"
        case .signatureInvalid: what = "the signature does not verify"
        case .credentialKeyMismatch: what = "the attested key is not the credential's public key"
        case .nonceMismatch: what = "the attested challenge is not this registration's"
        case .keyDescription(let detail): what = "the key description \(detail)"
        case .tpm(let detail): what = detail
        case .safetyNet(let detail): what = detail
        case .compound(let detail): what = detail
        case .compoundEntry(let index, let format, let reason): what = "statement \(index) (\(format)): \(reason)"
        }
        return "\(format) attestation: \(what)"
    }
}

/// What every format's procedure reads (§8, "verification procedure inputs").
struct AttestationInput {
    let statement: CBOR
    let authenticatorData: AuthenticatorData
    let credential: AuthenticatorData.AttestedCredentialData
    let clientDataHash: [UInt8]
    /// The time certificates and SafetyNet's timestamp are judged at.
    let now: Date

    /// `authData ‖ clientDataHash`: what most formats sign.
    var signedData: [UInt8] { authenticatorData.bytes + clientDataHash }
}

/// The statement formats this module verifies (the IANA registry's WebAuthn entries), by `fmt`, matched case-sensitively.
enum AttestationFormats {
    static let supported: Set<String> = ["none", "packed", "tpm", "android-key", "android-safetynet", "fido-u2f", "apple", "compound"]

    static func verify(format: String, _ input: AttestationInput) throws(AttestationStatementError) -> VerifiedAttestation {
        switch format {
        case "none": return try NoneAttestation.verify(input)
        case "packed": return try PackedAttestation.verify(input)
        case "tpm": return try TPMAttestation.verify(input)
        case "android-key": return try AndroidKeyAttestation.verify(input)
        case "android-safetynet": return try SafetyNetAttestation.verify(input)
        case "fido-u2f": return try FIDOU2FAttestation.verify(input)
        case "apple": return try AppleAttestation.verify(input)
        case "compound": return try CompoundAttestation.verify(input)
        default: preconditionFailure("fmt \(format) is checked against `supported` first")
        }
    }
}

/// Typed reads of an attestation statement's members, each failure naming the member.
struct StatementMembers {
    let format: String
    let map: CBORMap

    init(_ format: String, _ statement: CBOR) throws(AttestationStatementError) {
        guard let map = statement.map else { throw AttestationStatementError(format, .memberMissing("attStmt (a map)")) }
        self.format = format
        self.map = map
    }

    func fail(_ reason: AttestationStatementError.Reason) -> AttestationStatementError { AttestationStatementError(format, reason) }

    func int(_ name: String) throws(AttestationStatementError) -> Int64 {
        guard let value = map[text: name]?.int else { throw fail(.memberMissing(name)) }
        return value
    }

    /// A byte string member; an empty one counts as missing (the conformance tools send empty `sig`s).
    func bytes(_ name: String) throws(AttestationStatementError) -> [UInt8] {
        guard let value = map[text: name]?.bytes, !value.isEmpty else { throw fail(.memberMissing(name)) }
        return value
    }

    func text(_ name: String) throws(AttestationStatementError) -> String {
        guard let value = map[text: name]?.text, !value.isEmpty else { throw fail(.memberMissing(name)) }
        return value
    }

    func has(_ name: String) -> Bool { map[text: name] != nil }

    /// Refuses any member but `allowed`: a statement carrying more than its format defines is not that format's.
    func only(_ allowed: Set<String>) throws(AttestationStatementError) {
        for key in map.keys {
            guard let name = key.text, allowed.contains(name) else { throw fail(.memberUnexpected(key.text ?? "\(key)")) }
        }
    }

    /// The longest `x5c` read. Real chains have two to five certificates (Android's the longest); the bound caps the
    /// certificates one anonymous registration makes the server parse and validate.
    static let maximumCertificates = 8

    /// `x5c`: a non-empty array of DER certificates, leaf first, parsed.
    func certificates() throws(AttestationStatementError) -> (parsed: [Certificate], der: [[UInt8]]) {
        guard let array = map[text: "x5c"]?.array, !array.isEmpty else { throw fail(.memberMissing("x5c")) }
        guard array.count <= Self.maximumCertificates else {
            throw fail(.memberUnexpected("x5c with \(array.count) certificates (\(Self.maximumCertificates) at most)"))
        }
        var parsed: [Certificate] = []
        var der: [[UInt8]] = []
        for (index, item) in array.enumerated() {
            guard let bytes = item.bytes else { throw fail(.memberMissing("x5c[\(index)] (a byte string)")) }
            guard let certificate = try? Certificate(derEncoded: bytes) else { throw fail(.certificateUnreadable(index: index)) }
            parsed.append(certificate)
            der.append(bytes)
        }
        return (parsed, der)
    }

    /// The key of `certificate` for `alg` signatures.
    func signingKey(_ certificate: Certificate, algorithm alg: Int64) throws(AttestationStatementError) -> COSEKey {
        do { return try COSEKey(certificateKey: certificate.publicKey, algorithm: alg) } catch {
            switch error.reason.kind {
            case .unknownAlgorithm(let value): throw fail(.unknownAlgorithm(value))
            case .algorithmUnavailable(let value): throw fail(.algorithmUnavailable(value))
            case .rsaKeySize(let bits): throw fail(.certificateKeyUnsuitable("is an RSA key of \(bits) bits"))
            default: throw fail(.certificateKeyUnsuitable("cannot make algorithm \(alg) signatures"))
            }
        }
    }
}

/// Certificate rules several formats share.
enum AttestationCertificateRules {
    /// id-fido-gen-ce-aaguid: the model an attestation certificate speaks for.
    static let aaguidExtension: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 45724, 1, 1, 4]

    /// When the certificate names an AAGUID (an OCTET STRING of 16 bytes inside the extension value), it must be the
    /// authenticator data's, and the extension must not be critical (§8.2.1, §8.3.1). True when it names one.
    @discardableResult
    static func checkAAGUID(_ certificate: Certificate, _ aaguid: [UInt8], format: String) throws(AttestationStatementError) -> Bool {
        guard let ext = certificate.extensions[oid: aaguidExtension] else { return false }
        guard !ext.critical else { throw AttestationStatementError(format, .certificateRequirement("marks its AAGUID extension critical")) }
        guard let inner = try? ASN1OctetString(derEncoded: ext.value), inner.bytes.count == 16 else {
            throw AttestationStatementError(format, .certificateRequirement("has an AAGUID extension that is not a 16-byte OCTET STRING"))
        }
        guard Array(inner.bytes) == aaguid else { throw AttestationStatementError(format, .aaguidMismatch) }
        return true
    }

    /// basicConstraints, when present, must say "not a CA" (both §8.2.1 and §8.3.1 require CA=false).
    static func checkNotCA(_ certificate: Certificate, format: String) throws(AttestationStatementError) {
        let constraints: BasicConstraints?
        do { constraints = try certificate.extensions.basicConstraints } catch {
            throw AttestationStatementError(format, .certificateRequirement("has unreadable basic constraints"))
        }
        if case .isCertificateAuthority? = constraints {
            throw AttestationStatementError(format, .certificateRequirement("is a CA certificate (basicConstraints CA=true)"))
        }
    }

    static func checkVersion3(_ certificate: Certificate, format: String) throws(AttestationStatementError) {
        guard certificate.version == .v3 else { throw AttestationStatementError(format, .certificateRequirement("is not X.509 version 3")) }
    }
}

/// `none` (§8.7): an empty statement; nothing is attested.
enum NoneAttestation {
    static func verify(_ input: AttestationInput) throws(AttestationStatementError) -> VerifiedAttestation {
        let members = try StatementMembers("none", input.statement)
        // Why refuse members: a full statement relabelled `none` would otherwise register as unattested while
        // carrying (and hiding) what the authenticator really said (the conformance tools test this).
        try members.only([])
        return VerifiedAttestation(format: "none", type: .none)
    }
}
