import CBOR
import Crypto
import SwiftASN1
import X509
import _CryptoExtras

/// The COSE algorithms (IANA "COSE Algorithms") a credential key may name.
public enum COSEAlgorithm: Int64, Sendable, CaseIterable {
    case es256 = -7, es384 = -35, es512 = -36
    case rs256 = -257, rs384 = -258, rs512 = -259
    case ps256 = -37, ps384 = -38, ps512 = -39
    case edDSA = -8
    /// ML-DSA (FIPS 204) at security categories 3 and 5, the post-quantum signatures of the IETF's COSE draft
    /// (draft-ietf-cose-dilithium): key type AKP (7), the public key's bytes in parameter -1 ("pub").
    case mlDSA65 = -49, mlDSA87 = -50

    /// Registered algorithms that this module recognises but cannot verify: Ed448 (swift-crypto has no Ed448),
    /// ML-DSA-44 (neither has swift-crypto), RS1 (SHA-1), and the fully specified RFC 9864 identifiers WebAuthn says
    /// not to offer yet.
    public static let unavailable: Set<Int64> = [-53, -48, -65535, -9, -51, -52, -19]

    /// The COSE key type the algorithm's keys have (kty: 1 OKP, 2 EC2, 3 RSA, 7 AKP).
    var keyType: Int64 {
        switch self {
        case .es256, .es384, .es512: return 2
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512: return 3
        case .edDSA: return 1
        case .mlDSA65, .mlDSA87: return 7
        }
    }

    /// The length of an ML-DSA public key (FIPS 204 Table 2); nil for the other algorithms.
    var mlDSAPublicKeyBytes: Int? {
        switch self {
        case .mlDSA65: return 1952
        case .mlDSA87: return 2592
        default: return nil
        }
    }
}

