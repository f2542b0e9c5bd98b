import Foundation
import UAFServerTesting
import XCTest
@testable import UAFServer
@testable import UAFServerCore

/// A configuration file key the server does not know stops the start, with the key's path and the file's name;
/// keys that begin with `_` are ignored.
final class ConfigurationFileTests: XCTestCase {
    /// Loads `json` from a file; the error text when it is refused.
    static func refusal(_ json: String) throws -> String? {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-config-\(UUID().uuidString).json").path
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            _ = try ServerConfiguration.load(path: path, environment: [:])
            return nil
        } catch {
            XCTAssertTrue("\(error)".contains(path), "the error names the file: \(error)")
            return "\(error)"
        }
    }

    func testEveryKnownKeyLoads() throws {
        let json = #"""
            {"host": "127.0.0.1", "port": 9443, "tls": {}, "facets": ["https://a.example"], "databasePoolSize": 4,
             "requestLifetimeSeconds": 120, "rejectCounterRegression": true, "checkChannelBinding": false, "demoSite": false,
             "authorization": {"developmentMode": false, "trustedProxy": {"header": "X-User", "addresses": ["10.0.0.1"]}},
             "tokens": {"cookieName": "s"}, "limits": {"anonymousContextBytes": 2048, "qrRenderingsAtOnce": 1},
             "clientAddress": {"header": "X-Forwarded-For", "trustedProxies": ["10.0.0.0/8"]},
             "dispatch": {"qrModuleSize": 4}, "policies": {"strong": {"registration": {"accepted": [[{"aaid": ["F1D0#1002"]}]]}}},
             "observability": {"metrics": true, "logFormat": "json", "auditRetentionDays": 7, "auditAnonymousEventsPerMinute": 10,
                               "auditLogPath": "/var/log/mauth/audit.log"}}
            """#
        XCTAssertNil(try Self.refusal(json))
    }

    func testAMisspeltTopLevelKeyStopsTheStart() throws {
        let refusal = try XCTUnwrap(try Self.refusal(#"{"prot": 9443}"#))
        XCTAssertTrue(refusal.contains("unknown key prot (did you mean port?)"), refusal)
    }

    func testAMisspeltNestedKeyIsNamedWithItsPath() throws {
        let refusal = try XCTUnwrap(try Self.refusal(#"{"authorization": {"developmentMod": true}}"#))
        XCTAssertTrue(refusal.contains("unknown key authorization.developmentMod (did you mean developmentMode?)"), refusal)
    }

    func testAnUnknownKeyInASynthesizedSectionIsRefused() throws {
        let refusal = try XCTUnwrap(try Self.refusal(#"{"tls": {"certificate": "c.pem"}}"#))
        XCTAssertTrue(refusal.contains("unknown key tls.certificate"), refusal)
    }

    func testAKeyFarFromEveryKnownOneHasNoSuggestion() throws {
        let refusal = try XCTUnwrap(try Self.refusal(#"{"limits": {"somethingElseEntirely": 1}}"#))
        XCTAssertTrue(refusal.contains("unknown key limits.somethingElseEntirely; keys that begin with _ are ignored"), refusal)
    }

    func testKeysThatBeginWithAnUnderscoreAreIgnored() throws {
        XCTAssertNil(try Self.refusal(#"{"_comment": "staging", "limits": {"_note": "raised for the launch", "maximumConnections": 100}}"#))
    }
}

/// Every start-up error names the file, port or setting and the reason, before anything says "listening".
final class StartupErrorTests: XCTestCase {
    static func startError(_ configuration: ServerConfiguration) async -> String? {
        do {
            let server = try await UAFServerApplication.start(configuration: configuration)
            try? await server.stop()
            return nil
        } catch {
            return "\(error)"
        }
    }

    func testAMissingJWKSFileIsNamedWithItsSetting() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.authorization.jwt = .init(jwksPath: "/nonexistent/jwks.json", issuer: "i", audience: "a")
        let error = await Self.startError(configuration)
        XCTAssertEqual(error, "cannot read authorization.jwt.jwksPath /nonexistent/jwks.json: no such file")
    }

    func testACertificateFileThatIsNotPEMIsNamedWithItsSetting() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-notpem-\(UUID().uuidString).pem").path
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var configuration = LoopbackServer.configuration()
        configuration.tls = .init(certificatePath: path, privateKeyPath: path)
        let refusal = await Self.startError(configuration)
        let error = try XCTUnwrap(refusal)
        XCTAssertTrue(error.hasPrefix("invalid configuration: tls.certificatePath \(path) is not a PEM certificate chain"), error)
    }

    func testATakenPortIsNamedInTheStartError() async throws {
        try await LoopbackServer.with { loopback in
            var configuration = LoopbackServer.configuration()
            configuration.port = loopback.server.port
            let refusal = await Self.startError(configuration)
            let error = try XCTUnwrap(refusal)
            XCTAssertTrue(error.contains("cannot listen on 127.0.0.1:\(loopback.server.port)"), error)
            XCTAssertTrue(error.contains("Address already in use"), error)
        }
    }
}
