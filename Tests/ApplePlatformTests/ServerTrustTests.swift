#if APPLE_FRAMEWORKS_SHIM
import AppleFrameworksShim
import Crypto
import Foundation
import MobileAuthenticationCore
import SwiftASN1
import X509
import XCTest

/// The URLSession transport's trust decision (`ServerTrust`, compiled from its own source file against the shimmed
/// `SecTrust`, whose evaluation is swift-certificates' verifier under Apple's documented anchor rules): which server
/// chains the debug flavor's roots make good, and that the release flavor leaves the decision to the system.
/// Synchronous tests: `SecTrustEvaluateWithError` blocks, off Swift's cooperative pool, as on a device.
final class ServerTrustTests: XCTestCase {
    private let device = ScriptedAppleDevice()
    private var developmentRoot: Authority!
    private var developmentServer: [SecCertificate]!

    override func setUpWithError() throws {
        ScriptedAppleDevice.current = device
        developmentRoot = try Authority(name: "development root")
        developmentServer = try developmentRoot.chain(for: ["localhost", "127.0.0.1", "192.168.1.20"])
    }

    private func trust(_ chain: [SecCertificate], host: String) throws -> SecTrust {
        var trust: SecTrust?
        XCTAssertEqual(SecTrustCreateWithCertificates(chain as CFArray, SecPolicyCreateSSL(true, host as CFString), &trust), errSecSuccess)
        return try XCTUnwrap(trust)
    }

    private func debugAnchors(_ authorities: Authority...) throws -> [Data] {
        try TransportSecurity.debug(trustedCertificatesPEM: authorities.map { try $0.pem() }).additionalAnchors(in: .debug)
    }

    func testTheDebugFlavorsRootTrustsTheDevelopmentServer() throws {
        XCTAssertEqual(
            ServerTrust.decide(try trust(developmentServer, host: "192.168.1.20"), addingAnchors: try debugAnchors(developmentRoot)), .trusted)
    }

    func testAnotherRootDoesNotTrustTheDevelopmentServer() throws {
        let decision = ServerTrust.decide(
            try trust(developmentServer, host: "127.0.0.1"), addingAnchors: try debugAnchors(try Authority(name: "other")))
        guard case .refused(let reason) = decision else { return XCTFail("\(decision)") }
        XCTAssertTrue(reason.hasPrefix("the server's certificate is not trusted"), reason)
    }

    func testTheDebugRootDoesNotVouchForAHostTheCertificateDoesNotName() throws {
        let decision = ServerTrust.decide(try trust(developmentServer, host: "192.168.1.21"), addingAnchors: try debugAnchors(developmentRoot))
        guard case .refused = decision else { return XCTFail("\(decision)") }
    }

    /// The roots are added to the system's, not put in their place: a debug build still reaches a public server.
    func testTheSystemsRootsStayTrustedBesideTheDebugRoots() throws {
        let publicRoot = try Authority(name: "public root")
        device.systemRoots = [publicRoot.certificate]
        let bank = try publicRoot.chain(for: ["bank.example"])
        XCTAssertEqual(ServerTrust.decide(try trust(bank, host: "bank.example"), addingAnchors: try debugAnchors(developmentRoot)), .trusted)
    }

    func testTheReleaseFlavorLeavesTheDecisionToTheSystem() throws {
        let anchors = try TransportSecurity.release.additionalAnchors(in: .release)
        XCTAssertEqual(ServerTrust.decide(try trust(developmentServer, host: "127.0.0.1"), addingAnchors: anchors), .systemDefault)
    }

    func testTheReleaseFlavorRefusesTheDebugRoots() throws {
        let security = TransportSecurity.debug(trustedCertificatesPEM: [try developmentRoot.pem()])
        XCTAssertThrowsError(try security.additionalAnchors(in: .release)) { error in
            guard case .insecure(let reason) = error as? TransportFailure else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.hasPrefix("the release flavor trusts only the system's roots"), reason)
        }
    }
}

/// A root and the servers it issues for, with swift-certificates.
private struct Authority {
    let key = P256.Signing.PrivateKey()
    let certificate: Certificate

    init(name: String) throws {
        let subject = try DistinguishedName { CommonName(name) }
        certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey), notValidBefore: Date() - 300,
            notValidAfter: Date() + 86400, issuer: subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            }, issuerPrivateKey: .init(key))
    }

    func pem() throws -> String { try certificate.serializeAsPEM().pemString }

    /// A server's chain: its leaf for `hosts` (DNS names or IPv4 addresses).
    func chain(for hosts: [String]) throws -> [SecCertificate] {
        let names = hosts.map { host -> GeneralName in
            let octets = host.split(separator: ".").compactMap { UInt8($0) }
            return octets.count == 4 ? .ipAddress(ASN1OctetString(contentBytes: ArraySlice(octets))) : .dnsName(host)
        }
        let leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(P256.Signing.PrivateKey().publicKey),
            notValidBefore: Date() - 300, notValidAfter: Date() + 86400, issuer: certificate.subject,
            subject: try DistinguishedName { CommonName("server") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
            }, issuerPrivateKey: .init(key))
        var serializer = DER.Serializer()
        try serializer.serialize(leaf)
        return [try XCTUnwrap(SecCertificateCreateWithData(nil, Data(serializer.serializedBytes) as CFData))]
    }
}
#endif