/// Why a COSE key was refused.
public struct COSEKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why, as a value: compare with the static values (`reason == .malformed`). The cases behind them are
    /// internal, so the module can add one without breaking a caller's `switch`.
    public struct Reason: Sendable, Equatable, CustomStringConvertible {
        enum Kind: Sendable, Equatable {
            case malformed(CBORError)
            case notAMap
            case missingParameter(label: Int64)
            case unknownAlgorithm(Int64)
            case algorithmUnavailable(Int64)
            case keyTypeMismatch(keyType: Int64, algorithm: Int64)
            case curveMismatch(curve: Int64, algorithm: Int64)
            case coordinateLength(label: Int64, length: Int)
            case compressedPoint
            case invalidPoint
            case rsaKeySize(bits: Int)
            case invalidRSAKey
            case privateKeyMaterial
        }

        let kind: Kind
        init(_ kind: Kind) { self.kind = kind }
        /// The reason's name and values, as the case behind it reads (`tooDeep(limit: 16)`), for logs and tests.
        public var description: String { "\(kind)" }

        /// The key is not CBOR, or not one item.
        public static func malformed(_ value: CBORError) -> Self { Self(.malformed(value)) }

        /// The key is not a CBOR map.
        public static let notAMap = Self(.notAMap)

        /// A required label (1 kty, 3 alg, -1, -2, -3) is missing or of the wrong CBOR type.
        public static func missingParameter(label: Int64) -> Self { Self(.missingParameter(label: label)) }

        /// `alg` names no COSE algorithm this module knows.
        public static func unknownAlgorithm(_ value: Int64) -> Self { Self(.unknownAlgorithm(value)) }

        /// `alg` is a registered algorithm this module cannot verify (Ed448 among them).
        public static func algorithmUnavailable(_ value: Int64) -> Self { Self(.algorithmUnavailable(value)) }

        /// `kty` is not the key type `alg` needs.
        public static func keyTypeMismatch(keyType: Int64, algorithm: Int64) -> Self {
            Self(.keyTypeMismatch(keyType: keyType, algorithm: algorithm))
        }

        /// `crv` is not the curve `alg` needs (ES256 P-256, ES384 P-384, ES512 P-521, EdDSA Ed25519).
        public static func curveMismatch(curve: Int64, algorithm: Int64) -> Self { Self(.curveMismatch(curve: curve, algorithm: algorithm)) }

        /// A coordinate of the wrong length for its curve.
        public static func coordinateLength(label: Int64, length: Int) -> Self { Self(.coordinateLength(label: label, length: length)) }

        /// A compressed EC point (`y` as a boolean), which WebAuthn does not allow.
        public static let compressedPoint = Self(.compressedPoint)

        /// The coordinates are not a point on the curve (or not a valid Ed25519 key).
        public static let invalidPoint = Self(.invalidPoint)

        /// An RSA modulus outside 2048…8192 bits, or a key swift-crypto refuses.
        public static func rsaKeySize(bits: Int) -> Self { Self(.rsaKeySize(bits: bits)) }

        public static let invalidRSAKey = Self(.invalidRSAKey)

        /// The key carries private key material (an EC2 or OKP `d`, RSA's private parameters).
        public static let privateKeyMaterial = Self(.privateKeyMaterial)
    }

    public var reason: Reason
    public init(_ reason: Reason) { self.reason = reason }

    public var description: String {
        switch reason.kind {
        case .malformed(let error): return "COSE key: \(error)"
        case .notAMap: return "COSE key: not a CBOR map"
        case .missingParameter(let label): return "COSE key: parameter \(label) is missing or of the wrong type"
        case .unknownAlgorithm(let alg): return "COSE key: unknown algorithm \(alg)"
        case .algorithmUnavailable(let alg):
            let why = [-53: " (Ed448: swift-crypto has none)", -48: " (ML-DSA-44: swift-crypto has none; ML-DSA-65 and -87 are verified)"][alg]
            return "COSE key: algorithm \(alg) cannot be verified here\(why ?? "")"
        case .keyTypeMismatch(let kty, let alg): return "COSE key: key type \(kty) does not fit algorithm \(alg)"
        case .curveMismatch(let crv, let alg): return "COSE key: curve \(crv) does not fit algorithm \(alg)"
        case .coordinateLength(let label, let length): return "COSE key: parameter \(label) has \(length) bytes"
        case .compressedPoint: return "COSE key: compressed points are not allowed"
        case .invalidPoint: return "COSE key: the point is not on the curve"
        case .rsaKeySize(let bits): return "COSE key: an RSA key of \(bits) bits (2048…8192 allowed)"
        case .invalidRSAKey: return "COSE key: not a valid RSA public key"
        case .privateKeyMaterial: return "COSE key: it carries private key material"
        }
    }
}

/// A credential public key in COSE_Key form (RFC 9052 §7, WebAuthn §5.8.5), checked and ready to verify signatures.
///
/// Checked as WebAuthn asks: `alg` is required and decides everything else; the key type and curve must be the ones
/// the algorithm uses; EC points are uncompressed, of their curve's size and on the curve (swift-crypto checks);
/// RSA moduli are 2048 to 8192 bits (the upper bound caps the CPU one registration can cost). Labels this module
/// does not read are ignored, except private key parameters, which no public key may carry.
public struct COSEKey: Sendable {
    public let algorithm: COSEAlgorithm
    /// The key's CBOR bytes as received: what a relying party stores.
    public let encoded: [UInt8]
    private let material: Material

    private enum Material: Sendable {
        case p256(P256.Signing.PublicKey), p384(P384.Signing.PublicKey), p521(P521.Signing.PublicKey)
        case rsa(_RSA.Signing.PublicKey)
        case ed25519(Curve25519.Signing.PublicKey)
        /// An ML-DSA public key, made once when read, behind its verification: on Apple platforms CryptoKit's ML-DSA
        /// types exist only from the 26 releases, so no case may hold them.
        case mlDSA(verify: @Sendable (_ signature: [UInt8], _ data: [UInt8]) -> Bool)
    }

    /// The longest encoded key accepted, in registration and sign-in alike (one rule, so a key that registers can
    /// always be read back): an RSA-8192 key takes about 1,050 bytes; the rest is room for labels a key may carry.
    public static let maximumEncodedBytes = 4096

