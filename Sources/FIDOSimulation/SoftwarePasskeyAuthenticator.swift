import CBOR
import Crypto
import Foundation
import Primitives
import WebAuthn
import WireJSON
import _CryptoExtras

/// A passkey authenticator and the browser in front of it, in software: it makes credentials and signs in with
/// them the way a platform authenticator does through `navigator.credentials`, for tests and tools that drive a
/// WebAuthn relying party (QA, load). It writes what a browser hands the page: `clientDataJSON`, the attestation
/// object (`none` or `packed` self attestation), the authenticator data and the signature, with P-256 (ES256),
/// Ed25519 (EdDSA), 2048-bit RSA (RS256, RS384, RS512) or ML-DSA-65 and -87 keys. It holds its keys in memory only.
public struct SoftwarePasskeyAuthenticator: Sendable {
    /// The credential key types it makes.
    public enum Algorithm: Int64, Sendable, CaseIterable {
        case es256 = -7
        case edDSA = -8
        /// RSASSA-PKCS1-v1_5 with SHA-256, -384 or -512, as Windows Hello's TPM keys sign.
        case rs256 = -257
        case rs384 = -258
        case rs512 = -259
        /// ML-DSA (FIPS 204), the post-quantum signatures no platform authenticator makes yet.
        case mlDSA65 = -49
        case mlDSA87 = -50
    }

    /// The attestation it writes.
    public enum Attestation: String, Sendable, CaseIterable {
        /// `none`: what synced passkeys send, and what a relying party that asks for no attestation gets.
        case none
        /// `packed` self attestation: the credential key signs.
        case packedSelf
    }

    /// Why it refused to act, as a browser would.
    public enum Failure: Error, Equatable, Sendable {
        /// None of the relying party's `pubKeyCredParams` is one it makes.
        case noSupportedAlgorithm
        /// It holds no credential for the RP ID among the ones allowed (`NotAllowedError` in a browser).
        case noCredential
    }

    public struct Credential: Sendable {
        public let id: [UInt8]
        public let rpID: String
        public let userHandle: [UInt8]
        public let algorithm: Algorithm
        /// The counter it last signed with; stays 0 for an authenticator that does not count.
        public fileprivate(set) var signCount: UInt32
        fileprivate let key: Key
    }

