import Crypto
import Foundation
import Primitives
import SwiftASN1
import X509
import _CryptoExtras

/// A FIDO Metadata Service of the tests' own: a root, an intermediate and a signing certificate (the shape of the
/// public service's chain), and BLOBs signed as MDS3 §3.2 describes, built here with the certificate and crypto
/// libraries directly, never with the JWT library the server verifies them with.
public struct TestMetadataService: Sendable {
    public enum Algorithm: Sendable { case es256, rs256 }

    struct Authority: Sendable {
        let key: Certificate.PrivateKey
        let certificate: Certificate
        /// The key as PEM (PKCS#8), for an independent tool that signs as this authority.
        var keyPEM: String = ""
    }

    let root: Authority
    let intermediate: Authority
    let signer: Authority
    let algorithm: Algorithm
    let ecKey: P256.Signing.PrivateKey?
    let rsaKey: _RSA.Signing.PrivateKey?

    /// A chain valid from an hour ago; the signing certificate ends at `signerNotAfter`.
    public init(
        rootName: String = "Test MDS Root", algorithm: Algorithm = .es256, signerNotAfter: Date = Date().addingTimeInterval(365 * 86400)
    ) throws {
        func authority(
            _ name: String, key: Certificate.PrivateKey, publicKey: Certificate.PublicKey, issuer: Authority?, isCA: Bool,
            notAfter: Date
        ) throws -> Authority {
            let subject = try DistinguishedName { CommonName(name) }
            let certificate = try Certificate(
                version: .v3, serialNumber: Self.serialNumber(), publicKey: publicKey,
                notValidBefore: Date().addingTimeInterval(-3600), notValidAfter: notAfter,
                issuer: issuer?.certificate.subject ?? subject, subject: subject,
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try .init {
                    if isCA {
                        Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                        Critical(KeyUsage(keyCertSign: true))
                    } else {
                        Critical(BasicConstraints.notCertificateAuthority)
                        Critical(KeyUsage(digitalSignature: true))
                    }
                }, issuerPrivateKey: issuer?.key ?? key)
            return Authority(key: key, certificate: certificate)
        }
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        let farFuture = Date().addingTimeInterval(10 * 365 * 86400)
        root = try authority(rootName, key: .init(rootKey), publicKey: .init(rootKey.publicKey), issuer: nil, isCA: true, notAfter: farFuture)
        var intermediate = try authority(
            "\(rootName) Intermediate", key: .init(intermediateKey), publicKey: .init(intermediateKey.publicKey),
            issuer: root, isCA: true, notAfter: farFuture)
        intermediate.keyPEM = intermediateKey.pemRepresentation
        self.intermediate = intermediate
        self.algorithm = algorithm
        switch algorithm {
        case .es256:
            let key = P256.Signing.PrivateKey()
            ecKey = key
            rsaKey = nil
            signer = try authority(
                "mds.test", key: .init(key), publicKey: .init(key.publicKey), issuer: intermediate, isCA: false, notAfter: signerNotAfter)
        case .rs256:
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            ecKey = nil
            rsaKey = key
            signer = try authority(
                "mds.test", key: .init(key), publicKey: .init(key.publicKey), issuer: intermediate, isCA: false, notAfter: signerNotAfter)
        }
    }

    /// A random positive serial number of at most 159 bits, as RFC 5280 allows and every CRL writer accepts.
    static func serialNumber() -> Certificate.SerialNumber {
        var bytes = SecureRandom.bytes(20)
        bytes[0] = bytes[0] & 0x7F | 0x01
        return Certificate.SerialNumber(bytes: bytes)
    }

    /// The root as PEM: what `metadataService.rootCertificatesPath` names.
    public var rootPEM: String { get throws { try root.certificate.serializeAsPEM().pemString } }
    /// The intermediate CA's certificate and key as PEM: what an independent tool needs to write its revocation list.
    public var intermediatePEM: (certificate: String, key: String) {
        get throws { (try intermediate.certificate.serializeAsPEM().pemString, intermediate.keyPEM) }
    }
    /// The signing certificate's serial number, as hex.
    public var signerSerialHex: String { signer.certificate.serialNumber.bytes.map { String(format: "%02x", $0) }.joined() }

