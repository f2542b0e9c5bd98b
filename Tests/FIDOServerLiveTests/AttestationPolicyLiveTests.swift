import CBOR
import Crypto
import FIDOServerTesting
import FIDOSimulation
import Foundation
import NevisProtocol
import Primitives
import SwiftASN1
import TestSupport
import X509
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The attestation policies on a real server over TLS, with the operator's root in a PEM file on disk: the
/// `conformance` policy takes `none` and self attestation and refuses every presented chain that does not reach the
/// root now (a rogue root, an expired leaf, a leaf not yet valid); every policy's options ask the browser for the
/// attestation it needs.
final class AttestationPolicyLiveTests: XCTestCase {
    static let origin = PasskeyLiveTests.origin

    /// An operator's attestation root, and the packed statements it (or another) issues.
    struct Root {
        let key = P256.Signing.PrivateKey()
        let certificate: Certificate

        init(name: String) throws {
            let subject = try DistinguishedName {
                CommonName(name)
                OrganizationName("mauth tests")
            }
            certificate = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: Date().addingTimeInterval(-86_400 * 30),
                notValidAfter: Date().addingTimeInterval(86_400 * 365), issuer: subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try .init {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    Critical(KeyUsage(keyCertSign: true))
                },
                issuerPrivateKey: .init(key))
        }

        func pem() throws -> String { try certificate.serializeAsPEM().pemString }

