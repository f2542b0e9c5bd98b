import AppAttestation
import Crypto
import FIDOSimulation
import Foundation
import JOSE
import Primitives
import TestSupport
import XCTest

/// Play Integrity verdict tokens (local decryption) made with our own keys: a valid token verifies, and each
/// change of one field is refused with its reason; a token jwcrypto makes verifies too.
final class PlayIntegrityTests: XCTestCase {
    let google = SoftwarePlayIntegrity()
    let digest = "8P1sW0EPJcslw7UzRsiXL64w-O50Ed-RBICtay1g24M"
    let requestHash = "2cp24z-JtaBvhb1JDOD4uT9CiKjBUCKnnRlstLpYWKE"
    let now = Date(timeIntervalSince1970: 1_790_000_000)
    var verdicts: SoftwarePlayIntegrity.Verdicts { .init(packageName: "ch.example.bank", certificateSha256Digests: [digest]) }
    var requirements: PlayIntegrity.Requirements { .init(packageName: "ch.example.bank", certificateSha256Digests: [digest]) }

    func verify(
        _ token: String, requirements: PlayIntegrity.Requirements? = nil, requestHash: String? = nil, decryptionKey: SymmetricKey? = nil,
        verificationKey: P256.Signing.PublicKey? = nil
    ) -> PlayIntegrityError.Reason? {
        let verifier = PlayIntegrity(
            decryptionKey: decryptionKey ?? google.decryptionKey, verificationKey: verificationKey ?? google.signingKey.publicKey,
            requirements: requirements ?? self.requirements)
        do {
            _ = try verifier.verify(token, requestHash: requestHash ?? self.requestHash, at: now)
            return nil
        } catch { return error.reason }
    }

    func token(_ change: (inout SoftwarePlayIntegrity.Verdicts) -> Void = { _ in }, at timestamp: Date? = nil) throws -> String {
        var verdicts = self.verdicts
        change(&verdicts)
        return try google.token(verdicts, requestHash: requestHash, timestamp: timestamp ?? now.addingTimeInterval(-5))
    }

