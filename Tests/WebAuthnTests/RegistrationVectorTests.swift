import CBOR
import Crypto
import FIDOAttestation
import Foundation
import WebAuthn
import X509
import XCTest

/// The registration half of the W3C vectors (§16): every registration verifies through the whole §7.1 ceremony to
/// the format, attestation type and trust path the vector states, with `attestation-ca.json` as the only root, and the
/// credential it yields verifies the same file's assertion through §7.2.
final class RegistrationVectorTests: XCTestCase {
    typealias Vector = WebAuthnVectorTests.Vector

    /// The vectors' attestation root (`attestation-ca.json`).
    static func attestationCA() throws -> Certificate {
        let url = try XCTUnwrap(Bundle.module.url(forResource: "Vectors/attestation-ca", withExtension: "json"))
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let base64 = try XCTUnwrap((json["derived"] as? [String: Any])?["attestation_ca_cert_base64"] as? String)
        return try Certificate(derEncoded: Array(try XCTUnwrap(Data(base64Encoded: base64))))
    }

    /// The relying party each vector needs: example.org, and for the two framed vectors a configured top origin.
    static func relyingParty(_ vector: Vector, framed: Bool = true) -> RelyingParty {
        let top: Set<String> = framed && vector.name.contains("Origin") ? ["https://example.com"] : []
        return RelyingParty(id: "example.org", origins: ["https://example.org"], topOrigins: top)
    }

    /// The attested formats need their chain to reach the vectors' CA; `none` and self need a policy that takes them.
    static func ceremony(_ vector: Vector, policy: AttestationPolicy? = nil) throws -> RegistrationCeremony {
        let attested = !(vector.name.hasPrefix("none") || vector.name == "packed-self-es256")
        let chosen =
            policy
            ?? AttestationPolicy(requireTrustedAttestation: attested, allowsAuthenticatorsWithoutMetadata: true, requiresUserVerification: false)
        return RegistrationCeremony(relyingParty: relyingParty(vector), policy: chosen, trust: AttestationTrust(roots: [try attestationCA()]))
    }

    /// The vector's registration. The `fido-u2f` vector's authenticator data names a random AAGUID, which the U2F
    /// signature does not cover and this server refuses (a U2F key claiming a model); it is zeroed here, as a client
    /// writes a U2F authenticator's, and the statement still verifies, for the AAGUID was never signed.
    /// ``testTheU2FVectorAsWrittenIsRefusedForItsAAGUID`` keeps the vector as written.
    static func response(_ vector: Vector, asWritten: Bool = false) throws -> RegistrationResponse {
        var attestationObject: [UInt8] = try vector.given("registration", "attestationObject")
        if vector.name.hasPrefix("fido-u2f"), !asWritten { attestationObject = try zeroingAAGUID(attestationObject) }
        return RegistrationResponse(
            credentialID: try vector.given("registration", "credential_id"),
            clientDataJSON: try vector.given("registration", "clientDataJSON"), attestationObject: attestationObject)
    }

    /// `object` with the AAGUID of its authenticator data (bytes 37 to 52) all zero.
    static func zeroingAAGUID(_ object: [UInt8]) throws -> [UInt8] {
        var map = try XCTUnwrap(try CBORDecoder(rules: .wellFormed).decode(object).map)
        let index = try XCTUnwrap(map.entries.firstIndex { $0.key == .text("authData") })
        var data = try XCTUnwrap(map.entries[index].value.bytes)
        data.replaceSubrange(37..<53, with: AAGUID.zero)
        map.entries[index] = .init(.text("authData"), .bytes(data))
        return CBOREncoder.encode(.map(map))
    }

    static func expectation(_ vector: Vector) throws -> RegistrationExpectation {
        RegistrationExpectation(challenge: try vector.given("registration", "challenge"), algorithms: COSEAlgorithm.allCases)
    }

    /// The moment the vectors are judged at: inside every certificate's validity (2024 to 3024).
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    /// The ceremony's refusal, or nil when it verified.
    static func refusal(
        _ ceremony: RegistrationCeremony, _ response: RegistrationResponse, _ expectation: RegistrationExpectation,
        now: Date = now
    ) async -> WebAuthnError? {
        do {
            _ = try await ceremony.verify(response, expected: expectation, now: now)
            return nil
        } catch { return error }
    }

    static func expected(_ vector: Vector) throws -> [String: Any] {
        try XCTUnwrap((vector.json["expected"] as? [String: Any])?["registration"] as? [String: Any])
    }