        /// `credential` (a `none` registration) as a packed full attestation by a batch key this root certifies,
        /// valid from `notBefore` to `notAfter`: the statement signs authData ‖ SHA-256(clientDataJSON) (§8.2).
        func packed(
            _ credential: FIDO2API.Credential, notBefore: Date = Date().addingTimeInterval(-86_400),
            notAfter: Date = Date().addingTimeInterval(86_400),
            serial: [UInt8]? = nil
        ) throws -> FIDO2API.Credential {
            let batch = P256.Signing.PrivateKey()
            let subject = try DistinguishedName {
                CountryName("CH")
                OrganizationName("mauth tests")
                OrganizationalUnitName("Authenticator Attestation")
                CommonName("mauth test key")
            }
            let leaf = try Certificate(
                version: .v3, serialNumber: serial.map { .init(bytes: $0) } ?? .init(), publicKey: .init(batch.publicKey), notValidBefore: notBefore,
                notValidAfter: notAfter, issuer: certificate.subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try .init { Critical(BasicConstraints.notCertificateAuthority) }, issuerPrivateKey: .init(key))
            var serializer = DER.Serializer()
            try serializer.serialize(leaf)
            let object = try XCTUnwrap(
                try CBORDecoder(rules: .wellFormed).decode(try XCTUnwrap(Base64URL.decodeBytes(try XCTUnwrap(credential.response.attestationObject))))
                    .map)
            let authData = try XCTUnwrap(object[text: "authData"]?.bytes)
            let clientData = try XCTUnwrap(Base64URL.decodeBytes(credential.response.clientDataJSON))
            let signature = try batch.signature(for: authData + Array(SHA256.hash(data: clientData)))
            let statement = CBOR.map(
                CBORMap([
                    .init(.text("alg"), .int(-7)), .init(.text("sig"), .bytes(Array(signature.derRepresentation))),
                    .init(.text("x5c"), .array([.bytes(serializer.serializedBytes)])),
                ]))
            var rewritten = credential
            rewritten.response.attestationObject = Base64URL.encode(
                CBOREncoder.encode(
                    .map(
                        CBORMap([
                            .init(.text("fmt"), .text("packed")), .init(.text("attStmt"), statement), .init(.text("authData"), .bytes(authData)),
                        ]))))
            return rewritten
        }
    }

    /// A server whose `fido2` uses `policy`, with `root` as its attestation roots file, and `revoking` (serial
    /// numbers) in a revocation list of that root that Python's cryptography writes.
    func withServer(policy: String, root: Root, revoking: [[UInt8]]? = nil, _ body: (LoopbackServer) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-attestation-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let roots = directory.appendingPathComponent("roots.pem")
        try Data(try root.pem().utf8).write(to: roots)
        var crl: String?
        if let revoking {
            let key = directory.appendingPathComponent("root-key.pem")
            let out = directory.appendingPathComponent("crl.pem")
            try Data(root.key.pemRepresentation.utf8).write(to: key)
            let run = try ExternalProgram.run(
                ["python3", Self.crlScript, "write", roots.path, key.path, out.path]
                    + revoking.map { $0.map { String(format: "%02x", $0) }.joined() })
            XCTAssertEqual(run.status, 0, run.stderr)
            crl = out.path
        }
        try await LoopbackServer.with(
            PasskeyLiveTests.configuration {
                $0.attestationPolicy = policy
                $0.attestationRootsPath = roots.path
                $0.attestationRevocationListsPath = crl
            }, body)
    }

    static let crlScript = ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Tests/Interop/crl_interop.py").path

    /// Registers one passkey for `username`, its attestation as `attest` makes it; the answer of `/attestation/result`.
    func register(
        _ server: LoopbackServer, _ username: String, self selfAttested: Bool = false,
        _ attest: (FIDO2API.Credential) throws -> FIDO2API.Credential = { $0 }
    ) async throws -> TestAnswer {
        var key = SoftwarePasskeyAuthenticator(origin: Self.origin)
        let options = try await server.passkeyCreationOptions(username: username)
        let credential = try LoopbackServer.attestation(&key, for: options, attestation: selfAttested ? .packedSelf : .none)
        return try await server.fido2(FIDO2API.attestationResultPath, try attest(credential))
    }

    func testTheConformancePolicyAcceptsNoneSelfAndATrustedChain() async throws {
        let root = try Root(name: "operator root")
        try await withServer(policy: "conformance", root: root) { server in
            let none = try await self.register(server, "alice")
            XCTAssertEqual(none.status, 200, String(decoding: none.body, as: UTF8.self))
            let selfAttested = try await self.register(server, "bob", self: true)
            XCTAssertEqual(selfAttested.status, 200, String(decoding: selfAttested.body, as: UTF8.self))
            let chained = try await self.register(server, "carol") { try root.packed($0) }
            XCTAssertEqual(chained.status, 200, String(decoding: chained.body, as: UTF8.self))
            let stored = try await server.server.stores.passkeys.passkeys(username: "carol")
            XCTAssertEqual(stored.map(\.attestationFormat), ["packed"])
        }
    }

    func testTheConformancePolicyRefusesARogueRootAnExpiredLeafAndALeafNotYetValid() async throws {
        let root = try Root(name: "operator root")
        let rogue = try Root(name: "a rogue root")
        try await withServer(policy: "conformance", root: root) { server in
            let cases: [(String, (FIDO2API.Credential) throws -> FIDO2API.Credential)] = [
                ("rogue root", { try rogue.packed($0) }),
                (
                    "expired leaf",
                    { try root.packed($0, notBefore: Date().addingTimeInterval(-86_400 * 2), notAfter: Date().addingTimeInterval(-60)) }
                ),
                (
                    "leaf not yet valid",
                    { try root.packed($0, notBefore: Date().addingTimeInterval(3600), notAfter: Date().addingTimeInterval(86_400)) }
                ),
            ]
            for (name, attest) in cases {
                let refused = try await self.register(server, "dave", attest)
                XCTAssertEqual(refused.status, 400, name)
                XCTAssertTrue(
                    try fido2Response(refused).errorMessage.contains("step 24): the attestation does not chain to an accepted root"),
                    "\(name): \(String(decoding: refused.body, as: UTF8.self))")
            }
            let stored = try await server.server.stores.passkeys.passkeys(username: "dave")
            XCTAssertEqual(stored.count, 0)
        }
    }

    /// A chain whose leaf its root's revocation list (written by Python's cryptography) revokes is refused, under
    /// `conformance` and under `passkeys` alike; a leaf the list does not name registers.
    func testALeafTheRootsRevocationListRevokesIsRefused() async throws {
        if case .skipped(let why) = try ExternalTool.require("python3 with cryptography", probe: ["python3", Self.crlScript, "check"]) {
            throw XCTSkip(why)
        }
        let root = try Root(name: "operator root")
        let revoked: [UInt8] = [0x7A, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07]
        let kept: [UInt8] = [0x11, 0x22, 0x33]
        for policy in ["conformance", "passkeys"] {
            try await withServer(policy: policy, root: root, revoking: [revoked, [0x0F, 0xFF]]) { server in
                let refused = try await self.register(server, "gina") { try root.packed($0, serial: revoked) }
                XCTAssertEqual(refused.status, 400, policy)
                XCTAssertTrue(
                    try fido2Response(refused).errorMessage.contains("step 24): its issuer's revocation list revokes the attestation certificate"),
                    "\(policy): \(String(decoding: refused.body, as: UTF8.self))")
                let accepted = try await self.register(server, "gina") { try root.packed($0, serial: kept) }
                XCTAssertEqual(accepted.status, 200, "\(policy): \(String(decoding: accepted.body, as: UTF8.self))")
            }
        }
    }

    /// A U2F authenticator's attestation key, certified by `root`: it turns a `none` registration of an ES256 key
    /// (AAGUID zero) into a `fido-u2f` statement (§8.6: the signature over 0x00 ‖ rpIdHash ‖ clientDataHash ‖
    /// credentialId ‖ publicKeyU2F).
    struct U2FKey {
        let batch = P256.Signing.PrivateKey()
        let leaf: Certificate
        /// The certificate's key identifier as the Metadata Service lists U2F models (SHA-1 of the key's bits).
        var keyIdentifier: String { Insecure.SHA1.hash(data: leaf.publicKey.subjectPublicKeyInfoBytes).map { String(format: "%02x", $0) }.joined() }

        init(root: Root) throws {
            leaf = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(batch.publicKey), notValidBefore: Date().addingTimeInterval(-86_400),
                notValidAfter: Date().addingTimeInterval(86_400), issuer: root.certificate.subject,
                subject: try DistinguishedName { CommonName("U2F key") },
                signatureAlgorithm: .ecdsaWithSHA256, extensions: try .init { Critical(BasicConstraints.notCertificateAuthority) },
                issuerPrivateKey: .init(root.key))
        }

        func attest(_ credential: FIDO2API.Credential) throws -> FIDO2API.Credential {
            var serializer = DER.Serializer()
            try serializer.serialize(leaf)
            let object = try XCTUnwrap(
                try CBORDecoder(rules: .wellFormed).decode(try XCTUnwrap(Base64URL.decodeBytes(try XCTUnwrap(credential.response.attestationObject))))
                    .map)
            let authData = try XCTUnwrap(object[text: "authData"]?.bytes)
            // authData: rpIdHash (32), flags, counter (4), AAGUID (16), length (2), credential ID, then the COSE key.
            let idLength = Int(authData[53]) << 8 | Int(authData[54])
            let credentialID = Array(authData[55..<(55 + idLength)])
            let cose = try XCTUnwrap(try CBORDecoder(rules: .wellFormed).decodePrefix(authData[(55 + idLength)...]).0.map)
            let point = [0x04] + (try XCTUnwrap(cose[int: -2]?.bytes)) + (try XCTUnwrap(cose[int: -3]?.bytes))
            let clientData = try XCTUnwrap(Base64URL.decodeBytes(credential.response.clientDataJSON))
            let signed = [0x00] + Array(authData[0..<32]) + Array(SHA256.hash(data: clientData)) + credentialID + point
            let statement = CBOR.map(
                CBORMap([
                    .init(.text("sig"), .bytes(Array(try batch.signature(for: signed).derRepresentation))),
                    .init(.text("x5c"), .array([.bytes(serializer.serializedBytes)])),
                ]))
            var rewritten = credential
            rewritten.response.attestationObject = Base64URL.encode(
                CBOREncoder.encode(
                    .map(
                        CBORMap([
                            .init(.text("fmt"), .text("fido-u2f")), .init(.text("attStmt"), statement), .init(.text("authData"), .bytes(authData)),
                        ]))))
            return rewritten
        }
    }

    /// A genuine U2F key passes `enterprise` through the Metadata Service's U2F entry, found by its certificate's key
    /// identifier, whose roots vouch for its chain; the same key unknown to the service is refused (no root vouches).
    func testAGenuineU2FKeyPassesEnterpriseThroughItsMetadataEntry() async throws {
        let root = try Root(name: "U2F vendor root")
        let u2f = try U2FKey(root: root)
        let service = try TestMetadataService()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-u2f-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let blobPath = directory.appendingPathComponent("blob.jwt").path
        let mdsRoot = directory.appendingPathComponent("mds-root.pem").path
        try Data(try service.rootPEM.utf8).write(to: URL(fileURLWithPath: mdsRoot))
        var serializer = DER.Serializer()
        try serializer.serialize(root.certificate)
        let rootBase64 = Data(serializer.serializedBytes).base64EncodedString()
        let entry =
            #"{"attestationCertificateKeyIdentifiers":["\#(u2f.keyIdentifier.uppercased())"],"metadataStatement":{"attestationCertificateKeyIdentifiers":["\#(u2f.keyIdentifier)"],"description":"A U2F key","attestationTypes":["basic_full"],"attestationRootCertificates":["\#(rootBase64)"]},"statusReports":[{"status":"FIDO_CERTIFIED"}]}"#
        for (known, expected) in [(false, 400), (true, 200)] {
            try Data(try service.blob(number: 1, nextUpdate: TestMetadataService.day(30), entries: known ? [entry] : []).utf8).write(
                to: URL(fileURLWithPath: blobPath))
            var configuration = PasskeyLiveTests.configuration {
                $0.attestationPolicy = "enterprise"
                $0.algorithms = ["ES256"]
            }
            configuration.metadataService = .init(blob: blobPath, rootCertificatesPath: mdsRoot)
            try await LoopbackServer.with(configuration) { server in
                var key = SoftwarePasskeyAuthenticator(origin: Self.origin)
                let options = try await server.passkeyCreationOptions(username: "hank")
                let answer = try await server.fido2(
                    FIDO2API.attestationResultPath, try u2f.attest(try LoopbackServer.attestation(&key, for: options)))
                XCTAssertEqual(answer.status, expected, "known \(known): \(String(decoding: answer.body, as: UTF8.self))")
                if !known {
                    XCTAssertTrue(
                        try fido2Response(answer).errorMessage.contains("does not chain to an accepted root"),
                        String(decoding: answer.body, as: UTF8.self))
                }
                let stored = try await server.server.stores.passkeys.passkeys(username: "hank")
                XCTAssertEqual(stored.map(\.attestationFormat), known ? ["fido-u2f"] : [])
                XCTAssertEqual(stored.map(\.trust), known ? ["trusted"] : [])
            }
        }
    }

    /// Under `passkeys` the same rogue chain registers as untrusted: the trade-off the default makes.
    func testThePasskeysPolicyRegistersARogueChainAsUntrusted() async throws {
        let root = try Root(name: "operator root")
        let rogue = try Root(name: "a rogue root")
        try await withServer(policy: "passkeys", root: root) { server in
            let answer = try await self.register(server, "erin") { try rogue.packed($0) }
            XCTAssertEqual(answer.status, 200)
            // The audit line says so (a model it named, unbound, would say that too).
            let stores = server.server.stores
            let said = try await eventually(within: .seconds(5), every: .milliseconds(100)) {
                try await stores.audit.events(username: "erin", limit: 10).contains {
                    $0.operation == "passkey registration" && $0.detail.hasSuffix(", packed, basic, untrusted)")
                }
            }
            let details = try await stores.audit.events(username: "erin", limit: 10).map(\.detail)
            XCTAssertTrue(said, "\(details)")
            let trusted = try await self.register(server, "erin") { try root.packed($0) }
            XCTAssertEqual(trusted.status, 200)
            let saidTrusted = try await eventually(within: .seconds(5), every: .milliseconds(100)) {
                try await stores.audit.events(username: "erin", limit: 10).contains { $0.detail.hasSuffix(", packed, basic, trusted)") }
            }
            XCTAssertTrue(saidTrusted)
            // The operator's view says which is which.
            let stored = try await stores.passkeys.passkeys(username: "erin")
            XCTAssertEqual(stored.map(\.trust), ["untrusted", "trusted"])
            var claims = server.relyingParty.claims(subject: "ops", now: server.clock.now)
            claims.scope = "mauth:admin"
            let admin = [("Authorization", "Bearer \(try await server.relyingParty.sign(claims))")]
            let view = try await server.exchange(.GET, "/nevisfido/admin/user?username=erin", body: nil, headers: admin)
            XCTAssertTrue(
                String(decoding: view.body, as: UTF8.self).contains("packed (basic, untrusted)"), String(decoding: view.body, as: UTF8.self))
        }
    }

    /// The options ask for the attestation the policy needs: a browser strips what it was not asked for, so
    /// `enterprise` asking for `none` could never see the chain it demands.
    func testTheOptionsAskForTheConveyanceThePolicyNeeds() async throws {
        let root = try Root(name: "operator root")
        for (policy, expected) in [("passkeys", "none"), ("conformance", "direct"), ("enterprise", "direct")] {
            try await withServer(policy: policy, root: root) { server in
                let options = try await server.passkeyCreationOptions(username: "frank")
                XCTAssertEqual(options.attestation, expected, policy)
                let asked = try await server.fido2(
                    FIDO2API.attestationOptionsPath,
                    FIDO2API.OptionsRequest(username: "frank", displayName: "Frank", attestation: "none"),
                    headers: try await server.bearer("frank"))
                let echoed = try JSONDecoder().decode(FIDO2API.CreationOptions.self, from: asked.body)
                XCTAssertEqual(echoed.attestation, policy == "enterprise" ? "direct" : "none", "\(policy): a request for none")
            }
        }
    }
}
