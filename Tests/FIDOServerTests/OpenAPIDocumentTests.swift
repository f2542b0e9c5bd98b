import FIDOServerTesting
import Foundation
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The OpenAPI 3.1 document (Sources/FIDOServer/OpenAPI/openapi.json) against the server it describes. schemathesis
/// (run by .ci/run) checks the answers against the schemas; these tests check the document's own consistency.
final class OpenAPIDocumentTests: XCTestCase {
    static let documentURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/FIDOServer/OpenAPI/openapi.json")

    func document() throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: Self.documentURL)) as? [String: Any])
    }

    /// `METHOD /path/{param}` of every operation in the document.
    func documentedOperations() throws -> Set<String> {
        let paths = try XCTUnwrap(try document()["paths"] as? [String: [String: Any]])
        var operations = Set<String>()
        for (path, item) in paths {
            for method in item.keys where ["get", "put", "post", "delete", "patch", "head", "options"].contains(method) {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
        return operations
    }

    func testDocumentDescribesEveryRouteTheServerServesAndNoOther() async throws {
        var configuration = ServerConfiguration(port: 0, facets: [testFacet], database: .sqliteInMemory)
        // Passkeys on, with related origins: every route the server can serve.
        configuration.fido2 = .init(
            rpId: "bank.example", origins: ["https://bank.example"], relatedOrigins: ["https://bank.example.co.uk"],
            apps: .init(
                apple: [.init(teamId: "ABCDE12345", bundleId: "ch.example.bank")],
                android: [.init(packageName: "ch.example.bank", certificateSha256Digests: [String(repeating: "A", count: 43)])]))
        let built = try await FIDOServerApplication.buildApplication(configuration: configuration)
        let served = Set(
            built.routes.map { route in
                // Hummingbird writes a capture as `:name`, OpenAPI as `{name}`.
                let path = route.path.split(separator: "/", omittingEmptySubsequences: false)
                    .map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
                return "\(route.method) \(path.hasPrefix("/") ? path : "/" + path)"
            })
        try await built.stores.database.close()
        let documented = try documentedOperations()
        XCTAssertGreaterThan(served.count, 20)
        XCTAssertEqual(served.subtracting(documented).sorted(), [], "served but not in the OpenAPI document")
        XCTAssertEqual(documented.subtracting(served).sorted(), [], "in the OpenAPI document but not served")
    }

    func testEveryReferenceResolvesAndEveryOperationHasAnIdAndA2xxAnswer() throws {
        let document = try document()
        XCTAssertEqual(document["openapi"] as? String, "3.1.0")
        let components = try XCTUnwrap(document["components"] as? [String: [String: Any]])
        let text = String(decoding: try Data(contentsOf: Self.documentURL), as: UTF8.self)
        let references = try NSRegularExpression(pattern: ##""\$ref": "#/components/([A-Za-z]+)/([A-Za-z0-9]+)""##)
        let matches = references.matches(in: text, range: NSRange(text.startIndex..., in: text))
        XCTAssertFalse(matches.isEmpty)
        for match in matches {
            let kind = String(text[Range(match.range(at: 1), in: text)!])
            let name = String(text[Range(match.range(at: 2), in: text)!])
            XCTAssertNotNil(components[kind]?[name], "#/components/\(kind)/\(name) does not exist")
        }
        var operationIDs = Set<String>()
        for (path, item) in try XCTUnwrap(document["paths"] as? [String: [String: Any]]) {
            for (method, value) in item {
                let operation = try XCTUnwrap(value as? [String: Any])
                let id = try XCTUnwrap(operation["operationId"] as? String, "\(method) \(path) has no operationId")
                XCTAssertTrue(operationIDs.insert(id).inserted, "operationId \(id) is used twice")
                let responses = try XCTUnwrap(operation["responses"] as? [String: Any])
                XCTAssertTrue(responses.keys.contains { $0.hasPrefix("2") }, "\(method) \(path) documents no success answer")
            }
        }
    }

    /// The route rules' answers are part of every negotiated operation's contract: 405 (another method, with `Allow`)
    /// on all of them, 406 on those that answer with a body (RouteRules refuses no empty answer).
    func testEveryNegotiatedOperationDocumentsItsRouteRuleAnswers() throws {
        for (path, item) in try XCTUnwrap(try document()["paths"] as? [String: [String: Any]])
        where RouteTable.negotiated.contains(where: path.hasPrefix) {
            for (method, value) in item {
                let responses = try XCTUnwrap((value as? [String: Any])?["responses"] as? [String: Any])
                XCTAssertNotNil(responses["405"], "\(method) \(path) documents no 405")
                let answersABody = responses.contains { code, answer in code.hasPrefix("2") && (answer as? [String: Any])?["content"] != nil }
                if answersABody { XCTAssertNotNil(responses["406"], "\(method) \(path) documents no 406") }
            }
        }
    }

    func testServerServesTheCommittedDocument() async throws {
        try await InProcessServer.with { loopback in
            let answer = try await loopback.exchange(.GET, "/openapi.json", body: nil)
            XCTAssertEqual(answer.status, 200)
            XCTAssertEqual(answer.contentType, "application/json")
            XCTAssertEqual(answer.body, try Data(contentsOf: Self.documentURL))
        }
    }
}