    func testEveryRegistrationVerifiesToTheFormatTypeAndTrustPathItStates() async throws {
        var verified = 0
        for vector in try WebAuthnVectorTests.vectors() where vector.name != "packed-ed448" {
            let expected = try Self.expected(vector)
            let result = try await Self.ceremony(vector).verify(try Self.response(vector), expected: try Self.expectation(vector), now: Self.now)
            XCTAssertEqual(result.attestation.format, expected["attestationFormat"] as? String, vector.name)
            let type = try XCTUnwrap(expected["attestationType"] as? String)
            let wanted: AttestationType =
                type.hasPrefix("Basic or AttCA")
                ? .basic
                : try XCTUnwrap(
                    ["None": .none, "Self": .self, "Basic": .basic, "AttCA": .attCA, "AnonCA": .anonCA][type], vector.name)
            XCTAssertEqual(result.attestation.type, wanted, vector.name)
            let chained = (expected["trustPath"] as? String)?.contains("chains to attestation-ca.json") == true
            XCTAssertEqual(result.attestation.trustPath.count, chained ? 1 : 0, vector.name)
            XCTAssertEqual(result.trustAnchor, chained ? try Self.attestationCA() : nil, vector.name)
            XCTAssertEqual(result.userVerified, expected["userVerified"] as? Bool, vector.name)
            XCTAssertEqual(result.backupEligible, expected["backupEligible"] as? Bool, vector.name)
            XCTAssertEqual(result.backupState, expected["backupState"] as? Bool, vector.name)
            XCTAssertEqual(Int(result.signCount), expected["signCount"] as? Int, vector.name)
            XCTAssertEqual(result.credentialID, try vector.given("registration", "credential_id"), vector.name)
            XCTAssertEqual(result.aaguid, vector.name.hasPrefix("fido-u2f") ? AAGUID.zero : try vector.given("registration", "aaguid"), vector.name)
            let derived = try vector.derived("registration")
            XCTAssertEqual(result.publicKey.encoded, Vector.bytes(try XCTUnwrap(derived["credentialPublicKey_cose_hex"] as? String)), vector.name)
            if let spki = derived["credentialPublicKey_spki_der_hex"] as? String {
                XCTAssertEqual(result.publicKey.subjectPublicKeyInfo, Vector.bytes(spki), vector.name)
            }
            verified += 1
        }
        XCTAssertEqual(verified, 14)
    }

    /// R77 on the specification's own vector: its U2F statement verifies, but the AAGUID beside it is signed by nothing.
    func testTheU2FVectorAsWrittenIsRefusedForItsAAGUID() async throws {
        let vector = try XCTUnwrap(try WebAuthnVectorTests.vectors().first { $0.name == "fido-u2f-es256" })
        let error = await Self.refusal(try Self.ceremony(vector), try Self.response(vector, asWritten: true), try Self.expectation(vector))
        XCTAssertEqual(error?.reason, .attestationInvalid(AttestationStatementError("fido-u2f", .aaguidNotZero)))
    }

    func testEveryRegisteredCredentialVerifiesItsAssertion() async throws {
        for vector in try WebAuthnVectorTests.vectors() where vector.name != "packed-ed448" {
            let registered = try await Self.ceremony(vector).verify(try Self.response(vector), expected: try Self.expectation(vector), now: Self.now)
            let stored = StoredCredential(
                id: registered.credentialID, publicKey: registered.publicKey, userHandle: [1],
                signCount: registered.signCount, backupEligible: registered.backupEligible)
            let assertion = AssertionResponse(
                credentialID: registered.credentialID, clientDataJSON: try vector.given("authentication", "clientDataJSON"),
                authenticatorData: try vector.given("authentication", "authenticatorData"),
                signature: try vector.given("authentication", "signature"), userHandle: nil)
            let result = try AuthenticationCeremony(relyingParty: Self.relyingParty(vector))
                .verify(
                    assertion,
                    expected: AssertionExpectation(
                        challenge: try vector.given("authentication", "challenge"), allowCredentials: [registered.credentialID]),
                    credential: stored)
            let expected = try XCTUnwrap((vector.json["expected"] as? [String: Any])?["authentication"] as? [String: Any])
            XCTAssertEqual(Int(result.signCount), expected["newSignCount"] as? Int, vector.name)
            XCTAssertEqual(result.backupState, expected["backupState"] as? Bool, vector.name)
        }
    }

    func testTheEd448RegistrationIsRefusedWithItsOwnReason() async throws {
        let vector = try XCTUnwrap(try WebAuthnVectorTests.vectors().first { $0.name == "packed-ed448" })
        let error = await Self.refusal(try Self.ceremony(vector), try Self.response(vector), try Self.expectation(vector))
        XCTAssertEqual(error?.reason, .authenticatorDataMalformed(.credentialPublicKey(.algorithmUnavailable(-53))))
        XCTAssertEqual(error?.step, 13)
    }

    func testTheFramedVectorsAreRefusedByARelyingPartyThatIsNotFramed() async throws {
        for vector in try WebAuthnVectorTests.vectors() where vector.name.contains("Origin") {
            let ceremony = RegistrationCeremony(
                relyingParty: Self.relyingParty(vector, framed: false),
                policy: AttestationPolicy(
                    requireTrustedAttestation: false, allowsAuthenticatorsWithoutMetadata: true, requiresUserVerification: false))
            let error = await Self.refusal(ceremony, try Self.response(vector), try Self.expectation(vector))
            XCTAssertEqual(error?.step, 10, "\(vector.name): both say crossOrigin true")
        }
    }

    func testWithoutTheVectorsRootAnAttestedRegistrationIsUnverifiedByDefaultAndRefusedWhenTrustIsRequired() async throws {
        let vector = try XCTUnwrap(try WebAuthnVectorTests.vectors().first { $0.name == "packed-es256" })
        let lenient = RegistrationCeremony(
            relyingParty: Self.relyingParty(vector),
            policy: AttestationPolicy(requireTrustedAttestation: false, allowsAuthenticatorsWithoutMetadata: true, requiresUserVerification: false))
        let result = try await lenient.verify(try Self.response(vector), expected: try Self.expectation(vector), now: Self.now)
        XCTAssertNil(result.trustAnchor)
        var strict = lenient
        strict.policy.requireTrustedAttestation = true
        let error = await Self.refusal(strict, try Self.response(vector), try Self.expectation(vector))
        XCTAssertEqual(error?.reason, .attestationNotTrusted)
        XCTAssertEqual(error?.step, 24)
    }
}