    fileprivate enum Key: Sendable {
        case p256(P256.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
        case rsa(_RSA.Signing.PrivateKey, Algorithm)
        /// An ML-DSA key behind closures, with its 32-byte seed (FIPS 204 ξ), which is what is kept: CryptoKit's ML-DSA
        /// types exist only from the 26 releases on Apple platforms, so no case may hold them.
        case mlDSA(MLDSAKey, seed: [UInt8], Algorithm)

        static func make(_ algorithm: Algorithm) throws -> Key {
            switch algorithm {
            case .es256: return .p256(P256.Signing.PrivateKey())
            case .edDSA: return .ed25519(Curve25519.Signing.PrivateKey())
            case .rs256, .rs384, .rs512: return .rsa(try _RSA.Signing.PrivateKey(keySize: .bits2048), algorithm)
            case .mlDSA65, .mlDSA87:
                let seed = SecureRandom.bytes(32)
                return .mlDSA(try MLDSAKey(seed: seed, algorithm), seed: seed, algorithm)
            }
        }

        func sign(_ data: [UInt8]) throws -> [UInt8] {
            switch self {
            case .p256(let key): return Array(try key.signature(for: data).derRepresentation)
            case .ed25519(let key): return Array(try key.signature(for: data))
            case .rsa(let key, let algorithm):
                let signature: _RSA.Signing.RSASignature
                switch algorithm {
                case .rs384: signature = try key.signature(for: SHA384.hash(data: data), padding: .insecurePKCS1v1_5)
                case .rs512: signature = try key.signature(for: SHA512.hash(data: data), padding: .insecurePKCS1v1_5)
                default: signature = try key.signature(for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5)
                }
                return Array(signature.rawRepresentation)
            case .mlDSA(let key, _, _):
                return try key.sign(data)
            }
        }

        /// The COSE_Key of the public key (WebAuthn §5.8.5), in CTAP2 canonical form.
        var cose: [UInt8] {
            switch self {
            case .p256(let key): return COSEKey(key.publicKey).encoded
            case .ed25519(let key): return COSEKey(key.publicKey).encoded
            case .rsa(let key, let algorithm):
                // kty RSA (3), alg, n (-1), e (-2), in canonical order.
                let primitives = try? key.publicKey.getKeyPrimitives()
                return CBOREncoder.encode(
                    .map(
                        CBORMap([
                            .init(.int(1), .int(3)), .init(.int(3), .int(algorithm.rawValue)),
                            .init(.int(-1), .bytes(Array(primitives?.modulus ?? Data()))),
                            .init(.int(-2), .bytes(Array(primitives?.publicExponent ?? Data()))),
                        ])))
            case .mlDSA(let key, _, let algorithm):
                // kty AKP (7), alg, pub (-1): draft-ietf-cose-dilithium.
                let pub = key.publicKey
                return CBOREncoder.encode(
                    .map(CBORMap([.init(.int(1), .int(7)), .init(.int(3), .int(algorithm.rawValue)), .init(.int(-1), .bytes(pub))])))
            }
        }

        /// The private key as ``StoredCredential`` keeps it: raw for P-256 and Ed25519, PKCS #1 DER for RSA.
        var stored: Data {
            switch self {
            case .p256(let key): return key.rawRepresentation
            case .ed25519(let key): return key.rawRepresentation
            case .rsa(let key, _): return key.derRepresentation
            case .mlDSA(_, let seed, _): return Data(seed)
            }
        }

        init?(stored raw: Data, algorithm: Algorithm) {
            switch algorithm {
            case .es256:
                guard let key = try? P256.Signing.PrivateKey(rawRepresentation: raw) else { return nil }
                self = .p256(key)
            case .edDSA:
                guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw) else { return nil }
                self = .ed25519(key)
            case .rs256, .rs384, .rs512:
                guard let key = try? _RSA.Signing.PrivateKey(derRepresentation: raw) else { return nil }
                self = .rsa(key, algorithm)
            case .mlDSA65, .mlDSA87:
                guard raw.count == 32, let key = try? MLDSAKey(seed: Array(raw), algorithm) else { return nil }
                self = .mlDSA(key, seed: Array(raw), algorithm)
            }
        }
    }

    /// An ML-DSA key made from its seed, where the platform has ML-DSA.
    /// Made once per credential: expanding a key from its seed costs about as much as signing.
    fileprivate struct MLDSAKey: Sendable {
        let sign: @Sendable ([UInt8]) throws -> [UInt8]
        let publicKey: [UInt8]

        init(seed: [UInt8], _ algorithm: Algorithm) throws {
            guard #available(macOS 26, iOS 26, watchOS 26, tvOS 26, visionOS 26, *) else { throw Failure.noSupportedAlgorithm }
            if algorithm == .mlDSA65 {
                let key = try MLDSA65.PrivateKey(seedRepresentation: seed, publicKey: nil)
                publicKey = Array(key.publicKey.rawRepresentation)
                sign = { Array(try key.signature(for: $0)) }
            } else {
                let key = try MLDSA87.PrivateKey(seedRepresentation: seed, publicKey: nil)
                publicKey = Array(key.publicKey.rawRepresentation)
                sign = { Array(try key.signature(for: $0)) }
            }
        }
    }

    /// What `navigator.credentials.create()` hands the page.
    public struct Registration: Sendable {
        public let credentialID: [UInt8]
        public let clientDataJSON: [UInt8]
        public let attestationObject: [UInt8]
        public let transports: [String]
    }

