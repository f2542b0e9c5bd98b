import FIDOSimulation
import Foundation
import TestSupport
import WebAuthn
import XCTest

/// COSE keys and signatures made by an independent implementation (Python's cryptography, keys written by cbor2,
/// both installed by `.ci/run`) verify with ours, for every algorithm; one changed byte does not.
final class COSEInteroperabilityTests: XCTestCase {
    private var script: String {
        ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Tests/Interop/cose_interop.py").path
    }

    override func setUpWithError() throws {
        if case .skipped(let why) = try ExternalTool.require("python3 with cryptography and cbor2", probe: ["python3", script, "check"]) {
            throw XCTSkip(why)
        }
    }

    func testEveryAlgorithmVerifiesWhatPythonsCryptographySigned() throws {
        let output = try ExternalProgram.run(["python3", script, "sign"])
        XCTAssertEqual(output.status, 0, output.stderr)
        var algorithms: Set<Int64> = []
        for line in output.stdout.split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            let bytes = fields.dropFirst().map { WebAuthnVectorTests.Vector.bytes($0) ?? [] }
            let key = try COSEKey(bytes: bytes[0])
            XCTAssertEqual(key.algorithm.rawValue, Int64(fields[0]))
            XCTAssertTrue(key.isValidSignature(bytes[2], for: bytes[1]), "alg \(fields[0])")
            var tampered = bytes[2]
            tampered[tampered.count - 1] ^= 0x80
            XCTAssertFalse(key.isValidSignature(tampered, for: bytes[1]), "alg \(fields[0]) with a changed signature")
            algorithms.insert(key.algorithm.rawValue)
        }
        XCTAssertEqual(algorithms, Set(COSEAlgorithm.allCases.map(\.rawValue)))
    }
}
