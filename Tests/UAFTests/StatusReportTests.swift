import Crypto
import FIDOAttestation
import Foundation
import Primitives
import XCTest

@testable import UAF

/// The Metadata Service's status reports: which refuse a registration or an authentication (1493), from when, and
/// for which attestation certificate.
final class StatusReportTests: XCTestCase {
    let key = P256.Signing.PrivateKey()
    let now = Date()

    func metadata(_ reports: [StatusReport], aaid: String = "F1D0#1001", statements: [MetadataStatement] = testMetadata.all) throws -> UAFMetadata {
        try UAFMetadata(statements, statusReports: [aaid: reports])
    }

    func register(_ metadata: UAFMetadata) async throws {
        let builder = TestRegistrationBuilder()
        _ = try await RegistrationVerifier(configuration: testConfiguration, metadata: metadata)
            .verify(try builder.build(), issued: builder.issued, now: now) { _, _ in false }
    }

    func authenticate(_ metadata: UAFMetadata) async throws {
        let builder = TestAuthenticationBuilder(key: key)
        _ = try await AuthenticationVerifier(configuration: testConfiguration, metadata: metadata)
            .verify(try builder.build(), issued: TestAuthenticationBuilder.issued(), now: now) { _, _ in builder.registered() }
    }

    // MARK: Registration

    func testARevokedAuthenticatorRegistersNoKey() async throws {
        let metadata = try metadata([StatusReport(status: .fidoCertified), StatusReport(status: .revoked)])
        await assertRejected(.authenticatorRevoked(aaid: "F1D0#1001", status: .revoked), status: .revokedAuthenticator) {
            try await self.register(metadata)
        }
    }

    func testEachCompromiseRefusesRegistration() async throws {
        for status in [AuthenticatorStatus.userVerificationBypass, .attestationKeyCompromise, .userKeyRemoteCompromise, .userKeyPhysicalCompromise] {
            let metadata = try metadata([StatusReport(status: status)])
            await assertRejected(.authenticatorRevoked(aaid: "F1D0#1001", status: status), status: .revokedAuthenticator) {
                try await self.register(metadata)
            }
        }
    }

    func testAReportNamedInLowerCaseAAIDStillApplies() async throws {
        let metadata = try metadata([StatusReport(status: .revoked)], aaid: "f1d0#1001")
        await assertRejected(status: .revokedAuthenticator) { try await self.register(metadata) }
    }

    func testARevocationNotYetInForceLetsTheKeyRegister() async throws {
        try await register(try metadata([StatusReport(status: .revoked, effectiveDate: now.addingTimeInterval(86400))]))
    }

    func testStatusesThatPromiseNothingBadLetTheKeyRegister() async throws {
        let harmless: [AuthenticatorStatus] = [
            .fidoCertified, .notFIDOCertified, .updateAvailable, AuthenticatorStatus(rawValue: "FIDO_CERTIFIED_L3"),
            AuthenticatorStatus(rawValue: "A_STATUS_FROM_THE_FUTURE"),
        ]
        try await register(try metadata(harmless.map { StatusReport(status: $0) }))
    }

    /// Reports are read by effective date, not in the service's order: the latest in force is the model's status.
    func testARevocationANewerReportSupersededNoLongerRefuses() async throws {
        let revoked = StatusReport(status: .userVerificationBypass, effectiveDate: now.addingTimeInterval(-86400 * 60))
        let certifiedAgain = StatusReport(status: .fidoCertified, effectiveDate: now.addingTimeInterval(-86400 * 30))
        // Listed newest first, as a service may: before, the refusal listed after it still refused.
        try await register(try metadata([certifiedAgain, revoked]))
        try await authenticate(try metadata([certifiedAgain, revoked]))
        try await register(try metadata([revoked, certifiedAgain]))
    }

    func testARevocationNewerThanTheCertificationRefusesInAnyOrder() async throws {
        let certified = StatusReport(status: .fidoCertified, effectiveDate: now.addingTimeInterval(-86400 * 60))
        let revoked = StatusReport(status: .revoked, effectiveDate: now.addingTimeInterval(-86400))
        for reports in [[certified, revoked], [revoked, certified]] {
            await assertRejected(status: .revokedAuthenticator) { try await self.register(try self.metadata(reports)) }
            await assertRejected(status: .revokedAuthenticator) { try await self.authenticate(try self.metadata(reports)) }
        }
    }

