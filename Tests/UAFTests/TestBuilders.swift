import Crypto
import Foundation
import Primitives
import XCTest

@testable import UAF

let testAppID = "https://example.com/nevisfido/uaf/1.1/facets"
let testFacetID = "ios:bundle-id:com.example.app"

/// Metadata for the iOS PIN authenticator (F1D0#1001) as in the seed, plus a raw-signature test authenticator.
let testMetadata = try! UAFMetadata([
    MetadataStatement(
        aaid: "F1D0#1001", description: "iOS PIN", attestationTypes: [15880],
        userVerificationDetails: [[.init(userVerification: 4)]], authenticationAlgorithm: 2,
        keyProtection: 1, matcherProtection: 1, publicKeyAlgAndEncoding: 257),
    MetadataStatement(
        aaid: "ABCD#ABCD", description: "raw test", attestationTypes: [15879, 15880],
        userVerificationDetails: [[.init(userVerification: 2)]], authenticationAlgorithm: 1,
        authenticatorVersion: 256, keyProtection: 2, matcherProtection: 2, publicKeyAlgAndEncoding: 256),
])

let testConfiguration = RelyingPartyConfiguration(appID: testAppID, trustedFacetIDs: [testFacetID])
let pinPolicy = Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1001"])]])

/// Builds a valid registration response; each property can be changed to make exactly one thing wrong.
struct TestRegistrationBuilder {
    var key = P256.Signing.PrivateKey()
    var aaid = "F1D0#1001"
    var algorithm = SignatureAlgorithm.secp256r1ECDSASHA256DER
    var keyEncoding = PublicKeyEncoding.eccX962DER
    var challenge = "Y2hhbGxlbmdlLXJlZy0wMDAx"
    var appID = testAppID
    var facetID = testFacetID
    var keyID: [UInt8] = Array(repeating: 7, count: 32)
    var channelBinding = ChannelBinding()
    var mode: UInt8 = 1
    var authenticatorVersion: UInt16 = 1
    var finalChallengeHash: [UInt8]?
    var upv = Version.uaf11
    var op = UAFOperation.registration
    var assertionScheme = AssertionScheme.uafV1TLV
    var tamperSignature = false
    var mutateAssertion: ((inout [UInt8]) -> Void)?

    var fcParams: String {
        try! FinalChallengeParams(appID: appID, challenge: challenge, facetID: facetID, channelBinding: channelBinding).encodedFCParams()
    }

    func build() throws -> RegistrationResponse {
        let fc = fcParams
        let krd = KeyRegistrationData(
            aaid: aaid, authenticatorVersion: authenticatorVersion, authenticationMode: mode, signatureAlgorithm: algorithm,
            publicKeyEncoding: keyEncoding, finalChallengeHash: finalChallengeHash ?? FinalChallengeParams.hash(fcParams: fc),
            keyID: keyID, signCounter: 0, registrationCounter: 1,
            publicKey: SignatureSuite.encode(key.publicKey, as: keyEncoding))
        var assertion = try AssertionBuilder.registration(krd) { message in
            var sig = SignatureSuite.encode(try key.signature(for: message), as: algorithm)
            if tamperSignature { sig[sig.count / 2] ^= 0x01 }
            return sig
        }
        mutateAssertion?(&assertion)
        return RegistrationResponse(
            header: OperationHeader(upv: upv, op: op, appID: appID, serverData: "sd"), fcParams: fc,
            assertions: [AuthenticatorRegistrationAssertion(assertionScheme: assertionScheme, assertion: Base64URL.encode(assertion))])
    }

    var issued: IssuedRegistration { IssuedRegistration(challenge: "Y2hhbGxlbmdlLXJlZy0wMDAx", username: "alice", policy: pinPolicy) }
}

/// Builds a valid authentication response for a registered key.
struct TestAuthenticationBuilder {
    var key: P256.Signing.PrivateKey
    var aaid = "F1D0#1001"
    var algorithm = SignatureAlgorithm.secp256r1ECDSASHA256DER
    var challenge = "Y2hhbGxlbmdlLWF1dGgtMDAx"
    var appID = testAppID
    var facetID = testFacetID
    var keyID: [UInt8] = Array(repeating: 7, count: 32)
    var mode: UInt8 = 1
    var counter: UInt32 = 5
    var nonce: [UInt8] = Array(repeating: 1, count: 16)
    var transactionContentHash: [UInt8] = []
    var finalChallengeHash: [UInt8]?
    var tamperSignature = false
    var mutateAssertion: ((inout [UInt8]) -> Void)?

    var fcParams: String { try! FinalChallengeParams(appID: appID, challenge: challenge, facetID: facetID).encodedFCParams() }

    func build() throws -> AuthenticationResponse {
        let fc = fcParams
        let signed = SignedData(
            aaid: aaid, authenticatorVersion: 1, authenticationMode: mode, signatureAlgorithm: algorithm, authenticatorNonce: nonce,
            finalChallengeHash: finalChallengeHash ?? FinalChallengeParams.hash(fcParams: fc),
            transactionContentHash: transactionContentHash, keyID: keyID, signCounter: counter)
        var assertion = try AssertionBuilder.authentication(signed) { message in
            var sig = SignatureSuite.encode(try key.signature(for: message), as: algorithm)
            if tamperSignature { sig[sig.count / 2] ^= 0x01 }
            return sig
        }
        mutateAssertion?(&assertion)
        return AuthenticationResponse(
            header: OperationHeader(op: .authentication, appID: appID, serverData: "sd"), fcParams: fc,
            assertions: [AuthenticatorSignAssertion(assertion: Base64URL.encode(assertion))])
    }

    static func issued(transactions: [Transaction] = []) -> IssuedAuthentication {
        IssuedAuthentication(challenge: "Y2hhbGxlbmdlLWF1dGgtMDAx", policy: pinPolicy, transactions: transactions)
    }

    func registered(counter: UInt32 = 4, username: String = "alice") -> RegisteredKey {
        RegisteredKey(
            aaid: aaid, keyID: Base64URL.encode(keyID), username: username,
            publicKey: Array(key.publicKey.derRepresentation), publicKeyEncoding: .eccX962DER, signCounter: counter)
    }
}

extension XCTestCase {
    func assertRejected(
        _ expected: UAFVerificationError? = nil, status: UAFStatusCode,
        file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            XCTFail("expected rejection with \(status.rawValue)", file: file, line: line)
        } catch let error as UAFVerificationError {
            XCTAssertEqual(error.statusCode, status, "\(error)", file: file, line: line)
            if let expected { XCTAssertEqual(error, expected, file: file, line: line) }
        } catch {
            XCTFail("unexpected error \(error)", file: file, line: line)
        }
    }
}

func hex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var it = s.makeIterator()
    while let a = it.next(), let b = it.next() { out.append(UInt8(String([a, b]), radix: 16)!) }
    return out
}
