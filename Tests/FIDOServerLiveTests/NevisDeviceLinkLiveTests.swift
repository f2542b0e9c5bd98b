import Crypto
import FIDOServerTesting
import FIDOSimulation
import Foundation
import JOSE
import NIOHTTP1
import NevisProtocol
import Primitives
import TestSupport
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// A client in the Nevis SDK's shape over loopback TLS: it registers without this project's device-id extension,
/// creates its dispatch target with the registration's token (server-api §D.1 step 6), and then makes its device
/// calls with signatures and decryption done by an independent JOSE implementation (jwcrypto): the device check
/// lists its key, the sync renames the device and moves its push token, and a device-signed deregistration removes
/// its key and no other device's.
final class NevisDeviceLinkLiveTests: XCTestCase {
    static let script = ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Tests/Interop/jose_interop.py").path

    override func setUpWithError() throws {
        if case .skipped(let why) = try ExternalTool.require("python3 with jwcrypto", probe: ["python3", Self.script, "check"]) {
            throw XCTSkip(why)
        }
    }

    /// The device as the Nevis SDK keeps it: an id, a signing and an encryption key pair, and its target once made.
    struct NevisDevice {
        let deviceId: String
        let signing = P256.Signing.PrivateKey()
        let encryption = P256.KeyAgreement.PrivateKey()
        var target = ""

        static func privateJWK(_ raw: [UInt8], _ scalar: [UInt8]) -> String {
            #"{"kty":"EC","crv":"P-256","x":"\#(Base64URL.encode(raw[1..<33]))","y":"\#(Base64URL.encode(raw[33..<65]))","d":"\#(Base64URL.encode(scalar))"}"#
        }
        var signingJWK: String { Self.privateJWK(Array(signing.publicKey.x963Representation), Array(signing.rawRepresentation)) }
        var encryptionJWK: String { Self.privateJWK(Array(encryption.publicKey.x963Representation), Array(encryption.rawRepresentation)) }
    }

    func jwcrypto(_ arguments: String...) throws -> String {
        let output = try ExternalProgram.run(["python3", Self.script] + arguments)
        guard output.status == 0 else { throw ExternalProgram.Failure("jwcrypto failed: \(output.stderr)") }
        return output.stdout
    }

    /// The claims of a `Device-Signature` for `method path` (and `body`).
    func claims(_ device: NevisDevice, _ method: HTTPMethod, _ path: String, body: Data? = nil, now: Date) -> DeviceSignature.Claims {
        DeviceSignature.Claims(dispatchTargetId: device.target, now: now, method: method.rawValue, path: path, body: Array(body ?? Data()))
    }

    /// `payload` as a compact JWS that jwcrypto signs with the device's key.
    func signed(_ device: NevisDevice, _ payload: some Encodable) throws -> String {
        try jwcrypto("sign-jws", device.signingJWK, String(decoding: try JSONEncoder().encode(payload), as: UTF8.self))
    }

    /// A `Device-Signature` for `method path` (and `body`).
    func signature(_ device: NevisDevice, _ method: HTTPMethod, _ path: String, body: Data? = nil, now: Date) throws -> String {
        try signed(device, claims(device, method, path, body: body, now: now))
    }

    /// Registers a key for `username` as the Nevis SDK does (no device-id extension) and creates the device's
    /// target with the token the registration handed out.
    func register(_ device: inout NevisDevice, _ authenticator: inout SoftwareAuthenticator, username: String, on server: LoopbackServer) async throws
    {
        let request = try await server.registrationRequest(username: username)
        let response = try authenticator.register(request, serverAppID: server.appID)
        XCTAssertNil(response.header.exts, "the Nevis SDK's shape: no extension of ours")
        let registered = try await server.send("/nevisfido/uaf/1.1/registration", response)
        XCTAssertEqual(registered.statusCode, 1200)
        let jwt = try XCTUnwrap(registered.additionalTokens?.first { $0.type == .jwt }?.value)
        let creation = DispatchTargetWire.Creation(
            username: username, name: "\(username)'s \(device.deviceId)", deviceId: device.deviceId, dispatcher: "firebase-cloud-messaging",
            target: "fcm-\(device.deviceId)", signatureKey: JWK(publicKey: device.signing.publicKey).json,
            encryptionKey: JWK(encryptionKey: device.encryption.publicKey).json)
        let created = try await server.exchange(
            .POST, "/nevisfido/token/dispatch/targets", body: try JSONEncoder().encode(creation), contentType: "application/json",
            headers: [("Authorization", "Bearer \(jwt)"), ("Accept", "application/json")])
        XCTAssertEqual(created.status, 201, String(decoding: created.body, as: UTF8.self))
        device.target = try JSONDecoder().decode(DispatchTargetWire.Created.self, from: created.body).id
    }