    /// What `navigator.credentials.get()` hands the page.
    public struct Assertion: Sendable {
        public let credentialID: [UInt8]
        public let clientDataJSON: [UInt8]
        public let authenticatorData: [UInt8]
        public let signature: [UInt8]
        public let userHandle: [UInt8]
    }

    /// The page's origin, written into the client data.
    public var origin: String
    /// The model it names; all zero by default, as synced passkeys send.
    public var aaguid: [UInt8]
    /// Whether it verifies the user (UV), whether its credentials are synced (BE) and backed up (BS).
    public var verifiesUser: Bool
    public var backupEligible: Bool
    public var backedUp: Bool
    /// Whether it counts signatures (hardware keys do; synced passkeys send 0 every time).
    public var counts: Bool
    /// The `credProtect` level (1…3) it reports applying to a new credential, as a CTAP 2.1 security key does when
    /// asked; nil reports none, as synced passkeys do.
    public var credentialProtection: Int?
    /// Whether a new credential's authenticator data says the user was present (UP); false as a browser's conditional
    /// create may make one, without the user's gesture.
    public var presentAtCreation = true
    public private(set) var credentials: [Credential] = []

    public init(
        origin: String, aaguid: [UInt8] = [UInt8](repeating: 0, count: 16), verifiesUser: Bool = true, backupEligible: Bool = true,
        backedUp: Bool = true, counts: Bool = false
    ) {
        self.origin = origin
        self.aaguid = aaguid
        self.verifiesUser = verifiesUser
        self.backupEligible = backupEligible
        self.backedUp = backedUp && backupEligible
        self.counts = counts
    }

