import Crypto
import FIDOSimulation
import Foundation
import SwiftASN1
import TestSupport
import WebAuthn
import X509
import XCTest

/// The certificate revocation list reader against lists Python's cryptography writes (an independent writer): what
/// it reads, whose signature it accepts, and what it refuses.
final class RevocationListTests: XCTestCase {
    static let script = ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Tests/Interop/crl_interop.py").path
    var directory: URL!

    override func setUpWithError() throws {
        if case .skipped(let why) = try ExternalTool.require("python3 with cryptography", probe: ["python3", Self.script, "check"]) {
            throw XCTSkip(why)
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-crl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    /// Python's list of `ca` revoking `serials`, as the PEM file it writes.
    func written(by ca: TestCA, revoking serials: [[UInt8]]) throws -> [UInt8] {
        let cert = directory.appendingPathComponent("ca.pem")
        let key = directory.appendingPathComponent("ca-key.pem")
        let out = directory.appendingPathComponent("crl.pem")
        try Data(try ca.certificate.serializeAsPEM().pemString.utf8).write(to: cert)
        try Data(ca.key.pemRepresentation.utf8).write(to: key)
        let run = try ExternalProgram.run(
            ["python3", Self.script, "write", cert.path, key.path, out.path] + serials.map { $0.map { String(format: "%02x", $0) }.joined() })
        XCTAssertEqual(run.status, 0, run.stderr)
        return Array(try Data(contentsOf: out))
    }

    func testAListReadsItsIssuerDatesAndSerialNumbers() throws {
        let ca = try TestCA()
        let lists = try RevocationList.lists(in: try written(by: ca, revoking: [[0x7A, 0x01], [0x80, 0x00], [0x00, 0x05]]))
        XCTAssertEqual(lists.count, 1)
        let list = try XCTUnwrap(lists.first)
        XCTAssertEqual(list.issuer, ca.certificate.subject)
        XCTAssertEqual(list.thisUpdate.timeIntervalSinceNow, -300, accuracy: 60)
        XCTAssertEqual(try XCTUnwrap(list.nextUpdate).timeIntervalSince(list.thisUpdate), 7 * 86_400 + 300, accuracy: 2)
        // INTEGER contents: a leading zero where the top bit is set, none where it is redundant.
        XCTAssertEqual(list.revokedSerialNumbers, [[0x7A, 0x01], [0x00, 0x80, 0x00], [0x05]])
        XCTAssertTrue(list.isSigned(by: ca.certificate))
    }

    func testAListSignedByAnotherKeyIsNotTheIssuers() throws {
        let ca = try TestCA()
        let list = try XCTUnwrap(try RevocationList.lists(in: try written(by: ca, revoking: [[1]])).first)
        XCTAssertFalse(list.isSigned(by: try TestCA().certificate), "another CA of the same name")
    }

    func testAListWithOneChangedByteDoesNotVerify() throws {
        let ca = try TestCA()
        let pem = String(decoding: try written(by: ca, revoking: [[1]]), as: UTF8.self)
        var der = try PEMDocument(pemString: pem).derBytes
        // A byte of the issuer's name inside tbsCertList.
        let index = try XCTUnwrap(der.firstIndex(of: UInt8(ascii: "m")))
        der[index] ^= 0x01
        let changed = try RevocationList(derEncoded: der)
        XCTAssertFalse(changed.isSigned(by: ca.certificate))
    }

    /// Found by the `crl` fuzz target (kept in `Fuzz/regressions/crl`): an entry whose serial number INTEGER has no
    /// content was read as a serial number.
    func testAnEntryWhoseSerialNumberIsNoDERIntegerIsRefused() throws {
        let finding = ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Fuzz/regressions/crl/empty-serial-number")
        let bytes = Array(try Data(contentsOf: finding))
        XCTAssertThrowsError(try RevocationList(derEncoded: bytes)) { error in
            XCTAssertEqual((error as? RevocationList.ReadError)?.reason, "a revoked certificate's serial number is not a DER INTEGER")
        }
    }

    func testBytesThatAreNoListAreRefused() {
        for bytes: [UInt8] in [[], [0x30, 0x00], [0x02, 0x01, 0x01], Array(repeating: 0x30, count: 40)] {
            XCTAssertThrowsError(try RevocationList(derEncoded: bytes), "\(bytes.prefix(8))")
        }
    }
}
