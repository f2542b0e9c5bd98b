import Crypto
import Foundation
import Primitives
import WireJSON
import X509

/// `android-safetynet` (WebAuthn §8.5; deprecated by Google, still sent by older Android devices): a JWS from
/// Google Play Services whose nonce binds it to this registration.
enum SafetyNetAttestation {
    /// How old a response may be, and how far ahead of our clock, when judged (the FIDO conformance tools allow a
    /// minute of age; ten seconds ahead covers clock skew without accepting a response made for later).
    static let maximumAge: TimeInterval = 60
    static let maximumSkew: TimeInterval = 10
    /// The host Google's attestation certificate is issued to.
    static let hostname = "attest.android.com"

    private struct Header: Decodable {
        var alg: String
        var x5c: [String]
    }

    private struct Payload: Decodable {
        var nonce: String
        var timestampMs: Int64
        var ctsProfileMatch: Bool
    }

    static func verify(_ input: AttestationInput) throws(AttestationStatementError) -> VerifiedAttestation {
        let members = try StatementMembers("android-safetynet", input.statement)
        try members.only(["ver", "response"])
        _ = try members.text("ver")
        let response = try members.bytes("response")
        func fail(_ detail: String) -> AttestationStatementError { members.fail(.safetyNet(detail)) }

        let parts = response.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decodeBytes(String(decoding: parts[0], as: UTF8.self)),
            let payloadBytes = Base64URL.decodeBytes(String(decoding: parts[1], as: UTF8.self)),
            let signature = Base64URL.decodeBytes(String(decoding: parts[2], as: UTF8.self))
        else {
            throw fail("the response is not a compact JWS")
        }
        guard let header = try? WireJSONDecoder().decode(Header.self, from: headerBytes) else { throw fail("the JWS header has no alg and x5c") }
        guard let payload = try? WireJSONDecoder().decode(Payload.self, from: payloadBytes) else {
            throw fail("the JWS payload has no nonce, timestampMs and ctsProfileMatch")
        }
        guard !header.x5c.isEmpty else { throw fail("the JWS header's x5c is empty") }
        guard header.x5c.count <= StatementMembers.maximumCertificates else {
            throw members.fail(.memberUnexpected("x5c with \(header.x5c.count) certificates (\(StatementMembers.maximumCertificates) at most)"))
        }
        var certificates: [Certificate] = []
        var der: [[UInt8]] = []
        for (index, text) in header.x5c.enumerated() {
            guard let bytes = Data(base64Encoded: text).map(Array.init), let certificate = try? Certificate(derEncoded: bytes) else {
                throw members.fail(.certificateUnreadable(index: index))
            }
            certificates.append(certificate)
            der.append(bytes)
        }
        // Step 1: the nonce is base64(SHA-256(authData ‖ clientDataHash)), standard alphabet.
        guard payload.nonce == Data(SHA256.hash(data: input.signedData)).base64EncodedString() else { throw members.fail(.nonceMismatch) }
        // Step 2: the leaf signed the JWS.
        let signingInput = Array(response[..<parts[1].endIndex])
        guard verifySignature(signature, of: signingInput, alg: header.alg, leaf: certificates[0]) else { throw members.fail(.signatureInvalid) }
        // Step 3: the leaf is Google's attestation certificate.
        guard names(of: certificates[0]).contains(hostname) else { throw members.fail(.certificateRequirement("is not issued to \(hostname)")) }
        // Step 4: the device passed Google's compatibility check, and the response is fresh.
        guard payload.ctsProfileMatch else { throw fail("ctsProfileMatch is false") }
        let issued = Date(timeIntervalSince1970: TimeInterval(payload.timestampMs) / 1000)
        guard issued <= input.now.addingTimeInterval(maximumSkew) else { throw fail("timestampMs is in the future") }
        guard issued >= input.now.addingTimeInterval(-maximumAge) else { throw fail("timestampMs is more than a minute old") }
        return VerifiedAttestation(format: "android-safetynet", type: .basic, certificates: certificates, trustPath: der)
    }

    /// RS256 in practice; ES256 JWS signatures are r ‖ s, which this reads into DER for the key.
    static func verifySignature(_ signature: [UInt8], of data: [UInt8], alg: String, leaf: Certificate) -> Bool {
        let algorithms: [String: COSEAlgorithm] = ["RS256": .rs256, "RS384": .rs384, "RS512": .rs512, "ES256": .es256, "PS256": .ps256]
        guard let algorithm = algorithms[alg], let key = try? COSEKey(certificateKey: leaf.publicKey, algorithm: algorithm.rawValue) else {
            return false
        }
        if algorithm == .es256 {
            guard let raw = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(Array(raw.derRepresentation), for: data)
        }
        return key.isValidSignature(signature, for: data)
    }

    /// The DNS names and common names of `certificate`.
    static func names(of certificate: Certificate) -> [String] {
        var names: [String] = []
        if let alternatives = try? certificate.extensions.subjectAlternativeNames {
            for case .dnsName(let name) in alternatives { names.append(name) }
        }
        for rdn in certificate.subject {
            for attribute in rdn where attribute.type == .RDNAttributeType.commonName { if let name = String(attribute.value) { names.append(name) } }
        }
        return names
    }
}
