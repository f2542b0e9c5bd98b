import CBOR
import Crypto
import FIDOAttestation
import Foundation
import Primitives
import SwiftASN1
import WebAuthn
import X509
import _CryptoExtras

/// A test certificate authority: a P-256 root that issues attestation certificates, valid from 2023 to 2030.
struct TestCA {
    static let start = Date(timeIntervalSince1970: 1_700_000_000)
    static let end = Date(timeIntervalSince1970: 1_900_000_000)
    /// When the tests judge: inside every certificate's validity.
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    let key = P256.Signing.PrivateKey()
    let certificate: Certificate

    init(name: String = "mauth test attestation root") throws {
        let subject = try DistinguishedName {
            CommonName(name)
            OrganizationName("mauth tests")
        }
        let key = self.key
        certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: Self.start, notValidAfter: Self.end,
            issuer: subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: .init(key))
    }

    /// The subject §8.2.1 asks of a packed attestation certificate.
    static func packedSubject(ou: String = "Authenticator Attestation", country: String? = "AA") throws -> DistinguishedName {
        var rdns: [RelativeDistinguishedName] = []
        if let country {
            rdns.append(
                RelativeDistinguishedName(try RelativeDistinguishedName.Attribute(type: .RDNAttributeType.countryName, printableString: country)))
        }
        rdns.append(
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: .RDNAttributeType.organizationName, utf8String: "mauth tests")))
        rdns.append(RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: .RDNAttributeType.organizationalUnitName, utf8String: ou)))
        rdns.append(
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: .RDNAttributeType.commonName, utf8String: "mauth test authenticator"))
        )
        return DistinguishedName(rdns)
    }

    /// A certificate for `publicKey`, DER.
    func issue(
        _ publicKey: Certificate.PublicKey, subject: DistinguishedName, notValidBefore: Date = start, notValidAfter: Date = end,
        @ExtensionsBuilder extensions: () throws -> Result<Certificate.Extensions, any Error>
    ) throws -> [UInt8] {
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: publicKey, notValidBefore: notValidBefore, notValidAfter: notValidAfter,
            issuer: self.certificate.subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions(builder: extensions), issuerPrivateKey: .init(key))
        return Self.der(certificate)
    }

    static func der(_ certificate: Certificate) -> [UInt8] {
        var serializer = DER.Serializer()
        try! serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    /// The AAGUID extension (id-fido-gen-ce-aaguid) for `aaguid`.
    static func aaguidExtension(_ aaguid: [UInt8], critical: Bool = false) throws -> Certificate.Extension {
        var serializer = DER.Serializer()
        try serializer.serialize(ASN1OctetString(contentBytes: ArraySlice(aaguid)))
        return Certificate.Extension(oid: [1, 3, 6, 1, 4, 1, 45724, 1, 1, 4], critical: critical, value: ArraySlice(serializer.serializedBytes))
    }
}

/// A registration as an authenticator and a browser would make it, every field open to change, so each test changes
/// one field of a valid message.
struct TestRegistration {
    var challenge = [UInt8](repeating: 0x11, count: 32)
    var type = "webauthn.create"
    var origin = "https://example.org"
    var crossOrigin = false
    var topOrigin: String?
    var rpID = "example.org"
    /// UP, UV and AT.
    var flags: UInt8 = 0x45
    var signCount: UInt32 = 0
    var aaguid = [UInt8](repeating: 0xAA, count: 16)
    var credentialID = [UInt8](repeating: 0xC1, count: 16)
    var credentialKey = P256.Signing.PrivateKey()
    /// A COSE key to send instead of the credential key's.
    var coseKey: [UInt8]?
    var trailing: [UInt8] = []

    var cose: [UInt8] { coseKey ?? COSEKey(credentialKey.publicKey).encoded }

    var clientDataJSON: [UInt8] {
        let top = topOrigin.map { #","topOrigin":"\#($0)""# } ?? ""
        return Array(
            #"{"type":"\#(type)","challenge":"\#(Base64URL.encode(challenge))","origin":"\#(origin)","crossOrigin":\#(crossOrigin)\#(top)}"#.utf8)
    }

    var clientDataHash: [UInt8] { Array(SHA256.hash(data: clientDataJSON)) }

    var authenticatorData: [UInt8] {
        var data = Array(SHA256.hash(data: Array(rpID.utf8))) + [flags]
        data += withUnsafeBytes(of: signCount.bigEndian) { Array($0) }
        if flags & 0x40 != 0 {
            data += aaguid + [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xff)] + credentialID + cose
        }
        return data + trailing
    }

    /// What most formats sign.
    var signedData: [UInt8] { authenticatorData + clientDataHash }

    func object(_ format: String, _ statement: CBOR, authenticatorData: [UInt8]? = nil) -> [UInt8] {
        CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.text("fmt"), .text(format)), .init(.text("attStmt"), statement),
                    .init(.text("authData"), .bytes(authenticatorData ?? self.authenticatorData)),
                ])))
    }

    func response(_ format: String, _ statement: CBOR) -> RegistrationResponse {
        RegistrationResponse(credentialID: credentialID, clientDataJSON: clientDataJSON, attestationObject: object(format, statement))
    }

    var expectation: RegistrationExpectation { RegistrationExpectation(challenge: challenge, userVerification: .preferred) }

    /// A packed self attestation of this registration.
    var packedSelf: CBOR {
        statement(["alg": .int(-7), "sig": .bytes(Array(try! credentialKey.signature(for: signedData).derRepresentation))])
    }
}

/// A statement map from text keys (its order does not matter: the encoder writes canonical order).
func statement(_ members: [String: CBOR]) -> CBOR {
    .map(CBORMap(members.map { CBORMap.Entry(.text($0.key), $0.value) }))
}

func der(_ signature: P256.Signing.ECDSASignature) -> CBOR { .bytes(Array(signature.derRepresentation)) }

/// Every check passed by these tests is judged against this relying party.
let exampleRelyingParty = RelyingParty(id: "example.org", origins: ["https://example.org"])

/// A lenient policy: no trust, no user verification, every type; tests of the policy change one field of it.
let lenientPolicy = AttestationPolicy(requireTrustedAttestation: false, allowsAuthenticatorsWithoutMetadata: true, requiresUserVerification: false)

/// The ceremony's refusal, or nil when it verified.
func refusal(
    _ response: RegistrationResponse, _ expectation: RegistrationExpectation, policy: AttestationPolicy = lenientPolicy,
    trust: AttestationTrust = AttestationTrust(), relyingParty: RelyingParty = exampleRelyingParty, now: Date = TestCA.now
) async -> WebAuthnError? {
    do {
        _ = try await RegistrationCeremony(relyingParty: relyingParty, policy: policy, trust: trust).verify(response, expected: expectation, now: now)
        return nil
    } catch { return error }
}

/// The format's refusal reason (§7.1 step 22), or nil.
func statementRefusal(
    _ response: RegistrationResponse, _ expectation: RegistrationExpectation, now: Date = TestCA.now
) async -> AttestationStatementError.Reason? {
    await refusal(response, expectation, now: now)?.attestationStatementError?.reason
}

func verified(
    _ response: RegistrationResponse, _ expectation: RegistrationExpectation, policy: AttestationPolicy = lenientPolicy,
    trust: AttestationTrust = AttestationTrust(), now: Date = TestCA.now
) async throws -> VerifiedRegistration {
    try await RegistrationCeremony(relyingParty: exampleRelyingParty, policy: policy, trust: trust).verify(response, expected: expectation, now: now)
}
