import Crypto
import SwiftASN1
import X509
import _CryptoExtras

/// `tpm` (WebAuthn §8.3): a TPM's attestation identity key (AIK) certifies the credential key's public area.
enum TPMAttestation {
    static let magic: UInt32 = 0xff54_4347  // TPM_GENERATED_VALUE
    static let attestCertify: UInt16 = 0x8017  // TPM_ST_ATTEST_CERTIFY
    /// tcg-kp-AIKCertificate, the AIK certificate's extended key usage.
    static let aikUsage: ASN1ObjectIdentifier = [2, 23, 133, 8, 3]
    static let tpmManufacturer: ASN1ObjectIdentifier = [2, 23, 133, 2, 1]
    static let tpmModel: ASN1ObjectIdentifier = [2, 23, 133, 2, 2]
    static let tpmVersion: ASN1ObjectIdentifier = [2, 23, 133, 2, 3]

    static func verify(_ input: AttestationInput) throws(AttestationStatementError) -> VerifiedAttestation {
        let members = try StatementMembers("tpm", input.statement)
        try members.only(["ver", "alg", "x5c", "sig", "certInfo", "pubArea", "ecdaaKeyId"])
        guard members.map[text: "ecdaaKeyId"] == nil else { throw members.fail(.memberUnexpected("ecdaaKeyId (ECDAA was removed in Level 3)")) }
        guard try members.text("ver") == "2.0" else { throw members.fail(.tpm("ver is not \"2.0\"")) }
        let alg = try members.int("alg")
        let sig = try members.bytes("sig")
        let certInfoBytes = try members.bytes("certInfo")
        let pubAreaBytes = try members.bytes("pubArea")
        let (certificates, der) = try members.certificates()
        let aik = certificates[0]

        // Both structures are parsed first (a malformed one is refused as such), then checked in the steps' order.
        let pubArea = try PublicArea(pubAreaBytes)
        let certInfo = try CertifyInfo(certInfoBytes)
        // Step 1: pubArea describes the credential key.
        guard pubArea.matches(input.credential.publicKey) else { throw members.fail(.credentialKeyMismatch) }
        // Step 2 (the AIK certificate's rules) after the signature: an unsigned certInfo says nothing.
        let key = try members.signingKey(aik, algorithm: alg)
        guard key.isValidSignature(sig, for: certInfoBytes) else { throw members.fail(.signatureInvalid) }
        let namesModel = try checkCertificate(aik, aaguid: input.credential.aaguid)
        // Steps 3–6: certInfo is a TPM-generated certification of exactly this pubArea, over this registration.
        guard certInfo.magic == magic else { throw members.fail(.tpm("certInfo.magic is not TPM_GENERATED_VALUE")) }
        guard certInfo.type == attestCertify else { throw members.fail(.tpm("certInfo.type is not TPM_ST_ATTEST_CERTIFY")) }
        guard let extraData = digest(input.signedData, for: key.algorithm) else { throw members.fail(.algorithmUnavailable(alg)) }
        guard certInfo.extraData == extraData else { throw members.fail(.nonceMismatch) }
        guard let name = pubArea.name(of: pubAreaBytes), certInfo.attestedName == name else {
            throw members.fail(.tpm("certInfo.attested.name is not the name of pubArea"))
        }
        // qualifiedSigner, clockInfo and firmwareVersion are ignored, as §8.3 says (the W3C vector's clockInfo.safe is 0x33).
        return VerifiedAttestation(
            format: "tpm", type: .attCA, certificates: certificates, trustPath: der,
            modelBinding: namesModel ? .certificate : .attestationKey)
    }

    /// H_alg of `data`, the hash of the statement's algorithm; nil for EdDSA and ML-DSA, which no TPM signs with.
    static func digest(_ data: [UInt8], for algorithm: COSEAlgorithm) -> [UInt8]? {
        switch algorithm {
        case .es256, .rs256, .ps256: return Array(SHA256.hash(data: data))
        case .es384, .rs384, .ps384: return Array(SHA384.hash(data: data))
        case .es512, .rs512, .ps512: return Array(SHA512.hash(data: data))
        case .edDSA, .mlDSA65, .mlDSA87: return nil
        }
    }

    /// The AIK certificate's rules (§8.3.1); true when it names the model (its AAGUID extension).
    @discardableResult
    static func checkCertificate(_ certificate: Certificate, aaguid: [UInt8]) throws(AttestationStatementError) -> Bool {
        func fail(_ rule: String) -> AttestationStatementError { AttestationStatementError("tpm", .certificateRequirement(rule)) }
        try AttestationCertificateRules.checkVersion3(certificate, format: "tpm")
        guard certificate.subject.isEmpty else { throw fail("has a subject (an AIK certificate's is empty)") }
        guard let sanExtension = certificate.extensions[oid: .X509ExtensionID.subjectAlternativeName], sanExtension.critical,
            let names = try? SubjectAlternativeNames(sanExtension)
        else {
            throw fail("has no critical subject alternative name")
        }
        var found: Set<ASN1ObjectIdentifier> = []
        for case .directoryName(let directory) in names {
            for rdn in directory { for attribute in rdn { found.insert(attribute.type) } }
        }
        guard found.isSuperset(of: [tpmManufacturer, tpmModel, tpmVersion]) else {
            throw fail("names no TPM manufacturer, model and version in its subject alternative name")
        }
        guard let usage = try? certificate.extensions.extendedKeyUsage, usage.contains(ExtendedKeyUsage.Usage(oid: aikUsage)) else {
            throw fail("has no extended key usage tcg-kp-AIKCertificate (2.23.133.8.3)")
        }
        try AttestationCertificateRules.checkNotCA(certificate, format: "tpm")
        return try AttestationCertificateRules.checkAAGUID(certificate, aaguid, format: "tpm")
    }