    /// The key in `bytes`, one CBOR item, read under the well-formed rules (see the module's documentation).
    public init(bytes: [UInt8]) throws(COSEKeyError) {
        let value: CBOR
        do { value = try CBORDecoder(rules: .wellFormed, maximumDepth: 4, maximumBytes: Self.maximumEncodedBytes).decode(bytes) } catch {
            throw COSEKeyError(.malformed(error))
        }
        try self.init(value, encoded: bytes)
    }

    /// The key `value`, decoded from `encoded`.
    init(_ value: CBOR, encoded: [UInt8]) throws(COSEKeyError) {
        guard encoded.count <= Self.maximumEncodedBytes else {
            throw COSEKeyError(.malformed(CBORError(.tooLarge(limit: Self.maximumEncodedBytes), at: 0)))
        }
        guard let map = value.map else { throw COSEKeyError(.notAMap) }
        guard let kty = map[int: 1]?.int else { throw COSEKeyError(.missingParameter(label: 1)) }
        guard let alg = map[int: 3]?.int else { throw COSEKeyError(.missingParameter(label: 3)) }
        guard let algorithm = COSEAlgorithm(rawValue: alg) else {
            throw COSEKeyError(COSEAlgorithm.unavailable.contains(alg) ? .algorithmUnavailable(alg) : .unknownAlgorithm(alg))
        }
        guard kty == algorithm.keyType else { throw COSEKeyError(.keyTypeMismatch(keyType: kty, algorithm: alg)) }
        // A private parameter: EC2 and OKP `d` (-4); RSA d, p, q, dP, dQ, qInv (-3 … -8); AKP `priv` (-2).
        let privateLabels: [Int64] = kty == 3 ? [-3, -4, -5, -6, -7, -8] : kty == 7 ? [-2] : [-4]
        guard !privateLabels.contains(where: { map[int: $0] != nil }) else { throw COSEKeyError(.privateKeyMaterial) }

        self.algorithm = algorithm
        self.encoded = encoded
        switch algorithm {
        case .es256, .es384, .es512:
            guard let crv = map[int: -1]?.int else { throw COSEKeyError(.missingParameter(label: -1)) }
            let (wanted, size): (Int64, Int) = algorithm == .es256 ? (1, 32) : algorithm == .es384 ? (2, 48) : (3, 66)
            guard crv == wanted else { throw COSEKeyError(.curveMismatch(curve: crv, algorithm: alg)) }
            guard let x = map[int: -2]?.bytes else { throw COSEKeyError(.missingParameter(label: -2)) }
            if case .bool? = map[int: -3] { throw COSEKeyError(.compressedPoint) }
            guard let y = map[int: -3]?.bytes else { throw COSEKeyError(.missingParameter(label: -3)) }
            guard x.count == size else { throw COSEKeyError(.coordinateLength(label: -2, length: x.count)) }
            guard y.count == size else { throw COSEKeyError(.coordinateLength(label: -3, length: y.count)) }
            let point = [0x04] + x + y
            do {
                switch algorithm {
                case .es256: material = .p256(try P256.Signing.PublicKey(x963Representation: point))
                case .es384: material = .p384(try P384.Signing.PublicKey(x963Representation: point))
                default: material = .p521(try P521.Signing.PublicKey(x963Representation: point))
                }
            } catch { throw COSEKeyError(.invalidPoint) }
        case .edDSA:
            guard let crv = map[int: -1]?.int else { throw COSEKeyError(.missingParameter(label: -1)) }
            guard crv == 6 else {
                throw COSEKeyError(crv == 7 ? .algorithmUnavailable(-53) : .curveMismatch(curve: crv, algorithm: alg))
            }
            guard let x = map[int: -2]?.bytes else { throw COSEKeyError(.missingParameter(label: -2)) }
            guard x.count == 32 else { throw COSEKeyError(.coordinateLength(label: -2, length: x.count)) }
            do { material = .ed25519(try Curve25519.Signing.PublicKey(rawRepresentation: x)) } catch { throw COSEKeyError(.invalidPoint) }
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512:
            guard let n = map[int: -1]?.bytes else { throw COSEKeyError(.missingParameter(label: -1)) }
            guard let e = map[int: -2]?.bytes else { throw COSEKeyError(.missingParameter(label: -2)) }
            let significant = n.drop { $0 == 0 }
            let bits = significant.first.map { significant.count * 8 - $0.leadingZeroBitCount } ?? 0
            guard (2048...8192).contains(bits) else { throw COSEKeyError(.rsaKeySize(bits: bits)) }
            do { material = .rsa(try _RSA.Signing.PublicKey(n: Array(significant), e: e)) } catch { throw COSEKeyError(.invalidRSAKey) }
        case .mlDSA65, .mlDSA87:
            guard let pub = map[int: -1]?.bytes else { throw COSEKeyError(.missingParameter(label: -1)) }
            guard pub.count == algorithm.mlDSAPublicKeyBytes else { throw COSEKeyError(.coordinateLength(label: -1, length: pub.count)) }
            guard let verify = Self.mlDSAVerifier(pub, algorithm: algorithm) else { throw COSEKeyError(.algorithmUnavailable(alg)) }
            material = .mlDSA(verify: verify)
        }
    }

