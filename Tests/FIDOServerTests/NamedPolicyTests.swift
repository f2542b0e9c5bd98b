import FIDOServerTesting
import FIDOSimulation
import Foundation
import NevisProtocol
import Primitives
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// Policies by name: the configuration's rules, the policy each request offers (built-in or named by the context),
/// and the verifier holding answers to it. Every criterion the server writes is one the spec allows.
final class NamedPolicyTests: XCTestCase {
    // MARK: - Configuration

    /// The error text when `policies` (a JSON object) is refused, nil when it loads.
    static func refusal(_ policies: String) -> String? {
        do {
            let configuration = try JSONDecoder().decode(ServerConfiguration.self, from: Data(#"{"policies": \#(policies)}"#.utf8))
            try configuration.validate()
            return nil
        } catch {
            return "\(error)"
        }
    }

    static let fingerprintOnly = #"{"accepted": [[{"aaid": ["F1D0#1002"]}]]}"#

    func testAPolicySetIsReadWithEachOperation() throws {
        let json = #"""
            {"policies": {"strong": {"registration": \#(Self.fingerprintOnly),
                                     "authentication": {"accepted": [[{"userVerification": 2}]], "disallowed": [{"aaid": ["F1D0#1001"]}]},
                                     "transaction": {"accepted": [[{"vendorID": ["F1D0"], "authenticationAlgorithms": [2]}]]}}}}
            """#
        let configuration = try JSONDecoder().decode(ServerConfiguration.self, from: Data(json.utf8))
        XCTAssertNoThrow(try configuration.validate())
        let strong = try XCTUnwrap(configuration.policies["strong"])
        XCTAssertEqual(strong.registration, Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1002"])]]))
        XCTAssertEqual(
            strong.authentication, Policy(accepted: [[MatchCriteria(userVerification: 2)]], disallowed: [MatchCriteria(aaid: ["F1D0#1001"])]))
        XCTAssertEqual(strong.transaction, Policy(accepted: [[MatchCriteria(vendorID: ["F1D0"], authenticationAlgorithms: [2])]]))
    }

    func testAMisspeltCriteriaKeyIsRefusedNotDropped() throws {
        let refusal = try XCTUnwrap(Self.refusal(#"{"strong": {"authentication": {"accepted": [[{"userVerfication": 2}]]}}}"#))
        XCTAssertTrue(refusal.contains("unknown key policies.strong.authentication.accepted"), refusal)
        XCTAssertTrue(refusal.contains("userVerfication (did you mean userVerification?)"), refusal)
    }

    func testAMisspeltOperationIsRefused() throws {
        let refusal = try XCTUnwrap(Self.refusal(#"{"strong": {"registraton": \#(Self.fingerprintOnly)}}"#))
        XCTAssertTrue(refusal.contains("unknown key policies.strong.registraton (did you mean registration?)"), refusal)
    }

    func testAlgorithmsBesideAnAAIDAreRefused() throws {
        let refusal = try XCTUnwrap(
            Self.refusal(#"{"rsa": {"registration": {"accepted": [[{"aaid": ["F1D0#0001"], "authenticationAlgorithms": [9]}]]}}}"#))
        XCTAssertTrue(
            refusal.contains("policies.rsa.registration.accepted[0][0]: authenticationAlgorithms may not accompany aaid (uaf-spec §1.5)"), refusal)
    }

    func testConfiguredKeyIDsAreRefused() throws {
        let refusal = try XCTUnwrap(Self.refusal(#"{"one": {"authentication": {"accepted": [[{"aaid": ["F1D0#1001"], "keyIDs": ["a2V5"]}]]}}}"#))
        XCTAssertTrue(refusal.contains("keyIDs are added by the server"), refusal)
    }

    func testAnEmptyAcceptedListIsRefused() throws {
        let refusal = try XCTUnwrap(Self.refusal(#"{"none": {"registration": {"accepted": []}}}"#))
        XCTAssertTrue(refusal.contains("policies.none.registration.accepted is empty"), refusal)
    }

    func testAnEmptyCombinationIsRefused() throws {
        let refusal = try XCTUnwrap(Self.refusal(#"{"none": {"registration": {"accepted": [[]]}}}"#))
        XCTAssertTrue(refusal.contains("policies.none.registration.accepted[0] is empty"), refusal)
    }

    func testAnEmptyCriterionIsRefused() throws {
        let refusal = try XCTUnwrap(Self.refusal(#"{"any": {"registration": {"accepted": [[{}]]}}}"#))
        XCTAssertTrue(refusal.contains("policies.any.registration.accepted[0][0] is empty: it matches every authenticator"), refusal)
    }

    func testAMalformedAAIDIsRefused() throws {
        let refusal = try XCTUnwrap(Self.refusal(#"{"typo": {"registration": {"accepted": [[{"aaid": ["F1D0-1002"]}]]}}}"#))
        XCTAssertTrue(refusal.contains(#"aaid: "F1D0-1002" is not an AAID"#), refusal)
    }

    func testAMalformedVendorIDIsRefused() throws {
        let refusal = try XCTUnwrap(Self.refusal(#"{"typo": {"registration": {"accepted": [[{"vendorID": ["F1D"]}]]}}}"#))
        XCTAssertTrue(refusal.contains(#"vendorID: "F1D" is not 4 hexadecimal digits"#), refusal)
    }

    func testAnEmptyAlgorithmListIsRefused() throws {
        let refusal = try XCTUnwrap(
            Self.refusal(#"{"none": {"registration": {"accepted": [[{"vendorID": ["F1D0"], "authenticationAlgorithms": []}]]}}}"#))
        XCTAssertTrue(refusal.contains("authenticationAlgorithms is empty"), refusal)
    }

    func testAPolicyNameOutsideTheAlphabetIsRefused() throws {
        let refusal = try XCTUnwrap(Self.refusal(#"{"two words": {"registration": \#(Self.fingerprintOnly)}}"#))
        XCTAssertTrue(refusal.contains(#"policies: "two words" is not a policy name"#), refusal)
    }

    func testASetWithNoOperationIsRefused() throws {
        let refusal = try XCTUnwrap(Self.refusal(#"{"empty": {}}"#))
        XCTAssertTrue(refusal.contains("policies.empty sets none of registration, authentication, transaction"), refusal)
    }

    // MARK: - The built-in policy

    /// Every criterion of every request the server writes, with the default configuration and metadata.
    func testEveryCriterionTheBuiltInPolicyWritesIsOneTheSpecAllows() async throws {
        try await InProcessServer.with { server in
            let pin = SoftwareAuthenticator()
            let registration = try await server.registrationRequest(username: "alice")
            _ = try await server.send("/nevisfido/uaf/1.1/registration", try pin.register(registration, serverAppID: server.appID))
            let second = try await server.registrationRequest(username: "alice")
            let (_, usernameless) = try await server.authenticationRequest(username: nil)
            let (_, stepUp) = try await server.authenticationRequest(username: "alice")
            let (_, transaction) = try await server.authenticationRequest(
                username: nil, transaction: [Transaction(contentType: "text/plain", content: Base64URL.encode(Array("Pay 10 CHF".utf8)))])
            let policies = [registration.policy, second.policy] + [usernameless, stepUp, transaction].map { $0?.policy }.compactMap { $0 }
            XCTAssertEqual(policies.count, 5)
            for policy in policies {
                for criteria in policy.accepted.joined() + (policy.disallowed ?? []) {
                    XCTAssertEqual(criteria.fieldsNotAllowedBesideAAID, [], "\(criteria)")
                }
            }
            XCTAssertTrue(registration.policy.accepted.contains([MatchCriteria(aaid: ["F1D0#1001"])]))
        }
    }

    /// nevisFIDO's verbatim Android PIN statement names RSA only: the client must be told, without `aaid`.
    func testAnAuthenticatorWhoseMetadataRefusesECDSAIsDescribedWithoutItsAAID() throws {
        var android = try XCTUnwrap(NevisAuthenticatorMetadata.statements.first { $0.aaid == "F1D0#0001" })
        android.authenticationAlgorithms = [9]
        android.authenticationAlgorithm = 9
        let criteria = PolicyChoice.criteria(for: android)
        XCTAssertEqual(
            criteria, MatchCriteria(vendorID: ["F1D0"], userVerification: android.userVerificationMethods.rawValue, authenticationAlgorithms: [9]))
        XCTAssertEqual(
            PolicyChoice.criteria(for: try XCTUnwrap(NevisAuthenticatorMetadata.statements.first { $0.aaid == "F1D0#1001" })),
            MatchCriteria(aaid: ["F1D0#1001"]))
    }

    /// The built-in policy is derived once per metadata store, and a reload (a new store) derives it again.
    func testTheBuiltInPolicyFollowsAMetadataReload() throws {
        let memo = PolicyChoice.EveryAuthenticatorMemo()
        let all = MetadataStore(uaf: try UAFMetadata(NevisAuthenticatorMetadata.statements))
        let one = MetadataStore(uaf: try UAFMetadata(Array(NevisAuthenticatorMetadata.statements.prefix(1))))
        XCTAssertEqual(memo.policy(for: all), PolicyChoice.everyAuthenticator(all.uaf))
        XCTAssertEqual(memo.policy(for: one).accepted.count, 1, "the reloaded store got the policy of the one before")
        XCTAssertEqual(memo.policy(for: all).accepted.count, NevisAuthenticatorMetadata.statements.count)
    }

    // MARK: - Named policies on the wire

    static func configuration(_ policies: [String: ServerConfiguration.NamedPolicy]) -> ServerConfiguration {
        var configuration = InProcessServer.configuration()
        configuration.policies = policies
        return configuration
    }

    static let fingerprint = Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1002"])]])

    func testTheRegistrationContextsPolicyChoosesTheAcceptedAuthenticators() async throws {
        try await InProcessServer.with(Self.configuration(["strong": .init(registration: Self.fingerprint)])) { server in
            let pin = SoftwareAuthenticator()
            let first = try await server.registrationRequest(username: "alice")
            let registeredPIN = try await server.send("/nevisfido/uaf/1.1/registration", try pin.register(first, serverAppID: server.appID))
            XCTAssertEqual(registeredPIN.statusCode, 1200)
            let strong = try await server.registrationRequest(username: "alice", policy: "strong")
            XCTAssertEqual(strong.policy.accepted, [[MatchCriteria(aaid: ["F1D0#1002"])]])
            XCTAssertEqual(
                strong.policy.disallowed, [MatchCriteria(aaid: ["F1D0#1001"], keyIDs: [Base64URL.encode(pin.keyID)])],
                "the user's registered keys stay disallowed")
            var fingerprint = SoftwareAuthenticator()
            fingerprint.aaid = "F1D0#1002"
            let registered = try await server.send("/nevisfido/uaf/1.1/registration", try fingerprint.register(strong, serverAppID: server.appID))
            XCTAssertEqual(registered.statusCode, 1200, registered.description ?? "")
        }
    }

    func testAnAuthenticatorThePolicyDoesNotAcceptCannotRegisterUnderIt() async throws {
        try await InProcessServer.with(Self.configuration(["strong": .init(registration: Self.fingerprint)])) { server in
            let strong = try await server.registrationRequest(username: "alice", policy: "strong")
            let pin = SoftwareAuthenticator()
            let refused = try await server.send("/nevisfido/uaf/1.1/registration", try pin.register(strong, serverAppID: server.appID))
            XCTAssertEqual(refused.statusCode, 1492, refused.description ?? "")
            let stored = try await server.server.stores.registrations.registrations(username: "alice")
            XCTAssertEqual(stored.count, 0)
        }
    }

    func testAPolicyNameThatIsNotConfiguredIsRefused() async throws {
        try await InProcessServer.with(Self.configuration(["strong": .init(registration: Self.fingerprint)])) { server in
            let context = try UAFMessageCodec.encodeObject(["username": "alice", "policy": "stronger"])
            let (status, body, _) = try await server.post(
                "/nevisfido/uaf/1.1/request/registration",
                body: try JSONEncoder().encode(GetUAFRequest(op: .registration, context: context)),
                headers: try await server.bearer("alice"))
            XCTAssertEqual(status, 200)
            XCTAssertEqual(try JSONDecoder().decode(ReturnUAFRequest.self, from: body).statusCode, 1400, "a looser policy is never served instead")
            let authentication = try UAFMessageCodec.encodeObject(["policy": "stronger"])
            let (_, authBody, _) = try await server.post(
                "/nevisfido/uaf/1.1/request/authentication",
                body: try JSONEncoder().encode(GetUAFRequest(op: .authentication, context: authentication)))
            XCTAssertEqual(try JSONDecoder().decode(ReturnUAFRequest.self, from: authBody).statusCode, 1400)
        }
    }

    func testTheDefaultSetServesRequestsThatNameNone() async throws {
        try await InProcessServer.with(Self.configuration(["default": .init(registration: Self.fingerprint)])) { server in
            let request = try await server.registrationRequest(username: "alice")
            XCTAssertEqual(request.policy.accepted, [[MatchCriteria(aaid: ["F1D0#1002"])]])
            // The set leaves authentication out: the built-in policy serves it.
            let (_, usernameless) = try await server.authenticationRequest(username: nil)
            XCTAssertGreaterThan(try XCTUnwrap(usernameless).policy.accepted.count, 1)
        }
    }

    func testAStepUpUnderAPolicyOffersOnlyTheUsersKeysItAccepts() async throws {
        try await InProcessServer.with(Self.configuration(["strong": .init(authentication: Self.fingerprint)])) { server in
            var pin = SoftwareAuthenticator()
            var fingerprint = SoftwareAuthenticator()
            fingerprint.aaid = "F1D0#1002"
            for authenticator in [pin, fingerprint] {
                let request = try await server.registrationRequest(username: "alice")
                let registered = try await server.send(
                    "/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: server.appID))
                XCTAssertEqual(registered.statusCode, 1200)
            }
            let request = try await server.registrationRequest(username: "bob")
            let bobsPIN = SoftwareAuthenticator()
            let registeredBob = try await server.send("/nevisfido/uaf/1.1/registration", try bobsPIN.register(request, serverAppID: server.appID))
            XCTAssertEqual(registeredBob.statusCode, 1200)

            // Asked for by the relying party: an anonymous caller is offered the policy itself, without key IDs.
            let (_, offered) = try await server.authenticationRequest(username: "alice", policy: "strong", headers: try await server.bearer("alice"))
            let stepUp = try XCTUnwrap(offered)
            XCTAssertEqual(stepUp.policy.accepted, [[MatchCriteria(aaid: ["F1D0#1002"], keyIDs: [Base64URL.encode(fingerprint.keyID)])]])
            let byPIN = try await server.send("/nevisfido/uaf/1.1/authentication", try pin.authenticate(stepUp, serverAppID: server.appID))
            XCTAssertEqual(byPIN.statusCode, 1492, "the PIN is alice's, but not one the policy accepts")
            let (_, again) = try await server.authenticationRequest(username: "alice", policy: "strong", headers: try await server.bearer("alice"))
            let byFingerprint = try await server.send(
                "/nevisfido/uaf/1.1/authentication", try fingerprint.authenticate(try XCTUnwrap(again), serverAppID: server.appID))
            XCTAssertEqual(byFingerprint.statusCode, 1200, byFingerprint.description ?? "")

            // Bob has no fingerprint key: nothing to offer.
            let context = try UAFMessageCodec.encodeObject(["username": "bob", "policy": "strong"])
            let (_, body, _) = try await server.post(
                "/nevisfido/uaf/1.1/request/authentication",
                body: try JSONEncoder().encode(GetUAFRequest(op: .authentication, context: context)),
                headers: try await server.bearer("bob"))
            XCTAssertEqual(try JSONDecoder().decode(ReturnUAFRequest.self, from: body).statusCode, 1404)
        }
    }

    func testAUsernamelessRequestOffersTheNamedPolicyAsConfigured() async throws {
        let described = Policy(accepted: [[MatchCriteria(vendorID: ["F1D0"], userVerification: 2)]], disallowed: [MatchCriteria(aaid: ["F1D0#0002"])])
        try await InProcessServer.with(Self.configuration(["touch": .init(authentication: described)])) { server in
            let (_, offered) = try await server.authenticationRequest(username: nil, policy: "touch")
            XCTAssertEqual(try XCTUnwrap(offered).policy, described)
        }
    }

    func testATransactionFallsBackToTheAuthenticationPolicyNarrowedToDisplays() async throws {
        let described = Policy(accepted: [[MatchCriteria(userVerification: 2)]])
        try await InProcessServer.with(Self.configuration(["touch": .init(authentication: described)])) { server in
            let text = [Transaction(contentType: "text/plain", content: Base64URL.encode(Array("Pay 10 CHF".utf8)))]
            let (_, offered) = try await server.authenticationRequest(username: nil, transaction: text, policy: "touch")
            XCTAssertEqual(try XCTUnwrap(offered).policy.accepted, [[MatchCriteria(userVerification: 2, tcDisplay: Policy.anyTransactionDisplay)]])
        }
    }

    func testATransactionUsesItsOwnPolicyWhenOneIsConfigured() async throws {
        let transaction = Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1003"])]])
        try await InProcessServer.with(Self.configuration(["touch": .init(authentication: Self.fingerprint, transaction: transaction)])) { server in
            let text = [Transaction(contentType: "text/plain", content: Base64URL.encode(Array("Pay 10 CHF".utf8)))]
            let (_, offered) = try await server.authenticationRequest(username: nil, transaction: text, policy: "touch")
            XCTAssertEqual(try XCTUnwrap(offered).policy.accepted, [[MatchCriteria(aaid: ["F1D0#1003"])]])
        }
    }
}