    /// Makes a credential for `userHandle` at `rpID`, of the first of `algorithms` (COSE identifiers, the relying
    /// party's `pubKeyCredParams` in its order) it can make, and answers as `create()` would.
    public mutating func create(
        rpID: String, challenge: [UInt8], userHandle: [UInt8], algorithms: [Int64] = [-8, -7, -257],
        attestation: Attestation = .none
    ) throws -> Registration {
        guard let algorithm = algorithms.lazy.compactMap(Algorithm.init(rawValue:)).first else { throw Failure.noSupportedAlgorithm }
        let key = try Key.make(algorithm)
        let id = SecureRandom.bytes(32)
        let credential = Credential(id: id, rpID: rpID, userHandle: userHandle, algorithm: algorithm, signCount: counts ? 1 : 0, key: key)
        let clientDataJSON = try Self.clientData(type: "webauthn.create", challenge: challenge, origin: origin)
        var data = authenticatorData(rpID: rpID, signCount: credential.signCount, attested: true)
        if !presentAtCreation { data[32] &= ~0x01 }
        data += aaguid + [UInt8(id.count >> 8), UInt8(id.count & 0xff)] + id + key.cose
        if let level = credentialProtection {
            data[32] |= 0x80  // ED: extensions follow
            data += CBOREncoder.encode(.map(CBORMap([.init(.text("credProtect"), .int(Int64(level)))])))
        }
        let statement: CBOR
        switch attestation {
        case .none:
            statement = .map(CBORMap())
        case .packedSelf:
            let signature = try key.sign(data + SHA256.hash(data: clientDataJSON))
            statement = .map(CBORMap([.init(.text("alg"), .int(algorithm.rawValue)), .init(.text("sig"), .bytes(signature))]))
        }
        let object = CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.text("fmt"), .text(attestation == .none ? "none" : "packed")), .init(.text("attStmt"), statement),
                    .init(.text("authData"), .bytes(data)),
                ])))
        credentials.append(credential)
        return Registration(credentialID: id, clientDataJSON: clientDataJSON, attestationObject: object, transports: ["internal", "hybrid"])
    }

    /// Signs in at `rpID` with the newest credential among `allowCredentials` (any of its credentials for the RP ID
    /// when empty: a discoverable credential, as for a sign-in without a username), as `get()` would.
    public mutating func get(rpID: String, challenge: [UInt8], allowCredentials: [[UInt8]] = []) throws -> Assertion {
        guard let index = credentials.lastIndex(where: { $0.rpID == rpID && (allowCredentials.isEmpty || allowCredentials.contains($0.id)) }) else {
            throw Failure.noCredential
        }
        if counts { credentials[index].signCount += 1 }
        let credential = credentials[index]
        let clientDataJSON = try Self.clientData(type: "webauthn.get", challenge: challenge, origin: origin)
        let data = authenticatorData(rpID: rpID, signCount: credential.signCount, attested: false)
        let signature = try credential.key.sign(data + SHA256.hash(data: clientDataJSON))
        return Assertion(
            credentialID: credential.id, clientDataJSON: clientDataJSON, authenticatorData: data, signature: signature,
            userHandle: credential.userHandle)
    }

    /// A credential as a process keeps it between runs (`mauth device`): its private key, raw. Store it as such.
    public struct StoredCredential: Codable, Sendable, Equatable {
        public var id: String
        public var rpID: String
        public var userHandle: String
        /// COSE algorithm: -7 (P-256), -8 (Ed25519), -257, -258 or -259 (RSA), -49 or -50 (ML-DSA).
        public var algorithm: Int64
        public var signCount: UInt32
        /// The private key, base64url: raw for P-256 and Ed25519 (32 bytes), PKCS #1 DER for RSA, the seed for ML-DSA.
        public var privateKey: String
    }

    /// Every credential it holds, to keep.
    public var stored: [StoredCredential] {
        credentials.map { credential in
            StoredCredential(
                id: Base64URL.encode(credential.id), rpID: credential.rpID, userHandle: Base64URL.encode(credential.userHandle),
                algorithm: credential.algorithm.rawValue, signCount: credential.signCount, privateKey: Base64URL.encode(credential.key.stored))
        }
    }

    /// Holds the credentials of `stored` beside its own; one that does not read (a key of another kind, bytes that
    /// are not base64url) is left out, as a passkey the device no longer has.
    public mutating func restore(_ stored: [StoredCredential]) {
        for entry in stored {
            guard let id = Base64URL.decodeBytes(entry.id), let userHandle = Base64URL.decodeBytes(entry.userHandle),
                let raw = Base64URL.decode(entry.privateKey), let algorithm = Algorithm(rawValue: entry.algorithm),
                let key = Key(stored: raw, algorithm: algorithm)
            else { continue }
            credentials.append(
                Credential(id: id, rpID: entry.rpID, userHandle: userHandle, algorithm: algorithm, signCount: entry.signCount, key: key))
        }
    }

    /// Forgets a credential, as a user deleting a passkey from their phone does.
    public mutating func remove(credentialID: [UInt8]) { credentials.removeAll { $0.id == credentialID } }

    /// The 37 fixed bytes: RP ID hash, flags (UP always; UV, BE, BS as configured; AT when attesting), counter.
    private func authenticatorData(rpID: String, signCount: UInt32, attested: Bool) -> [UInt8] {
        var flags: UInt8 = 0x01
        if verifiesUser { flags |= 0x04 }
        if backupEligible { flags |= 0x08 }
        if backedUp { flags |= 0x10 }
        if attested { flags |= 0x40 }
        return Array(SHA256.hash(data: Array(rpID.utf8))) + [flags] + withUnsafeBytes(of: signCount.bigEndian) { Array($0) }
    }

    /// `clientDataJSON` as Chromium writes it: type, challenge, origin, crossOrigin, in that order.
    static func clientData(type: String, challenge: [UInt8], origin: String) throws -> [UInt8] {
        let text =
            #"{"type":"\#(type)","challenge":"\#(Base64URL.encode(challenge))","origin":\#(try WireJSONEncoder().encodeToString(origin)),"crossOrigin":false}"#
        return Array(text.utf8)
    }
}