    /// A certification dated in the future does not supersede a revocation in force today.
    func testACertificationNotYetInForceDoesNotSupersede() async throws {
        let revoked = StatusReport(status: .revoked, effectiveDate: now.addingTimeInterval(-86400))
        let later = StatusReport(status: .fidoCertified, effectiveDate: now.addingTimeInterval(86400))
        await assertRejected(status: .revokedAuthenticator) { try await self.register(try self.metadata([revoked, later])) }
    }

    /// An undated refusal (or one whose date could not be read) has no time to order by: nothing supersedes it.
    func testAnUndatedRevocationIsNeverSuperseded() async throws {
        let reports = [StatusReport(status: .fidoCertified, effectiveDate: now.addingTimeInterval(-86400)), StatusReport(status: .revoked)]
        await assertRejected(status: .revokedAuthenticator) { try await self.register(try self.metadata(reports)) }
        await assertRejected(status: .revokedAuthenticator) { try await self.authenticate(try self.metadata(reports)) }
    }

    func testAReportOnAnotherAuthenticatorDoesNotApply() async throws {
        try await register(try metadata([StatusReport(status: .revoked)], aaid: "ABCD#ABCD"))
    }

    func testACompromisedAttestationCertificateRefusesOnlyAttestationsCarryingIt() async throws {
        let root = try FullAttestationTests.makeRoot(name: "Vendor Root")
        let (compromisedKey, compromised) = try FullAttestationTests.makeAttestation(issuer: root)
        let (soundKey, sound) = try FullAttestationTests.makeAttestation(issuer: root)
        let statement = try FullAttestationTests.metadata(roots: [root]).all
        let metadata = try metadata(
            [StatusReport(status: .attestationKeyCompromise, certificate: compromised)], aaid: "F1D0#2001", statements: statement)
        let verifier = RegistrationVerifier(configuration: testConfiguration, metadata: metadata)
        _ = try await verifier.verify(
            try FullAttestationTests.response(attestationKey: soundKey, chain: [sound]), issued: FullAttestationTests.issued,
            now: now, isRegistered: { _, _ in false })
        await assertRejected(.authenticatorRevoked(aaid: "F1D0#2001", status: .attestationKeyCompromise), status: .revokedAuthenticator) {
            _ = try await verifier.verify(
                try FullAttestationTests.response(attestationKey: compromisedKey, chain: [compromised]),
                issued: FullAttestationTests.issued, now: self.now, isRegistered: { _, _ in false })
        }
    }

    func testACertificateSpecificReportDoesNotRefuseSurrogateAttestation() async throws {
        try await register(try metadata([StatusReport(status: .revoked, certificate: [0x30, 0x03, 0x02, 0x01, 0x01])]))
    }

    // MARK: Authentication

    func testARevokedAuthenticatorAuthenticatesNoOne() async throws {
        let metadata = try metadata([StatusReport(status: .revoked)])
        await assertRejected(.authenticatorRevoked(aaid: "F1D0#1001", status: .revoked), status: .revokedAuthenticator) {
            try await self.authenticate(metadata)
        }
    }

    func testCompromisedUserKeysAuthenticateNoOne() async throws {
        for status in [AuthenticatorStatus.userKeyRemoteCompromise, .userKeyPhysicalCompromise, .userVerificationBypass] {
            let metadata = try metadata([StatusReport(status: status)])
            await assertRejected(status: .revokedAuthenticator) { try await self.authenticate(metadata) }
        }
    }

    func testACompromisedAttestationKeyLeavesRegisteredKeysWorking() async throws {
        try await authenticate(try metadata([StatusReport(status: .attestationKeyCompromise)]))
    }

    func testARevocationNotYetInForceLetsTheKeyAuthenticate() async throws {
        try await authenticate(try metadata([StatusReport(status: .revoked, effectiveDate: now.addingTimeInterval(60))]))
    }

    // MARK: The store

    func testAReportForAnInvalidAAIDIsAnError() {
        XCTAssertThrowsError(try metadata([StatusReport(status: .revoked)], aaid: "F1D0-1001")) { error in
            XCTAssertEqual(error as? UAFMetadata.LoadError, .invalidAAID("F1D0-1001"))
        }
    }
}
