import Foundation
import SwiftASN1
import X509
import XCTest
@testable import UAFServer

final class DevelopmentCertificateTests: XCTestCase {
    func testTheDevelopmentCertificateIsNotACertificateAuthority() throws {
        let generated = try DevelopmentCertificate.generate(hosts: ["localhost", "127.0.0.1"])
        let certificate = try Certificate(pemEncoded: generated.certificatePEM)
        let constraints = try XCTUnwrap(try certificate.extensions.basicConstraints)
        XCTAssertEqual(constraints, .notCertificateAuthority)
        let usage = try XCTUnwrap(try certificate.extensions.keyUsage)
        XCTAssertFalse(usage.keyCertSign)
        XCTAssertTrue(usage.digitalSignature)
        // The leaf is issued by the one-off trust anchor clients are given.
        let anchor = try Certificate(pemEncoded: generated.trustAnchorPEM)
        XCTAssertEqual(certificate.issuer, anchor.subject)
        XCTAssertTrue(anchor.publicKey.isValidSignature(certificate.signature, for: certificate))
    }

    func testTheDevelopmentCertificateNamesItsHosts() throws {
        let generated = try DevelopmentCertificate.generate(hosts: ["localhost", "127.0.0.1"])
        let names = try XCTUnwrap(try Certificate(pemEncoded: generated.certificatePEM).extensions.subjectAlternativeNames)
        XCTAssertTrue(names.contains(.dnsName("localhost")))
        XCTAssertTrue(names.contains(.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))))
    }
}
