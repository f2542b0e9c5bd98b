import Crypto
import Foundation
import Primitives
import WebAuthn
import XCTest

/// The authentication ceremony (WebAuthn §7.2): a valid assertion verifies, and each step refuses the one field
/// changed for it, naming that step. The specification's vectors verify through the whole ceremony.
final class AuthenticationCeremonyTests: XCTestCase {
    static let key = P256.Signing.PrivateKey()
    static let relyingParty = RelyingParty(id: "example.org", origins: ["https://example.org", "android:apk-key-hash:AAEC"])

    /// A valid assertion, with one thing to change at a time.
    struct Assertion {
        var challenge: [UInt8] = Array(repeating: 7, count: 32)
        var clientDataJSON: String?
        var type = "webauthn.get", origin = "https://example.org", crossOrigin = "false", topOrigin: String?
        var rpID = "example.org"
        var flags: UInt8 = 0x05
        var signCount: UInt32 = 5
        var credentialID: [UInt8] = [1, 2, 3]
        var userHandle: [UInt8]? = nil
        var resign: (([UInt8]) -> [UInt8])?

        var clientData: [UInt8] {
            if let clientDataJSON { return Array(clientDataJSON.utf8) }
            let top = topOrigin.map { #","topOrigin":"\#($0)""# } ?? ""
            return Array(
                #"{"type":"\#(type)","challenge":"\#(Base64URL.encode(challenge))","origin":"\#(origin)","crossOrigin":\#(crossOrigin)\#(top)}"#.utf8)
        }

        var response: AssertionResponse {
            let authenticatorData =
                Array(SHA256.hash(data: Array(rpID.utf8))) + [flags] + (0..<4).map { UInt8(truncatingIfNeeded: signCount >> (24 - 8 * $0)) }
            let signed = authenticatorData + SHA256.hash(data: clientData)
            let signature = resign?(signed) ?? Array(try! AuthenticationCeremonyTests.key.signature(for: signed).derRepresentation)
            return AssertionResponse(
                credentialID: credentialID, clientDataJSON: clientData, authenticatorData: authenticatorData,
                signature: signature, userHandle: userHandle)
        }
    }

    static let credential = StoredCredential(
        id: [1, 2, 3], publicKey: try! COSEKey(bytes: COSEKeyTests.ec2(key.publicKey)), userHandle: [9, 9],
        signCount: 4, backupEligible: false)

    func verify(
        _ assertion: Assertion, expected: AssertionExpectation? = nil, credential: StoredCredential = credential,
        relyingParty: RelyingParty = relyingParty
    ) throws -> VerifiedAssertion {
        try AuthenticationCeremony(relyingParty: relyingParty).verify(
            assertion.response, expected: expected ?? AssertionExpectation(challenge: assertion.challenge, allowCredentials: [[1, 2, 3]]),
            credential: credential)
    }

    /// The step and reason `assertion` is refused with.
    func refusal(
        _ assertion: Assertion, expected: AssertionExpectation? = nil, credential: StoredCredential = credential,
        relyingParty: RelyingParty = relyingParty, file: StaticString = #filePath, line: UInt = #line
    ) -> (Int, WebAuthnError.Reason)? {
        do {
            _ = try verify(assertion, expected: expected, credential: credential, relyingParty: relyingParty)
            XCTFail("accepted", file: file, line: line)
            return nil
        } catch let error as WebAuthnError {
            XCTAssertEqual(error.ceremony, .authentication, file: file, line: line)
            return (error.step, error.reason)
        } catch {
            XCTFail("\(error)", file: file, line: line)
            return nil
        }
    }

    // MARK: - Accepted

    func testAValidAssertionVerifiesAndReportsWhatToStore() throws {
        XCTAssertEqual(try verify(Assertion()), VerifiedAssertion(signCount: 5, userVerified: true, backupState: false, extensions: []))
    }

    func testASignInWithoutAUsernameVerifiesWithTheUsersHandle() throws {
        var assertion = Assertion()
        assertion.userHandle = [9, 9]
        XCTAssertNoThrow(try verify(assertion, expected: AssertionExpectation(challenge: assertion.challenge)))
    }

    func testAnAndroidAppOriginConfiguredIsAccepted() throws {
        var assertion = Assertion()
        assertion.origin = "android:apk-key-hash:AAEC"
        XCTAssertNoThrow(try verify(assertion))
    }

    func testUnknownClientDataMembersAndAByteOrderMarkAreAccepted() throws {
        var assertion = Assertion()
        assertion.clientDataJSON =
            "\u{FEFF}"
            + #"{"type":"webauthn.get","challenge":"\#(Base64URL.encode(assertion.challenge))","origin":"https://example.org","other_keys_can_be_added_here":"x","crossOrigin":false}"#
        XCTAssertNoThrow(try verify(assertion))
    }

    func testACounterOfZeroOnBothSidesIsAccepted() throws {
        var assertion = Assertion()
        var credential = Self.credential
        assertion.signCount = 0
        credential.signCount = 0
        XCTAssertEqual(try verify(assertion, credential: credential).signCount, 0)
    }

    func testUserVerificationIsIgnoredUnlessRequired() throws {
        var assertion = Assertion()
        assertion.flags = 0x01
        XCTAssertFalse(try verify(assertion).userVerified)
    }

    // MARK: - Refused, one step each

    func testACredentialNotAllowedIsStep5() {
        XCTAssertEqual(refusal(Assertion(), expected: AssertionExpectation(challenge: Assertion().challenge, allowCredentials: [[4]]))?.0, 5)
    }

    func testAnotherCredentialThanTheStoredOneIsStep6() {
        var credential = Self.credential
        credential.id = [7]
        let expected = AssertionExpectation(challenge: Assertion().challenge)
        var assertion = Assertion()
        assertion.userHandle = [9, 9]
        XCTAssertEqual(refusal(assertion, expected: expected, credential: credential)?.1, .credentialMismatch)
    }

    func testAnotherUsersHandleIsStep6() {
        var assertion = Assertion()
        assertion.userHandle = [8]
        XCTAssertEqual(refusal(assertion)?.1, .userHandleMismatch)
    }

    func testASignInWithoutAUsernameAndWithoutAUserHandleIsStep6() {
        XCTAssertEqual(refusal(Assertion(), expected: AssertionExpectation(challenge: Assertion().challenge))?.1, .userHandleMismatch)
    }

    func testClientDataThatIsNotJSONIsStep9() {
        var assertion = Assertion()
        assertion.clientDataJSON = "webauthn.get"
        XCTAssertEqual(refusal(assertion)?.0, 9)
    }

    func testClientDataWithARepeatedOriginIsStep9() {
        var assertion = Assertion()
        assertion.clientDataJSON =
            #"{"type":"webauthn.get","challenge":"\#(Base64URL.encode(assertion.challenge))","origin":"https://evil.example","origin":"https://example.org"}"#
        XCTAssertEqual(refusal(assertion)?.1, .clientDataMalformed)
    }

    func testClientDataWithoutOriginIsStep9() {
        var assertion = Assertion()
        assertion.clientDataJSON = #"{"type":"webauthn.get","challenge":"\#(Base64URL.encode(assertion.challenge))"}"#
        XCTAssertEqual(refusal(assertion)?.1, .clientDataMalformed)
    }

    func testCrossOriginAsTextIsStep9() {
        var assertion = Assertion()
        assertion.crossOrigin = #""false""#
        XCTAssertEqual(refusal(assertion)?.1, .clientDataMalformed)
    }

    func testARegistrationsClientDataIsStep10() {
        var assertion = Assertion()
        assertion.type = "webauthn.create"
        XCTAssertEqual(refusal(assertion)?.1, .typeMismatch("webauthn.create"))
    }

    func testAnotherChallengeIsStep11() {
        var assertion = Assertion()
        assertion.clientDataJSON =
            #"{"type":"webauthn.get","challenge":"\#(Base64URL.encode(Array(repeating: UInt8(8), count: 32)))","origin":"https://example.org"}"#
        XCTAssertEqual(refusal(assertion).map { "\($0.0) \($0.1)" }, "11 challengeMismatch")
    }

    func testAnotherOriginIsStep12() {
        for origin in [
            "https://evil.example", "http://example.org", "https://example.org.evil.example", "https://example.org:8443", "https://EXAMPLE.org",
        ] {
            var assertion = Assertion()
            assertion.origin = origin
            XCTAssertEqual(refusal(assertion)?.1, .originNotAllowed(origin), origin)
        }
    }

    func testACrossOriginIframeIsStep13UnlessTopOriginsAreConfigured() throws {
        var assertion = Assertion()
        assertion.crossOrigin = "true"
        XCTAssertEqual(refusal(assertion)?.0, 13)
        XCTAssertNoThrow(
            try verify(
                assertion, relyingParty: RelyingParty(id: "example.org", origins: ["https://example.org"], topOrigins: ["https://shop.example"])))
    }

    func testATopOriginNotConfiguredIsStep14() {
        var assertion = Assertion()
        assertion.crossOrigin = "true"
        assertion.topOrigin = "https://evil.example"
        let framed = RelyingParty(id: "example.org", origins: ["https://example.org"], topOrigins: ["https://shop.example"])
        XCTAssertEqual(refusal(assertion, relyingParty: framed)?.1, .topOriginNotAllowed("https://evil.example"))
    }

    func testATopOriginWithoutCrossOriginIsStep14() {
        var assertion = Assertion()
        assertion.topOrigin = "https://shop.example"
        let framed = RelyingParty(id: "example.org", origins: ["https://example.org"], topOrigins: ["https://shop.example"])
        XCTAssertEqual(refusal(assertion, relyingParty: framed)?.0, 14)
    }

    func testAnotherRPIDIsStep15() {
        var assertion = Assertion()
        assertion.rpID = "example.com"
        XCTAssertEqual(refusal(assertion)?.1, .rpIDHashMismatch)
    }

    func testUserNotPresentIsStep16() {
        var assertion = Assertion()
        assertion.flags = 0x04
        XCTAssertEqual(refusal(assertion)?.0, 16)
    }

    func testUserNotVerifiedWhenRequiredIsStep17() {
        var assertion = Assertion()
        assertion.flags = 0x01
        XCTAssertEqual(
            refusal(
                assertion,
                expected: AssertionExpectation(
                    challenge: assertion.challenge, allowCredentials: [[1, 2, 3]],
                    userVerification: .required))?.0, 17)
    }

    func testBackedUpWithoutEligibilityIsStep18() {
        var assertion = Assertion()
        assertion.flags = 0x15
        XCTAssertEqual(refusal(assertion)?.0, 18)
    }

    func testBackupEligibilityThatChangedIsStep19() {
        var assertion = Assertion()
        assertion.flags = 0x0d
        XCTAssertEqual(refusal(assertion)?.1, .backupEligibilityChanged)
    }

    func testAChangedSignatureIsStep21() {
        var assertion = Assertion()
        assertion.resign = { signed in
            var signature = Array(try! AuthenticationCeremonyTests.key.signature(for: signed).derRepresentation)
            signature[signature.count - 1] ^= 1
            return signature
        }
        XCTAssertEqual(refusal(assertion)?.0, 21)
    }

    func testAnotherKeysSignatureIsStep21() {
        var assertion = Assertion()
        assertion.resign = { Array(try! P256.Signing.PrivateKey().signature(for: $0).derRepresentation) }
        XCTAssertEqual(refusal(assertion)?.1, .signatureInvalid)
    }

    func testACounterThatDoesNotGrowIsStep22() {
        var assertion = Assertion()
        assertion.signCount = 4
        XCTAssertEqual(refusal(assertion)?.1, .signCounterNotIncreased(stored: 4, received: 4))
        assertion.signCount = 0
        XCTAssertEqual(refusal(assertion)?.1, .signCounterNotIncreased(stored: 4, received: 0), "a drop back to 0")
    }

    func testARefusalNamesItsStepAndQuotesTheOriginEscaped() {
        let error = WebAuthnError(.authentication, .originNotAllowed("https://evil.example\n\u{202E}x"))
        XCTAssertEqual(error.description, #"authentication (WebAuthn §7.2 step 12): origin "https://evil.example\u{0A}\u{202E}x" is not allowed"#)
    }

    // MARK: - The specification's vectors

    func testEveryVectorsAssertionPassesTheCeremonyAndFramedOnesOnlyWhereAllowed() throws {
        let framed = RelyingParty(id: "example.org", origins: ["https://example.org"], topOrigins: ["https://example.com"])
        let strict = RelyingParty(id: "example.org", origins: ["https://example.org"])
        var passed = 0
        for vector in try WebAuthnVectorTests.Vector.all() where vector.name != "packed-ed448" {
            let registration = try AuthenticatorData(bytes: try WebAuthnVectorTests.authData(try vector.given("registration", "attestationObject")))
            let attested = try XCTUnwrap(registration.attestedCredentialData)
            let credential = StoredCredential(
                id: attested.credentialID, publicKey: attested.publicKey, userHandle: [1],
                signCount: registration.signCount, backupEligible: registration.flags.contains(.backupEligible))
            let response = AssertionResponse(
                credentialID: attested.credentialID, clientDataJSON: try vector.given("authentication", "clientDataJSON"),
                authenticatorData: try vector.given("authentication", "authenticatorData"),
                signature: try vector.given("authentication", "signature"), userHandle: nil)
            let expected = AssertionExpectation(challenge: try vector.given("authentication", "challenge"), allowCredentials: [attested.credentialID])
            let isFramed = vector.name.hasSuffix("crossOrigin") || vector.name.hasSuffix("topOrigin")
            if isFramed {
                XCTAssertThrowsError(
                    try AuthenticationCeremony(relyingParty: strict).verify(response, expected: expected, credential: credential), vector.name
                ) { error in
                    XCTAssertEqual((error as? WebAuthnError)?.step, 13, vector.name)
                }
            }
            let result = try AuthenticationCeremony(relyingParty: isFramed ? framed : strict).verify(
                response, expected: expected, credential: credential)
            let flags = try XCTUnwrap(vector.derived("authentication")["flags"] as? [String: Bool])
            XCTAssertEqual(result.userVerified, flags["UV"], vector.name)
            XCTAssertEqual(result.backupState, flags["BS"], vector.name)
            XCTAssertEqual(result.signCount, 0, vector.name)
            passed += 1
        }
        XCTAssertEqual(passed, 14)
    }
}
