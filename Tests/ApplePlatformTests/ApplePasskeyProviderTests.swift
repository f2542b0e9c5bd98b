#if APPLE_FRAMEWORKS_SHIM
import AppleFrameworksShim
import Foundation
import MobileAuthenticationCore
import XCTest

/// `ApplePasskeyProvider`, compiled from its own source file against the shimmed AuthenticationServices: what the
/// platform is asked for each ceremony, how its answers become the SDK's values, and which error each of Apple's
/// codes becomes. That the real sheet answers as the script does is verified only on a device.
final class ApplePasskeyProviderTests: XCTestCase {
    private let provider = ApplePasskeyProvider { ASPresentationAnchor() }
    private let creation = PasskeyCreationRequest(
        relyingPartyID: "bank.example", challenge: Data([1, 2, 3]), userID: Data([9, 9]), userName: "alice", displayName: "Alice Example",
        excludedCredentialIDs: [Data([7])], userVerification: "required", attestation: "none", algorithms: [-7])
    private func assertion(_ mediation: PasskeyMediation, allowed: [Data] = [Data([5])]) -> PasskeyAssertionRequest {
        PasskeyAssertionRequest(
            relyingPartyID: "bank.example", challenge: Data([4, 4]), allowedCredentialIDs: allowed, userVerification: "required", mediation: mediation
        )
    }

    override func tearDown() { ScriptedPasskeySheet.script(nil) }

    private static let made = ASAuthorizationPlatformPublicKeyCredentialRegistration(
        rawAttestationObject: Data("attestation".utf8), rawClientDataJSON: Data("client data".utf8), credentialID: Data([0xC1]))
    private static let signed = ASAuthorizationPlatformPublicKeyCredentialAssertion(
        rawAuthenticatorData: Data("authenticator data".utf8), userID: Data([9, 9]), signature: Data("signature".utf8),
        rawClientDataJSON: Data("client data".utf8), credentialID: Data([0xC1]))

    func testANewPasskeyAsksForWhatTheServerAskedAndHandsOverWhatThePlatformMade() async throws {
        ScriptedPasskeySheet.script { _ in .success(ASAuthorization(credential: Self.made)) }
        let result = try await provider.createPasskey(creation)
        XCTAssertEqual(
            result,
            PasskeyRegistrationResult(
                credentialID: Data([0xC1]), clientDataJSON: Data("client data".utf8), attestationObject: Data("attestation".utf8),
                transports: ["hybrid", "internal"]))
        let shown = try XCTUnwrap(ScriptedPasskeySheet.shown.first)
        XCTAssertEqual(shown.mode, .modal)
        XCTAssertTrue(shown.anchored, "the sheet must know its window")
        let asked = try XCTUnwrap(shown.request as? ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest)
        XCTAssertEqual(asked.relyingPartyIdentifier, "bank.example")
        XCTAssertEqual(asked.challenge, Data([1, 2, 3]))
        XCTAssertEqual(asked.userID, Data([9, 9]))
        XCTAssertEqual(asked.name, "alice")
        XCTAssertEqual(asked.displayName, "Alice Example")
        XCTAssertEqual(asked.userVerificationPreference, .required)
        XCTAssertEqual(asked.attestationPreference, ASAuthorizationPublicKeyCredentialAttestationKind.none)
        XCTAssertEqual(asked.excludedCredentials.map(\.credentialID), [Data([7])])
    }

    func testASignInAsksForTheAllowedPasskeysOnTheDeviceOnly() async throws {
        ScriptedPasskeySheet.script { _ in .success(ASAuthorization(credential: Self.signed)) }
        let result = try await provider.assertPasskey(assertion(.modal))
        XCTAssertEqual(
            result,
            PasskeyAssertionResult(
                credentialID: Data([0xC1]), clientDataJSON: Data("client data".utf8), authenticatorData: Data("authenticator data".utf8),
                signature: Data("signature".utf8), userHandle: Data([9, 9])))
        let shown = try XCTUnwrap(ScriptedPasskeySheet.shown.first)
        XCTAssertEqual(shown.mode, .immediate)
        let asked = try XCTUnwrap(shown.request as? ASAuthorizationPlatformPublicKeyCredentialAssertionRequest)
        XCTAssertEqual(asked.allowedCredentials.map(\.credentialID), [Data([5])])
        XCTAssertEqual(asked.challenge, Data([4, 4]))
        XCTAssertEqual(asked.userVerificationPreference, .required)
    }

    func testAnAutoFillSignInUsesTheAutoFillAssistedRequest() async throws {
        ScriptedPasskeySheet.script { _ in .success(ASAuthorization(credential: Self.signed)) }
        _ = try await provider.assertPasskey(assertion(.autoFill, allowed: []))
        XCTAssertEqual(ScriptedPasskeySheet.shown.map(\.mode), [.autoFill])
    }

    /// The AutoFill request waits for the user's pick; the operation's task cancelled ends it with `cancelled`.
    func testCancellingTheTaskCancelsAWaitingSheet() async throws {
        let provider = self.provider
        let request = assertion(.autoFill, allowed: [])
        let task = Task { () -> PasskeyFailure? in
            do throws(PasskeyFailure) {
                _ = try await provider.assertPasskey(request)
                return nil
            } catch { return error }
        }
        while ScriptedPasskeySheet.shown.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        task.cancel()
        let failure = await task.value
        XCTAssertEqual(failure?.kind, .cancelled)
    }

    func testEachOfApplesCodesBecomesTheSDKsFailure() async {
        let cases: [(ASAuthorizationError, PasskeyFailure.Kind)] = [
            (ASAuthorizationError(.canceled), .cancelled), (ASAuthorizationError(.notInteractive), .noCredential),
            (ASAuthorizationError(.matchedExcludedCredential), .alreadyRegistered),
            (ASAuthorizationError(.failed, text: "Application with identifier X is not associated with domain bank.example"), .failed),
            (ASAuthorizationError(.unknown), .failed),
        ]
        for (apple, kind) in cases {
            ScriptedPasskeySheet.script { _ in .failure(apple) }
            do throws(PasskeyFailure) {
                _ = try await provider.createPasskey(creation)
                XCTFail("\(apple.code) was not a failure")
            } catch {
                XCTAssertEqual(error.kind, kind, "\(apple.code)")
                if apple.code == .failed { XCTAssertTrue(error.reason.contains("not associated with domain"), error.reason) }
            }
        }
    }

    func testAnAnswerOfTheWrongKindIsAFailureNotACrash() async {
        ScriptedPasskeySheet.script { _ in .success(ASAuthorization(credential: Self.signed)) }
        do throws(PasskeyFailure) {
            _ = try await provider.createPasskey(creation)
            XCTFail("an assertion was taken for a new passkey")
        } catch {
            XCTAssertEqual(error.kind, .failed)
        }
        let bare = ASAuthorizationPlatformPublicKeyCredentialRegistration(
            rawAttestationObject: nil, rawClientDataJSON: Data(), credentialID: Data([1]))
        ScriptedPasskeySheet.script { _ in .success(ASAuthorization(credential: bare)) }
        do throws(PasskeyFailure) {
            _ = try await provider.createPasskey(creation)
            XCTFail("a passkey without an attestation object was taken")
        } catch {
            XCTAssertEqual(error.reason, "the platform's new passkey carries no attestation object")
        }
    }
}
#endif