    static func base64DER(_ certificate: Certificate) throws -> String {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return Data(serializer.serializedBytes).base64EncodedString()
    }

    /// A signed BLOB (compact JWS) with `entries` (each a JSON object's text). `header` may replace the protected
    /// header (to leave out `x5c` or name another algorithm); `signature` may replace the signature.
    public func blob(number: Int, nextUpdate: String, entries: [String], header: String? = nil, signature: String? = nil) throws -> String {
        let x5c = try [signer.certificate, intermediate.certificate].map { "\"\(try Self.base64DER($0))\"" }.joined(separator: ",")
        let alg = algorithm == .es256 ? "ES256" : "RS256"
        let protected = header ?? #"{"alg":"\#(alg)","typ":"JWT","x5c":[\#(x5c)]}"#
        let payload = #"{"legalHeader":"test BLOB","no":\#(number),"nextUpdate":"\#(nextUpdate)","entries":[\#(entries.joined(separator: ","))]}"#
        let input = Base64URL.encode(Data(protected.utf8)) + "." + Base64URL.encode(Data(payload.utf8))
        return try input + "." + (signature ?? sign(Data(input.utf8)))
    }

    func sign(_ input: Data) throws -> String {
        if let ecKey { return Base64URL.encode(try ecKey.signature(for: input).rawRepresentation) }
        return Base64URL.encode(try rsaKey!.signature(for: input, padding: .insecurePKCS1v1_5).rawRepresentation)
    }

    /// A UAF entry: the AAID, an optional statement (JSON text) and status reports (status, optional
    /// `YYYY-MM-DD` effective date, optional base64 certificate).
    public static func entry(
        aaid: String, statement: String? = nil, reports: [(status: String, effectiveDate: String?)] = [("FIDO_CERTIFIED", nil)]
    ) -> String {
        let list = reports.map { report in
            #"{"status":"\#(report.status)""# + (report.effectiveDate.map { #","effectiveDate":"\#($0)""# } ?? "") + "}"
        }.joined(separator: ",")
        return
            #"{"aaid":"\#(aaid)",\#(statement.map { #""metadataStatement":\#($0),"# } ?? "")"statusReports":[\#(list)],"timeOfLastStatusChange":"2026-01-01"}"#
    }

    /// A FIDO2 entry (an AAGUID, no AAID): kept by AAGUID, beside the UAF statements.
    public static let fido2Entry =
        #"{"aaguid":"0132d110-bf4e-4208-a403-ab4f5f12efe5","metadataStatement":{"aaguid":"0132d110-bf4e-4208-a403-ab4f5f12efe5","description":"A FIDO2 key","protocolFamily":"fido2","authenticationAlgorithms":["secp256r1_ecdsa_sha256_raw"]},"statusReports":[{"status":"FIDO_CERTIFIED"}],"timeOfLastStatusChange":"2026-01-01"}"#

    /// An MDS3 statement for a PIN authenticator like the virtual device's (ECDSA DER keys, surrogate attestation).
    public static func pinStatement(aaid: String, algorithm: String = "secp256r1_ecdsa_sha256_der") -> String {
        #"""
        {"aaid":"\#(aaid)","description":"Test PIN authenticator \#(aaid)","authenticatorVersion":1,"protocolFamily":"uaf","schema":3,\#
        "upv":[{"major":1,"minor":1}],"authenticationAlgorithms":["\#(algorithm)"],"publicKeyAlgAndEncodings":["ecc_x962_der"],\#
        "attestationTypes":["basic_surrogate"],"userVerificationDetails":[[{"userVerificationMethod":"passcode_internal"}]],\#
        "keyProtection":["software"],"matcherProtection":["software"],"attachmentHint":["internal"],"tcDisplay":["any"],\#
        "tcDisplayContentType":"text/plain","attestationRootCertificates":[]}
        """#
    }

    /// Today (UTC) moved by `days`, as `YYYY-MM-DD`.
    public static func day(_ days: Int, from now: Date = Date()) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.formatOptions = [.withFullDate]
        return formatter.string(from: now.addingTimeInterval(TimeInterval(days) * 86400))
    }
}
