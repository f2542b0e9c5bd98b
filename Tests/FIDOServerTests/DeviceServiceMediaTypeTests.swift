import Crypto
import FIDOServerTesting
import Foundation
import JOSE
import NevisProtocol
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// What the Device Service answers in the media type the device asks for: JSON, or, where `Accept` weighs
/// `application/jose` above JSON (the Nevis SDK's `Accept: application/jose;charset=UTF-8`), the same JSON as a JWE
/// to the signing target's encryption key.
final class DeviceServiceMediaTypeTests: XCTestCase {
    typealias Phone = HostileClientDeviceTests.Phone
    static let nevisAccept = "application/jose;charset=UTF-8"

    /// Alice's phone, with a target whose encryption key's private half the test keeps (none if `encryption` is false).
    static func withPhone(encryption: Bool = true, _ body: (InProcessServer, Phone, P256.KeyAgreement.PrivateKey) async throws -> Void) async throws {
        try await InProcessServer.with { loopback in
            var phone = Phone(deviceId: "device-1")
            let decryption = P256.KeyAgreement.PrivateKey()
            let creation = DispatchTargetWire.Creation(
                username: "alice", name: "phone", deviceId: phone.deviceId, dispatcher: nil, target: "fcm-1",
                signatureKey: JWK(publicKey: phone.key.publicKey).json,
                encryptionKey: encryption ? JWK(encryptionKey: decryption.publicKey).json : nil)
            let created = try await loopback.exchange(
                .POST, "/nevisfido/token/dispatch/targets", body: try JSONEncoder().encode(creation),
                contentType: "application/json", headers: try await loopback.bearer("alice"))
            XCTAssertEqual(created.status, 201, String(decoding: created.body, as: UTF8.self))
            phone.target = try JSONDecoder().decode(DispatchTargetWire.Created.self, from: created.body).id
            try await body(loopback, phone, decryption)
        }
    }

    /// A signed GET of the Device Service's `component` for `phone`, with `accept`.
    static func get(
        _ loopback: InProcessServer, _ phone: Phone, _ component: String = DeviceServiceWire.credentialsComponent,
        accept: String?
    ) async throws -> TestAnswer {
        let path = DeviceServiceWire.basePath + component + "/" + phone.deviceId
        let claims = DeviceSignature.Claims(dispatchTargetId: phone.target, now: loopback.clock.now, method: "GET", path: path, body: [])
        var headers = [(DeviceSignature.headerName, try DeviceSignature.sign(claims, dispatchTargetId: phone.target, key: phone.key))]
        if let accept { headers.append(("Accept", accept)) }
        return try await loopback.exchange(.GET, path, body: nil, contentType: "application/json", headers: headers)
    }

    func testTheNevisSDKsAcceptGetsTheCredentialsEncryptedToTheDevice() async throws {
        try await Self.withPhone { loopback, phone, decryption in
            let answer = try await Self.get(loopback, phone, accept: Self.nevisAccept)
            XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
            XCTAssertEqual(answer.contentType, "application/jose;charset=UTF-8")
            let decrypted = try JWE.decrypt(String(decoding: answer.body, as: UTF8.self), key: decryption)
            XCTAssertEqual(decrypted.header.kid, phone.target)
            XCTAssertEqual(decrypted.header.cty, "application/json")
            let credentials = try JSONDecoder().decode(DeviceServiceWire.Credentials.self, from: Data(decrypted.plaintext))
            XCTAssertEqual(credentials.dispatchTargets.map(\.id), [phone.target])
        }
    }

    func testTheNevisSDKsAcceptGetsThePendingOperationsEncryptedToTheDevice() async throws {
        try await Self.withPhone { loopback, phone, decryption in
            let answer = try await Self.get(loopback, phone, DeviceServiceWire.operationsComponent, accept: Self.nevisAccept)
            XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
            let decrypted = try JWE.decrypt(String(decoding: answer.body, as: UTF8.self), key: decryption)
            XCTAssertEqual(try JSONDecoder().decode(DeviceServiceWire.PendingOperations.self, from: Data(decrypted.plaintext)).operations.count, 0)
        }
    }

    func testJSONIsAnsweredAsJSON() async throws {
        try await Self.withPhone { loopback, phone, _ in
            for accept in [nil, "application/json", "*/*", "application/jose;q=0.5, application/json"] as [String?] {
                let answer = try await Self.get(loopback, phone, accept: accept)
                XCTAssertEqual(answer.status, 200, "\(accept ?? "no Accept")")
                XCTAssertEqual(answer.contentType, "application/json", "\(accept ?? "no Accept")")
                XCTAssertNoThrow(try JSONDecoder().decode(DeviceServiceWire.Credentials.self, from: answer.body))
            }
        }
    }

    func testJOSEPreferredOverJSONIsAnsweredAsJOSE() async throws {
        try await Self.withPhone { loopback, phone, _ in
            let answer = try await Self.get(loopback, phone, accept: "application/json;q=0.5, application/jose")
            XCTAssertEqual(answer.contentType, "application/jose;charset=UTF-8")
        }
    }

    func testJOSEForATargetWithoutAnEncryptionKeyIsNotAcceptable() async throws {
        try await Self.withPhone(encryption: false) { loopback, phone, _ in
            let answer = try await Self.get(loopback, phone, accept: Self.nevisAccept)
            XCTAssertEqual(answer.status, 406)
            XCTAssertEqual(try JSONDecoder().decode(ErrorBody.self, from: answer.body).error, "not_acceptable")
        }
    }

    func testTheWeightOfAMediaTypeIsItsMostSpecificRanges() {
        XCTAssertEqual(MediaType.weight(in: "application/jose;charset=UTF-8", of: .jose), 1)
        XCTAssertEqual(MediaType.weight(in: "application/jose;charset=UTF-8", of: .json), 0)
        XCTAssertEqual(MediaType.weight(in: "*/*;q=0.1, application/json;q=0.4", of: .json), 0.4)
        XCTAssertEqual(MediaType.weight(in: "application/*;q=0.3, */*", of: .jose), 0.3)
        XCTAssertEqual(MediaType.weight(in: "application/fido+uaf", of: .json), 1, "the JSON family is one type")
    }
}
