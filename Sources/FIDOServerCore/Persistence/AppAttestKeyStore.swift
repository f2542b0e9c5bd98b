import AppAttestation
import Foundation
import Primitives
import SQLKit

/// An App Attest key as an operator sees it (``AppAttestKeyStore/states(keyIDs:)``).
public struct AppAttestKeyState: Sendable, Equatable {
    /// Base64url.
    public var keyID: String
    public var appID: String
    public var environment: String
    /// The counter its last assertion reached (0: attested, never asserted).
    public var counter: UInt32
    public var attestedAt: Date
    public var lastUsedAt: Date
}

/// App Attest keys that passed attestation, one per app install, by key ID (App attestation).
public struct AppAttestKeyStore: Sendable {
    let database: StoreDatabase

    /// Stores a key that passed attestation. A key attested again (an app that did not see its first answer) keeps
    /// the counter it reached: a new attestation starts at 0, and lowering the stored counter would let an assertion
    /// already counted count again.
    public func attested(_ key: AttestedAppKey, now: Date) async throws {
        try await database.run { sql in
            try await sql.statement(
                """
                INSERT INTO app_attest_keys (key_id, app_id, environment, public_key, counter, receipt, created_at, last_used_at)
                VALUES (\(bind: Base64URL.encode(key.keyID)), \(bind: key.appID), \(bind: key.environment.rawValue),
                    \(bind: Base64URL.encode(key.publicKey)), \(bind: Int64(key.counter)), \(bind: Base64URL.encode(key.receipt)),
                    \(bind: now.epochMillis), \(bind: now.epochMillis))
                ON CONFLICT (key_id) DO UPDATE SET receipt = excluded.receipt, last_used_at = excluded.last_used_at
                """
            ).run()
        }
    }

    /// The key `keyID` names, with its counter, or nil.
    public func key(id keyID: [UInt8]) async throws -> AttestedAppKey? {
        try await database.run { sql in
            try await sql.statement("SELECT * FROM app_attest_keys WHERE key_id = \(bind: Base64URL.encode(keyID))").first()
        }.map(Self.key)
    }

    /// What an operator sees of the keys of `keyIDs` (base64url) that are stored: their app, environment and counter,
    /// and when each was attested and last used.
    public func states(keyIDs: [String]) async throws -> [AppAttestKeyState] {
        guard !keyIDs.isEmpty else { return [] }
        return try await database.run { sql in
            try await sql.statement(
                "SELECT key_id, app_id, environment, counter, created_at, last_used_at FROM app_attest_keys WHERE key_id IN (\(binds: keyIDs))"
            ).all()
        }.map { row in
            AppAttestKeyState(
                keyID: try row.decode(column: "key_id", as: String.self), appID: try row.decode(column: "app_id", as: String.self),
                environment: try row.decode(column: "environment", as: String.self),
                counter: UInt32(truncatingIfNeeded: try row.decode(column: "counter", as: Int64.self)),
                attestedAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self)),
                lastUsedAt: Date(epochMillis: try row.decode(column: "last_used_at", as: Int64.self)))
        }
    }

    /// Raises the key's counter to `counter` if it is still below it: false when another assertion got there first
    /// (a replay, or two operations racing with one assertion).
    public func advance(keyID: [UInt8], to counter: UInt32, now: Date) async throws -> Bool {
        try await database.run { sql in
            try await sql.statement(
                """
                UPDATE app_attest_keys SET counter = \(bind: Int64(counter)), last_used_at = \(bind: now.epochMillis)
                WHERE key_id = \(bind: Base64URL.encode(keyID)) AND counter < \(bind: Int64(counter)) RETURNING key_id
                """
            ).first() != nil
        }
    }

    static func key(_ row: any SQLRow) throws -> AttestedAppKey {
        func bytes(_ column: String) throws -> [UInt8] {
            guard let value = Base64URL.decodeBytes(try row.decode(column: column, as: String.self)) else {
                throw StoreError.malformedRow("app_attest_keys.\(column)")
            }
            return value
        }
        guard let environment = AppAttestEnvironment(rawValue: try row.decode(column: "environment", as: String.self)),
            let counter = UInt32(exactly: try row.decode(column: "counter", as: Int64.self))
        else { throw StoreError.malformedRow("app_attest_keys") }
        return AttestedAppKey(
            keyID: try bytes("key_id"), publicKey: try bytes("public_key"), appID: try row.decode(column: "app_id", as: String.self),
            environment: environment, counter: counter, receipt: try bytes("receipt"))
    }
}
