import FIDOServerTesting
import FIDOSimulation
import Foundation
import Logging
import NIOConcurrencyHelpers
import Primitives
import SQLKit
import SQLiteNIO
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

// The records the store suites build their cases from.

func record(_ id: String, expiresAt: Date = Date().addingTimeInterval(300), username: String? = "u") -> UAFCeremony {
    UAFCeremony(
        id: id, operation: .registration, challenge: "c-\(id)", username: username, policy: Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1001"])]]),
        transactions: [Transaction(contentType: "text/plain", content: "SGk")], expiresAt: expiresAt)
}

func registration(_ username: String, aaid: String = "F1D0#1001", keyID: String, counter: UInt32 = 0) -> RegistrationRecord {
    RegistrationRecord(
        username: username, aaid: aaid, keyID: keyID, publicKey: [4, 1, 2, 3], publicKeyEncoding: .eccX962DER,
        signatureAlgorithm: .secp256r1ECDSASHA256DER, signCounter: counter, registrationCounter: 1,
        authenticatorVersion: 1, attestationType: .basicSurrogate, createdAt: Date(epochMillis: 1_700_000_000_000))
}

func opening(_ id: String, username: String? = nil, now: Date) -> (UAFCeremony, StatusRecord) {
    var request = record(id, expiresAt: Date(epochMillis: now.addingTimeInterval(300).epochMillis), username: username)
    request.operation = .authentication
    return (request, StatusRecord(sessionId: id, status: .clientAuthenticating, operation: "Auth", username: username, updatedAt: now))
}

/// A step-up request for `username` with the values of ``opening(_:username:now:)`` and the given policy.
/// A step-up request for `username`; `limit` nil issues it uncounted (an anonymous caller's).
func stepUp(_ stores: Stores, _ id: String, username: String, limit: Int? = 10, now: Date) async throws -> CeremonyStore.StepUp {
    try await stores.ceremonies.openStepUp(
        username: username, cap: limit.map { CeremonyCap(username: username, limit: $0, now: now) },
        retention: 600,
        request: { policy in
            var request = opening(id, username: username, now: now).0
            request.policy = policy
            return request
        }, status: { _ in opening(id, username: username, now: now).1 })
}

/// Kim's keys: two under one AAID registered at the same time (ordered by key ID), one under another AAID
/// registered earlier, one with characters JSON must escape; and another user's key.
func stepUpKeys(_ stores: Stores) async throws {
    func key(_ username: String, _ aaid: String, _ keyID: String, at millis: Int64) -> RegistrationRecord {
        var record = registration(username, aaid: aaid, keyID: keyID)
        record.createdAt = Date(epochMillis: millis)
        return record
    }
    try await stores.registrations.insert([
        key("kim", "F1D0#1001", "k2", at: 2_000), key("kim", "F1D0#1001", "k1", at: 2_000), key("kim", "ABCD#0001", "k3", at: 1_000),
        key("kim", "F1D0#1001", "q\"/\\é", at: 3_000), key("lee", "F1D0#1001", "lee-key", at: 1_000),
    ])
}

func completion(_ id: String, keyID: String, from: UInt32, to: UInt32, now: Date) -> CeremonyStore.Authentication {
    let (token, session) = SessionStore.make(username: "kim", credential: .uaf(aaid: "F1D0#1001", keyID: keyID), now: now, lifetime: 60)
    return CeremonyStore.Authentication(
        counter: .init(aaid: "f1d0#1001", keyID: keyID, from: from, to: to), sessionToken: token, session: session,
        status: .init(
            sessionId: id, status: .succeeded, username: "kim", uafStatusCode: 1200, asmStatusCode: 0, clientErrorCode: nil,
            authenticators: [.init(aaid: "F1D0#1001", keyId: keyID)], now: now, retention: 600))
}

/// kim's key `keyID` at `counter`, and an authentication request `id` waiting for its response.
func awaitingLogin(_ stores: Stores, _ id: String, keyID: String, counter: UInt32, now: Date) async throws {
    try await stores.registrations.insert([registration("kim", keyID: keyID, counter: counter)])
    let (request, status) = opening(id, now: now)
    let opened = try await stores.ceremonies.open(request, status: status, retention: 600, cap: nil)
    XCTAssertTrue(opened)
}

func target(_ id: String, username: String = "u", name: String) -> DispatchTargetRecord {
    DispatchTargetRecord(
        id: id, extId: "ext-\(id)", username: username, name: name, deviceId: "d", dispatcher: "firebase-cloud-messaging",
        target: "push", signatureKey: "{}", encryptionKey: nil, createdAt: Date(epochMillis: 1), updatedAt: Date(epochMillis: 1))
}

func token(_ hash: String, target: String? = "t1", expiresAt: Date) -> DispatchTokenRecord {
    DispatchTokenRecord(
        tokenHash: hash, sessionId: "s-\(hash)", operation: "Auth", getUAFRequest: "{}", username: "u", dispatchTargetId: target,
        dispatcher: "link", dispatchInformation: nil, payload: "p", createdAt: Date(epochMillis: 1_000), expiresAt: expiresAt, redeemedAt: nil)
}