    /// Big-endian reads of a TPM structure; every read past the end is the structure's error.
    struct Reader {
        let bytes: [UInt8]
        let structure: String
        var position = 0

        init(_ bytes: [UInt8], _ structure: String) {
            self.bytes = bytes
            self.structure = structure
        }

        func fail(_ detail: String) -> AttestationStatementError { AttestationStatementError("tpm", .tpm("\(structure) \(detail)")) }

        mutating func take(_ count: Int, _ field: String) throws(AttestationStatementError) -> [UInt8] {
            guard count <= bytes.count - position else { throw fail("is cut short at \(field)") }
            defer { position += count }
            return Array(bytes[position..<(position + count)])
        }

        mutating func u16(_ field: String) throws(AttestationStatementError) -> UInt16 {
            try take(2, field).reduce(0) { $0 << 8 | UInt16($1) }
        }

        mutating func u32(_ field: String) throws(AttestationStatementError) -> UInt32 {
            try take(4, field).reduce(0) { $0 << 8 | UInt32($1) }
        }

        /// A TPM2B: a 16-bit size, then that many bytes.
        mutating func sized(_ field: String) throws(AttestationStatementError) -> [UInt8] {
            try take(Int(try u16(field)), field)
        }

        func end() throws(AttestationStatementError) {
            guard position == bytes.count else { throw fail("has \(bytes.count - position) bytes after its last field") }
        }
    }

    /// TPMT_PUBLIC: the credential key as the TPM describes it.
    struct PublicArea {
        enum Key { case rsa(modulus: [UInt8], exponent: UInt32), ecc(curve: UInt16, x: [UInt8], y: [UInt8]) }
        let nameAlg: UInt16
        let key: Key

        init(_ bytes: [UInt8]) throws(AttestationStatementError) {
            var reader = Reader(bytes, "pubArea")
            let type = try reader.u16("type")
            nameAlg = try reader.u16("nameAlg")
            _ = try reader.u32("objectAttributes")
            _ = try reader.sized("authPolicy")
            // TPMT_SYM_DEF_OBJECT: an algorithm, then key bits and mode unless it is TPM_ALG_NULL.
            if try reader.u16("symmetric") != 0x0010 { _ = try reader.take(4, "symmetric") }
            // The scheme, with its hash unless it is TPM_ALG_NULL; neither changes the key.
            if try reader.u16("scheme") != 0x0010 { _ = try reader.u16("scheme.hashAlg") }
            switch type {
            case 0x0001:
                _ = try reader.u16("keyBits")
                let exponent = try reader.u32("exponent")
                key = .rsa(modulus: try reader.sized("unique"), exponent: exponent == 0 ? 65537 : exponent)
            case 0x0023:
                let curve = try reader.u16("curveID")
                if try reader.u16("kdf") != 0x0010 { _ = try reader.u16("kdf") }
                let x = try reader.sized("unique.x")
                key = .ecc(curve: curve, x: x, y: try reader.sized("unique.y"))
            default:
                throw reader.fail("has key type 0x\(String(type, radix: 16)) (RSA or ECC only)")
            }
            try reader.end()
        }

        /// Whether this is the credential's key.
        func matches(_ credential: COSEKey) -> Bool {
            switch key {
            case .ecc(let curve, let x, let y):
                let wanted: [COSEAlgorithm: UInt16] = [.es256: 0x0003, .es384: 0x0004, .es512: 0x0005]
                return wanted[credential.algorithm] == curve && credential.uncompressedPoint == [0x04] + x + y
            case .rsa(let modulus, let exponent):
                var e = withUnsafeBytes(of: exponent.bigEndian) { Array($0) }
                while e.first == 0 { e.removeFirst() }
                guard let key = try? _RSA.Signing.PublicKey(n: Array(modulus.drop { $0 == 0 }), e: e) else { return false }
                return Certificate.PublicKey(key) == credential.certificatePublicKey
            }
        }

        /// The TPM name of the object: nameAlg ‖ H_nameAlg(pubArea); nil for a name algorithm not offered here.
        func name(of bytes: [UInt8]) -> [UInt8]? {
            let prefix = [UInt8(nameAlg >> 8), UInt8(nameAlg & 0xff)]
            switch nameAlg {
            case 0x0004: return prefix + Insecure.SHA1.hash(data: bytes)
            case 0x000B: return prefix + SHA256.hash(data: bytes)
            case 0x000C: return prefix + SHA384.hash(data: bytes)
            case 0x000D: return prefix + SHA512.hash(data: bytes)
            default: return nil
            }
        }
    }

    /// TPMS_ATTEST holding a TPMS_CERTIFY_INFO.
    struct CertifyInfo {
        let magic: UInt32
        let type: UInt16
        let extraData: [UInt8]
        let attestedName: [UInt8]

        init(_ bytes: [UInt8]) throws(AttestationStatementError) {
            var reader = Reader(bytes, "certInfo")
            magic = try reader.u32("magic")
            type = try reader.u16("type")
            _ = try reader.sized("qualifiedSigner")
            extraData = try reader.sized("extraData")
            _ = try reader.take(17, "clockInfo")
            _ = try reader.take(8, "firmwareVersion")
            attestedName = try reader.sized("attested.name")
            _ = try reader.sized("attested.qualifiedName")
            try reader.end()
        }
    }
}