    func testAValidTokenVerifiesWithItsVerdicts() throws {
        let verdict = try PlayIntegrity(decryptionKey: google.decryptionKey, verificationKey: google.signingKey.publicKey, requirements: requirements)
            .verify(try token(), requestHash: requestHash, at: now)
        XCTAssertEqual(verdict.appRecognitionVerdict, "PLAY_RECOGNIZED")
        XCTAssertEqual(verdict.deviceRecognitionVerdict, ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY"])
        XCTAssertEqual(verdict.appLicensingVerdict, "LICENSED")
    }

    func testATokenUnderAnotherDecryptionKeyIsRefused() throws {
        XCTAssertEqual(verify(try token(), decryptionKey: SymmetricKey(size: .bits256)), .undecryptable)
    }

    func testATokenSignedByAnotherKeyIsRefused() throws {
        XCTAssertEqual(verify(try token(), verificationKey: P256.Signing.PrivateKey().publicKey), .signatureInvalid)
    }

    func testATokenForAnotherRequestIsRefused() throws {
        XCTAssertEqual(verify(try token(), requestHash: "another-operation"), .requestHashMismatch)
    }

    func testATokenOfAnotherPackageIsRefused() throws {
        XCTAssertEqual(verify(try token { $0.packageName = "com.attacker.bank" }), .packageNotAccepted("com.attacker.bank"))
    }

    func testATokenOfAnAppSignedWithAnotherCertificateIsRefused() throws {
        XCTAssertEqual(verify(try token { $0.certificateSha256Digests = ["bm90IHRoZSBiYW5rJ3MgY2VydGlmaWNhdGUgZGlnZXN0"] }), .certificateNotAccepted)
    }

    func testATokenOfAnAppPlayDoesNotRecognizeIsRefused() throws {
        XCTAssertEqual(verify(try token { $0.appRecognitionVerdict = "UNRECOGNIZED_VERSION" }), .appNotRecognized("UNRECOGNIZED_VERSION"))
    }

    func testADeviceBelowTheRequiredIntegrityIsRefused() throws {
        let reason = verify(try token { $0.deviceRecognitionVerdict = ["MEETS_BASIC_INTEGRITY"] })
        XCTAssertEqual(reason, .deviceIntegrityInsufficient(["MEETS_BASIC_INTEGRITY"]))
        var strong = requirements
        strong.deviceIntegrity = "MEETS_STRONG_INTEGRITY"
        XCTAssertEqual(verify(try token(), requirements: strong), .deviceIntegrityInsufficient(["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY"]))
        XCTAssertNil(verify(try token { $0.deviceRecognitionVerdict = ["MEETS_STRONG_INTEGRITY"] }), "a stronger level meets a weaker one")
    }

    func testAnUnlicensedUserIsRefusedOnlyWhereALicenceIsRequired() throws {
        let unlicensed = try token { $0.appLicensingVerdict = "UNLICENSED" }
        XCTAssertNil(verify(unlicensed))
        var licensed = requirements
        licensed.licensed = true
        XCTAssertEqual(verify(unlicensed, requirements: licensed), .notLicensed("UNLICENSED"))
    }

    func testAStaleTokenIsRefused() throws {
        XCTAssertEqual(verify(try token(at: now.addingTimeInterval(-121))), .stale(ageSeconds: 121))
    }

    func testATokenFromTheFutureIsRefused() throws {
        XCTAssertEqual(verify(try token(at: now.addingTimeInterval(61))), .fromTheFuture(aheadSeconds: 61))
    }

    func testAPayloadWithoutItsVerdictsIsRefused() throws {
        let jws = try JWS.sign(Array(#"{"requestDetails":{}}"#.utf8), key: google.signingKey)
        let token = try KeyWrappedJWE.encrypt(Array(jws.utf8), key: google.decryptionKey)
        XCTAssertEqual(verify(token), .malformed("the payload lacks requestDetails, appIntegrity or deviceIntegrity"))
        XCTAssertEqual(verify(String(repeating: "A", count: PlayIntegrity.maximumTokenBytes + 1)), .malformed("the token is larger than 16384 bytes"))
    }

    /// jwcrypto (PyPI) signs the payload with ES256 and wraps it with A256KW + A256GCM, as Google's servers do.
    func testATokenJwcryptoMakesVerifies() throws {
        let script = ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Tests/Interop/jose_interop.py").path
        if case .skipped(let why) = try ExternalTool.require("python3 with jwcrypto", probe: ["python3", script, "check"]) { throw XCTSkip(why) }
        let raw = Array(google.signingKey.publicKey.x963Representation)
        let ec =
            #"{"kty":"EC","crv":"P-256","x":"\#(Base64URL.encode(raw[1..<33]))","y":"\#(Base64URL.encode(raw[33..<65]))","d":"\#(Base64URL.encode(Array(google.signingKey.rawRepresentation)))"}"#
        let oct = #"{"kty":"oct","k":"\#(google.decryptionKey.withUnsafeBytes { Base64URL.encode(Array($0)) })"}"#
        let payload = String(decoding: try SoftwarePlayIntegrity.payload(verdicts, requestHash: requestHash, timestamp: now), as: UTF8.self)
        func peer(_ arguments: String...) throws -> String {
            let output = try ExternalProgram.run(["python3", script] + arguments)
            guard output.status == 0 else { throw ExternalProgram.Failure("jwcrypto failed: \(output.stderr)") }
            return output.stdout
        }
        let token = try peer("wrap-jwe", oct, try peer("sign-jws", ec, payload))
        XCTAssertNil(verify(token))
        XCTAssertEqual(verify(token, requestHash: "another-operation"), .requestHashMismatch)
    }
}