    /// The verification of an ML-DSA key of `algorithm` made from `bytes` (pure ML-DSA, empty context); nil when
    /// swift-crypto makes no key of them, or the platform has no ML-DSA.
    private static func mlDSAVerifier(_ bytes: [UInt8], algorithm: COSEAlgorithm) -> (@Sendable ([UInt8], [UInt8]) -> Bool)? {
        guard #available(macOS 26, iOS 26, watchOS 26, tvOS 26, visionOS 26, *) else { return nil }
        if algorithm == .mlDSA65 {
            guard let key = try? MLDSA65.PublicKey(rawRepresentation: bytes) else { return nil }
            return { key.isValidSignature($0, for: $1) }
        }
        guard let key = try? MLDSA87.PublicKey(rawRepresentation: bytes) else { return nil }
        return { key.isValidSignature($0, for: $1) }
    }

    /// The COSE_Key of a P-256 public key for ES256, encoded canonically (CTAP2): what an authenticator sends.
    public init(_ key: P256.Signing.PublicKey) {
        let point = Array(key.x963Representation)
        algorithm = .es256
        material = .p256(key)
        encoded = CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.int(1), .int(2)), .init(.int(3), .int(COSEAlgorithm.es256.rawValue)), .init(.int(-1), .int(1)),
                    .init(.int(-2), .bytes(Array(point[1...32]))), .init(.int(-3), .bytes(Array(point[33...]))),
                ])))
    }

    /// The COSE_Key of an Ed25519 public key for EdDSA, encoded canonically (CTAP2).
    public init(_ key: Curve25519.Signing.PublicKey) {
        algorithm = .edDSA
        material = .ed25519(key)
        encoded = CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.int(1), .int(1)), .init(.int(3), .int(COSEAlgorithm.edDSA.rawValue)), .init(.int(-1), .int(6)),
                    .init(.int(-2), .bytes(Array(key.rawRepresentation))),
                ])))
    }

    /// A certificate's key used with `algorithm` (an attestation statement's `alg`): the key must be the kind the
    /// algorithm needs (an ES256 signature from a P-384 key is refused), and an RSA key 2048 to 8192 bits long.
    init(certificateKey key: Certificate.PublicKey, algorithm alg: Int64) throws(COSEKeyError) {
        guard let algorithm = COSEAlgorithm(rawValue: alg) else {
            throw COSEKeyError(COSEAlgorithm.unavailable.contains(alg) ? .algorithmUnavailable(alg) : .unknownAlgorithm(alg))
        }
        self.algorithm = algorithm
        self.encoded = []
        switch algorithm {
        case .es256:
            guard let inner = P256.Signing.PublicKey(key) else { throw COSEKeyError(.keyTypeMismatch(keyType: 2, algorithm: alg)) }
            material = .p256(inner)
        case .es384:
            guard let inner = P384.Signing.PublicKey(key) else { throw COSEKeyError(.keyTypeMismatch(keyType: 2, algorithm: alg)) }
            material = .p384(inner)
        case .es512:
            guard let inner = P521.Signing.PublicKey(key) else { throw COSEKeyError(.keyTypeMismatch(keyType: 2, algorithm: alg)) }
            material = .p521(inner)
        case .edDSA:
            guard let inner = Curve25519.Signing.PublicKey(key) else { throw COSEKeyError(.keyTypeMismatch(keyType: 1, algorithm: alg)) }
            material = .ed25519(inner)
        case .mlDSA65, .mlDSA87:
            // No attestation format signs with ML-DSA, and certificates here have no ML-DSA keys.
            throw COSEKeyError(.algorithmUnavailable(alg))
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512:
            guard let inner = _RSA.Signing.PublicKey(key) else { throw COSEKeyError(.keyTypeMismatch(keyType: 3, algorithm: alg)) }
            guard (2048...8192).contains(inner.keySizeInBits) else { throw COSEKeyError(.rsaKeySize(bits: inner.keySizeInBits)) }
            material = .rsa(inner)
        }
    }

    /// The key as a certificate holds it: to compare with an attestation certificate's subject key; nil for an
    /// ML-DSA key, which no certificate here holds.
    var certificatePublicKey: Certificate.PublicKey? {
        switch material {
        case .p256(let key): return Certificate.PublicKey(key)
        case .p384(let key): return Certificate.PublicKey(key)
        case .p521(let key): return Certificate.PublicKey(key)
        case .rsa(let key): return Certificate.PublicKey(key)
        case .ed25519(let key): return Certificate.PublicKey(key)
        case .mlDSA: return nil
        }
    }

    /// The DER SubjectPublicKeyInfo of the key: the form most libraries and databases store keys in; nil for an
    /// ML-DSA key (swift-certificates writes none).
    public var subjectPublicKeyInfo: [UInt8]? {
        guard let certificatePublicKey else { return nil }
        var serializer = DER.Serializer()
        // Serialising a key swift-crypto accepted cannot fail.
        try! serializer.serialize(certificatePublicKey)
        return serializer.serializedBytes
    }

    /// An EC key's uncompressed point (`0x04 ‖ x ‖ y`), nil for other keys.
    var uncompressedPoint: [UInt8]? {
        switch material {
        case .p256(let key): return Array(key.x963Representation)
        case .p384(let key): return Array(key.x963Representation)
        case .p521(let key): return Array(key.x963Representation)
        default: return nil
        }
    }

    /// Whether `signature` is this key's signature of `data` under its algorithm: ECDSA signatures are ASN.1 DER,
    /// RSA and EdDSA raw (WebAuthn §6.5.5). PSS uses MGF1 with the same hash and a salt of the hash's length.
    public func isValidSignature(_ signature: [UInt8], for data: [UInt8]) -> Bool {
        switch material {
        case .p256(let key):
            guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: data)
        case .p384(let key):
            guard let parsed = try? P384.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: data)
        case .p521(let key):
            guard let parsed = try? P521.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: data)
        case .ed25519(let key):
            return key.isValidSignature(signature, for: data)
        case .mlDSA(let verify):
            // Over authenticatorData ‖ clientDataHash, as for every algorithm.
            return verify(signature, data)
        case .rsa(let key):
            let parsed = _RSA.Signing.RSASignature(rawRepresentation: signature)
            let padding: _RSA.Signing.Padding
            switch algorithm {
            case .ps256, .ps384, .ps512: padding = .PSS
            default: padding = .insecurePKCS1v1_5
            }
            switch algorithm {
            case .rs256, .ps256: return key.isValidSignature(parsed, for: SHA256.hash(data: data), padding: padding)
            case .rs384, .ps384: return key.isValidSignature(parsed, for: SHA384.hash(data: data), padding: padding)
            default: return key.isValidSignature(parsed, for: SHA512.hash(data: data), padding: padding)
            }
        }
    }
}
