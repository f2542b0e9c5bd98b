import FIDOServerTesting
import Foundation
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

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

    func testASyntaxErrorIsNamedWithItsLineAndColumn() throws {
        let refusal = try XCTUnwrap(try Self.refusal("{\n  \"port\": 9443\n  \"host\": \"127.0.0.1\"\n}\n"))
        XCTAssertTrue(refusal.hasSuffix("not valid JSON at line 3, column 3: expected ',' or '}'"), refusal)
    }

    func testAColumnCountsCharactersNotBytes() throws {
        let refusal = try XCTUnwrap(try Self.refusal("{\"_note\": \"Zürich\" \"port\": 1}"))
        XCTAssertTrue(refusal.contains("line 1, column 20:"), refusal)  // byte 21: "ü" is two bytes
    }

    func testASettingNamedTwiceIsRefused() throws {
        let refusal = try XCTUnwrap(try Self.refusal(#"{"port": 9443, "port": 8443}"#))
        XCTAssertTrue(refusal.contains("not valid JSON at line 1, column"), refusal)
        XCTAssertTrue(refusal.contains("names member \"port\" twice"), refusal)
    }

    func testAMissingSettingIsNamedByItsPath() throws {
        let refusal = try XCTUnwrap(try Self.refusal(#"{"authorization": {"jwt": {"publicKeyPaths": ["k.pem"], "audience": "a"}}}"#))
        XCTAssertTrue(refusal.hasSuffix(": authorization.jwt.issuer is missing"), refusal)
        XCTAssertFalse(refusal.contains("CodingKeys") || refusal.contains("DecodingError"), refusal)
    }

    func testASettingOfTheWrongKindSaysTheKindItNeeds() throws {
        XCTAssertTrue(try XCTUnwrap(try Self.refusal(#"{"port": "9443"}"#)).hasSuffix(": port must be a whole number"))
        XCTAssertTrue(try XCTUnwrap(try Self.refusal(#"{"facets": ["a", 3]}"#)).hasSuffix(": facets[1] must be a string"))
        XCTAssertTrue(try XCTUnwrap(try Self.refusal(#"{"facets": "a"}"#)).hasSuffix(": facets must be a list ([…])"))
        XCTAssertTrue(try XCTUnwrap(try Self.refusal(#"{"facets": [null]}"#)).hasSuffix(": facets[0] must have a value, not null"))
    }

    func testAValueOutsideAFixedSetIsNamed() throws {
        let refusal = try XCTUnwrap(try Self.refusal(#"{"observability": {"logFormat": "xml"}}"#))
        XCTAssertTrue(refusal.contains("observability.logFormat"), refusal)
        XCTAssertTrue(refusal.contains("xml is not one of the allowed values"), refusal)
    }

    func testKeysThatBeginWithAnUnderscoreAreIgnored() throws {
        XCTAssertNil(try Self.refusal(#"{"_comment": "staging", "limits": {"_note": "raised for the launch", "maximumConnections": 100}}"#))
    }
}
