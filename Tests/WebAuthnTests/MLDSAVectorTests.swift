import CBOR
import FIDOSimulation
import Foundation
import Primitives
import TestSupport
import WebAuthn
import XCTest

/// ML-DSA passkeys (COSE -49, -50) made by an independent implementation, Python's cryptography over OpenSSL
/// (`Tests/Interop/mldsa_vectors.py` wrote the fixtures in `MLDSAVectors`): each registration and assertion verifies
/// through the whole ceremony, and changing one field of either is refused. ML-DSA-44 is refused with its reason.
final class MLDSAVectorTests: XCTestCase {
    struct Vector {
        let name: String
        let alg: Int64
        let registration: [String: String]
        let authentication: [String: String]

        func bytes(_ part: [String: String], _ key: String) throws -> [UInt8] { try XCTUnwrap(part[key].flatMap(Hex.decode), "\(name) \(key)") }
    }

    static func vectors() throws -> [Vector] {
        try ["mldsa-65", "mldsa-87"].map { name in
            let url = try XCTUnwrap(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "MLDSAVectors"))
            let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
            return Vector(
                name: name, alg: try XCTUnwrap(json["alg"] as? Int).asInt64,
                registration: try XCTUnwrap(json["registration"] as? [String: String]),
                authentication: try XCTUnwrap(json["authentication"] as? [String: String]))
        }
    }

    let relyingParty = RelyingParty(id: "example.org", origins: ["https://example.org"])

    func register(
        _ vector: Vector, clientDataJSON: [UInt8]? = nil, attestationObject: [UInt8]? = nil, algorithms: [COSEAlgorithm]? = nil
    )
        async throws -> VerifiedRegistration
    {
        let algorithm = try XCTUnwrap(COSEAlgorithm(rawValue: vector.alg))
        return try await RegistrationCeremony(relyingParty: relyingParty).verify(
            RegistrationResponse(
                credentialID: try vector.bytes(vector.registration, "credentialId"),
                clientDataJSON: try clientDataJSON ?? vector.bytes(vector.registration, "clientDataJSON"),
                attestationObject: try attestationObject ?? vector.bytes(vector.registration, "attestationObject"), transports: []),
            expected: RegistrationExpectation(
                challenge: try vector.bytes(vector.registration, "challenge"), userVerification: .required, algorithms: algorithms ?? [algorithm]))
    }

    func signIn(
        _ vector: Vector, with registered: VerifiedRegistration, change: (inout AssertionResponse) -> Void = { _ in }
    ) throws
        -> VerifiedAssertion
    {
        var response = AssertionResponse(
            credentialID: registered.credentialID, clientDataJSON: try vector.bytes(vector.authentication, "clientDataJSON"),
            authenticatorData: try vector.bytes(vector.authentication, "authenticatorData"),
            signature: try vector.bytes(vector.authentication, "signature"), userHandle: nil)
        change(&response)
        return try AuthenticationCeremony(relyingParty: relyingParty).verify(
            response,
            expected: AssertionExpectation(
                challenge: try vector.bytes(vector.authentication, "challenge"), allowCredentials: [registered.credentialID],
                userVerification: .required),
            credential: StoredCredential(
                id: registered.credentialID, publicKey: registered.publicKey, userHandle: [], signCount: registered.signCount,
                backupEligible: registered.backupEligible))
    }

    func testAnIndependentRegistrationAndAssertionVerifyForEachParameterSet() async throws {
        for vector in try Self.vectors() {
            let registered = try await register(vector)
            XCTAssertEqual(registered.publicKey.algorithm.rawValue, vector.alg, vector.name)
            XCTAssertEqual(registered.publicKey.encoded, try vector.bytes(vector.registration, "credentialPublicKey"), vector.name)
            XCTAssertEqual(registered.attestation.type, .self, vector.name)
            XCTAssertNil(registered.publicKey.subjectPublicKeyInfo, "no SPKI is written for ML-DSA")
            let signedIn = try signIn(vector, with: registered)
            XCTAssertEqual(signedIn.signCount, 2, vector.name)
            XCTAssertTrue(signedIn.userVerified, vector.name)
        }
    }

    /// The generator run now (its signatures are hedged: new bytes each run), so the fixtures are not the only proof.
    func testWhatTheGeneratorWritesNowVerifies() async throws {
        let script = ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Tests/Interop/mldsa_vectors.py").path
        if case .skipped(let why) = try ExternalTool.require("python3 with cryptography's ML-DSA and cbor2", probe: ["python3", script, "check"]) {
            throw XCTSkip(why)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mldsa-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = try ExternalProgram.run(["python3", script, "write", directory.path])
        XCTAssertEqual(output.status, 0, output.stderr)
        for name in ["mldsa-65", "mldsa-87"] {
            let json = try XCTUnwrap(
                try JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent("\(name).json"))) as? [String: Any])
            let vector = Vector(
                name: name, alg: try XCTUnwrap(json["alg"] as? Int).asInt64,
                registration: try XCTUnwrap(json["registration"] as? [String: String]),
                authentication: try XCTUnwrap(json["authentication"] as? [String: String]))
            let registered = try await register(vector)
            XCTAssertEqual(try signIn(vector, with: registered).signCount, 2, name)
        }
    }

    func testOneChangedFieldOfAnAssertionIsRefused() async throws {
        for vector in try Self.vectors() {
            let registered = try await register(vector)
            let changes: [(String, (inout AssertionResponse) -> Void)] = [
                ("a signature byte", { $0.signature[100] ^= 0x01 }),
                ("the signature's length", { $0.signature.removeLast() }),
                ("the counter", { $0.authenticatorData[36] ^= 0x01 }),
                ("the UV flag", { $0.authenticatorData[32] &= ~0x04 }),
                ("the RP ID hash", { $0.authenticatorData[0] ^= 0x01 }),
                (
                    "the client data",
                    {
                        $0.clientDataJSON = Array(
                            String(decoding: $0.clientDataJSON, as: UTF8.self).replacingOccurrences(of: "false", with: "true ").utf8)
                    }
                ),
            ]
            for (what, change) in changes {
                XCTAssertThrowsError(try signIn(vector, with: registered, change: change), "\(vector.name): \(what)")
            }
        }
    }

    func testOneChangedFieldOfARegistrationIsRefused() async throws {
        for vector in try Self.vectors() {
            var object = try vector.bytes(vector.registration, "attestationObject")
            object[object.count / 2] ^= 0x01  // inside the attestation signature, which precedes authData in canonical order
            await XCTAssertThrowsErrorAsync(try await register(vector, attestationObject: object), "\(vector.name): the attestation signature")
            var data = try vector.bytes(vector.registration, "clientDataJSON")
            data[data.count - 3] ^= 0x01
            await XCTAssertThrowsErrorAsync(try await register(vector, clientDataJSON: data), "\(vector.name): the client data")
            await XCTAssertThrowsErrorAsync(try await register(vector, algorithms: [.es256]), "\(vector.name): an algorithm not offered")
            // The key's alg says the other parameter set: the public key's length does not fit it.
            let other: Int64 = vector.alg == -49 ? -50 : -49
            let key = try vector.bytes(vector.registration, "credentialPublicKey")
            var cbor = try XCTUnwrap(try CBORDecoder().decode(key).map)
            cbor = CBORMap(cbor.entries.map { $0.key == .int(3) ? .init(.int(3), .int(other)) : $0 })
            XCTAssertThrowsError(try COSEKey(bytes: CBOREncoder.encode(.map(cbor))), vector.name)
        }
    }

    func testMLDSA44IsRefusedWithItsReason() throws {
        let key = CBOREncoder.encode(
            .map(CBORMap([.init(.int(1), .int(7)), .init(.int(3), .int(-48)), .init(.int(-1), .bytes(Array(repeating: 1, count: 1312)))])))
        XCTAssertThrowsError(try COSEKey(bytes: key)) { error in
            XCTAssertEqual((error as? COSEKeyError)?.reason, .algorithmUnavailable(-48))
            XCTAssertTrue("\(error)".contains("ML-DSA-44: swift-crypto has none"), "\(error)")
        }
    }

    func testAnMLDSAKeyWithPrivateMaterialOrAWrongLengthIsRefused() throws {
        for (alg, length) in [(Int64(-49), 1952), (-50, 2592)] {
            let pub = [UInt8](repeating: 7, count: length)
            let withPrivate = CBOREncoder.encode(
                .map(CBORMap([.init(.int(1), .int(7)), .init(.int(3), .int(alg)), .init(.int(-1), .bytes(pub)), .init(.int(-2), .bytes([1]))])))
            XCTAssertThrowsError(try COSEKey(bytes: withPrivate)) { XCTAssertEqual(($0 as? COSEKeyError)?.reason, .privateKeyMaterial) }
            let short = CBOREncoder.encode(
                .map(CBORMap([.init(.int(1), .int(7)), .init(.int(3), .int(alg)), .init(.int(-1), .bytes(Array(pub.dropLast())))])))
            XCTAssertThrowsError(try COSEKey(bytes: short)) {
                XCTAssertEqual(($0 as? COSEKeyError)?.reason, .coordinateLength(label: -1, length: length - 1))
            }
            let wrongType = CBOREncoder.encode(.map(CBORMap([.init(.int(1), .int(1)), .init(.int(3), .int(alg)), .init(.int(-1), .bytes(pub))])))
            XCTAssertThrowsError(try COSEKey(bytes: wrongType)) {
                XCTAssertEqual(($0 as? COSEKeyError)?.reason, .keyTypeMismatch(keyType: 1, algorithm: alg))
            }
        }
    }
}

extension Int {
    fileprivate var asInt64: Int64 { Int64(self) }
}

/// `XCTAssertThrowsError` for an `async` expression.
func XCTAssertThrowsErrorAsync<T>(
    _ expression: @autoclosure () async throws -> T, _ message: String, file: StaticString = #filePath, line: UInt = #line
) async {
    do {
        _ = try await expression()
        XCTFail("did not throw: \(message)", file: file, line: line)
    } catch {}
}