    /// The device check: the Device Service's listing, asked as `application/jose` and decrypted by jwcrypto.
    func check(_ device: NevisDevice, on server: LoopbackServer) async throws -> DeviceServiceWire.Credentials {
        let path = DeviceServiceWire.basePath + DeviceServiceWire.credentialsComponent + "/" + device.deviceId
        let answer = try await server.exchange(
            .GET, path, body: nil, contentType: "application/json",
            headers: [
                (DeviceSignature.headerName, try signature(device, .GET, path, now: server.clock.now)), ("Accept", DeviceSignature.joseContentType),
            ])
        XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
        XCTAssertEqual(answer.headers.first(name: "Content-Type"), DeviceSignature.joseContentType)
        let plain = try jwcrypto("decrypt-jwe", device.encryptionJWK, String(decoding: answer.body, as: UTF8.self))
        return try JSONDecoder().decode(DeviceServiceWire.Credentials.self, from: Data(plain.utf8))
    }

    func testANevisShapedDeviceIsCheckedSyncedAndDeregisteredByItsOwnSignatures() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nevis-link-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = LoopbackServer.configuration(database: .sqlite(path: directory.appendingPathComponent("n.sqlite").path))
        try await LoopbackServer.with(configuration) { server in
            var phone = NevisDevice(deviceId: "nevis-phone")
            var tablet = NevisDevice(deviceId: "nevis-tablet")
            var phoneKey = SoftwareAuthenticator()
            var tabletKey = SoftwareAuthenticator()
            try await register(&phone, &phoneKey, username: "alice", on: server)
            try await register(&tablet, &tabletKey, username: "alice", on: server)

            // Check: each device sees its own key and target, none of the other's.
            let listed = try await check(phone, on: server)
            XCTAssertEqual(listed.credentials.map(\.username), ["alice"])
            let phoneKeyID = try XCTUnwrap(listed.credentials.first?.keyId)
            XCTAssertEqual(listed.dispatchTargets.map(\.id), [phone.target])
            let tabletListed = try await check(tablet, on: server)
            XCTAssertEqual(tabletListed.credentials.count, 1)
            XCTAssertNotEqual(tabletListed.credentials.first?.keyId, phoneKeyID)

            // Sync: the device renames itself and moves its push token with its own signature.
            let path = DeviceServiceWire.basePath + DeviceServiceWire.credentialsComponent + "/" + phone.deviceId
            let change = DeviceServiceWire.Modification(
                claims: claims(phone, .PATCH, path, body: Data(), now: server.clock.now), name: "Alice's new phone", fcmRegistrationToken: "fcm-moved"
            )
            let synced = try await server.exchange(
                .PATCH, path, body: nil, contentType: "application/json", headers: [(DeviceSignature.headerName, try signed(phone, change))])
            XCTAssertEqual(synced.status / 100, 2, String(decoding: synced.body, as: UTF8.self))
            let renamed = try await check(phone, on: server)
            XCTAssertEqual(renamed.dispatchTargets.first?.name, "Alice's new phone")
            XCTAssertEqual(renamed.dispatchTargets.first?.target, "fcm-moved")

            // Deregistration signed by the phone removes the phone's key only.
            let deregistrationPath = "/nevisfido/uaf/1.1/request/deregistration"
            let body = try JSONEncoder().encode(GetUAFRequest(op: .deregistration, context: #"{"username":"alice"}"#))
            let deregistered = try await server.exchange(
                .POST, deregistrationPath, body: body, contentType: "application/json",
                headers: [(DeviceSignature.headerName, try signature(phone, .POST, deregistrationPath, body: body, now: server.clock.now))])
            XCTAssertEqual(deregistered.status, 200, String(decoding: deregistered.body, as: UTF8.self))
            let left = try await server.server.stores.registrations.registrations(username: "alice").map(\.keyID)
            XCTAssertEqual(left, tabletListed.credentials.map(\.keyId), "the tablet's key stays")
            let emptied = try await check(phone, on: server)
            XCTAssertEqual(emptied.credentials, [])
        }
    }
}
