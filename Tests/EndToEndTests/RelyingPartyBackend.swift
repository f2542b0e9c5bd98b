import AsyncHTTPClient
import FIDOServer
import FIDOSimulation
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Primitives
import TestSupport
import UAF
import XCTest

/// The relying party's backend in the end-to-end tests: it calls the server's dispatch, dispatch-target and status
/// endpoints over real HTTPS, as a web application would.
final class RelyingPartyBackend {
    let base: URL
    let client: HTTPClient

    init(_ server: RunningFIDOServer) throws {
        base = server.baseURL
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(server.certificatePEM.utf8)))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
    }

    func shutdown() async throws { try await client.shutdown() }

    struct Answer {
        var status: Int
        var body: Data
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(T.self, from: body) }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Calls `path`; `username` authorizes with a relying-party JWT for that user, `bearer` with that bearer value
    /// (an Auth Cloud access key).
    func call(_ method: HTTPMethod, _ path: String, json: Data? = nil, as username: String? = nil, bearer: String? = nil) async throws -> Answer {
        var request = HTTPClientRequest(url: base.absoluteString + path)
        request.method = method
        request.headers.add(name: "Accept", value: "application/json")
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: json))
        }
        if let username { request.headers.add(name: "Authorization", value: "Bearer \(try await EndToEndRelyingParty.shared.token(for: username))") }
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        let response = try await client.execute(request, timeout: .seconds(30))
        return Answer(status: Int(response.status.code), body: Data(try await response.body.collect(upTo: 1 << 22).readableBytesView))
    }

    struct DispatchAnswer: Decodable {
        struct Information: Decodable {
            var name: String
            var response: String?
        }
        var token: String?
        var sessionId: String?
        var dispatcherInformation: Information?
        var dispatchResult: String
    }

    /// Dispatches `op` for `username` (and its transaction text) with `dispatcher`, optionally to a target.
    func dispatch(
        _ op: UAFOperation, username: String?, dispatcher: String, targetID: String? = nil, transaction: String? = nil,
        authorizedAs: String? = nil
    ) async throws -> DispatchAnswer {
        struct Context: Encodable {
            var username: String?
            var transaction: [Transaction]?
        }
        let context = try UAFMessageCodec.encodeObject(
            Context(
                username: username,
                transaction: transaction.map {
                    [Transaction(contentType: "text/plain", content: Base64URL.encode(Array($0.utf8)))]
                }))
        struct Body: Encodable {
            var dispatcher: String
            var dispatchTargetId: String?
            var getUafRequest: GetUAFRequest
        }
        let path = op == .registration ? "registration" : op == .authentication ? "authentication" : "deregistration"
        let answer = try await call(
            .POST, "/nevisfido/token/dispatch/\(path)",
            json: try JSONEncoder().encode(
                Body(
                    dispatcher: dispatcher, dispatchTargetId: targetID,
                    getUafRequest: GetUAFRequest(op: op, context: context))),
            // The backend presents the user's credential where the server needs one: every operation
            // but an authentication without a target.
            as: authorizedAs ?? (op == .authentication && targetID == nil ? nil : username))
        XCTAssertEqual(answer.status, 200, answer.text)
        return try answer.decode(DispatchAnswer.self)
    }

    struct Status: Decodable {
        struct Authenticator: Decodable {
            var aaid: String
            var keyId: String
        }
        struct TokenInformation: Decodable {
            var tokenResult: String?
            var dispatchTargetExtId: String?
        }
        var status: String
        var userId: String?
        var authenticators: [Authenticator]
        var tokenInformation: TokenInformation?
        var clientErrorCode: Int?
        var asmStatusCode: Int?
    }

    func status(_ sessionID: String) async throws -> Status {
        try await call(.POST, "/nevisfido/status", json: try JSONEncoder().encode(["sessionId": sessionID])).decode(Status.self)
    }

    struct Targets: Decodable {
        struct Target: Decodable {
            var name: String
            var id: String
            var dispatcher: String
        }
        var dispatchTargets: [Target]
    }

    func targets(of username: String) async throws -> [Targets.Target] {
        let answer = try await call(.GET, "/nevisfido/token/dispatch/targets?username=\(username)", as: username)
        if answer.status == 404 { return [] }
        XCTAssertEqual(answer.status, 200, answer.text)
        return try answer.decode(Targets.self).dispatchTargets
    }
}

/// Reads a QR code PNG from a `data:` URI with zbarimg, as a phone's camera would.
enum QRReader {
    static func read(dataURI: String) throws -> String {
        if case .skipped(let why) = try ExternalTool.require("zbarimg", probe: QRCodeReader.probe) { throw XCTSkip(why) }
        guard let png = PNGImage.bytes(fromDataURI: dataURI) else { throw ExternalProgram.Failure("not a PNG data URI") }
        return try QRCodeReader.read(png: png)
    }
}
