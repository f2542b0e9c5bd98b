import Foundation
import Primitives
import SQLKit
import UAF

/// Registered authenticator keys, keyed by (AAID, KeyID).
public struct RegistrationStore: Sendable {
    let database: StoreDatabase

    /// Inserts registrations all-or-nothing; throws ``StoreError/duplicateRegistration`` when any (AAID, KeyID)
    /// exists. Duplicates are found with `ON CONFLICT DO NOTHING RETURNING`, never by reading error text: the rows
    /// this statement did insert are removed again before the error is thrown, so a response that names one
    /// registered key stores none of its keys.
    public func insert(_ records: [RegistrationRecord]) async throws {
        guard !records.isEmpty else { return }
        let inserted = try await database.run { sql in
            let rows: [StoreStatement] = records.map { r in
                """
                (\(bind: AAID.normalized(r.aaid)), \(bind: r.keyID), \(bind: r.username), \(bind: Base64URL.encode(r.publicKey)),
                 \(bind: Int64(r.publicKeyEncoding.rawValue)), \(bind: Int64(r.signatureAlgorithm.rawValue)), \(bind: Int64(r.signCounter)),
                 \(bind: Int64(r.registrationCounter)), \(bind: Int64(r.authenticatorVersion)), \(bind: Int64(r.attestationType.rawValue)),
                 \(bind: r.createdAt.epochMillis), \(bind: r.deviceId), \(bind: r.appAttestation), \(bind: r.appAttestKeyID))
                """
            }
            let query: StoreStatement = """
                INSERT INTO registrations (aaid, key_id, username, public_key, public_key_encoding, signature_algorithm,
                    sign_counter, registration_counter, authenticator_version, attestation_type, created_at, device_id, app_attestation,
                    app_attest_key_id)
                VALUES \(rows.joined(separator: ", ")) ON CONFLICT DO NOTHING RETURNING aaid, key_id
                """
            return try await sql.statement(query).all().map {
                (try $0.decode(column: "aaid", as: String.self), try $0.decode(column: "key_id", as: String.self))
            }
        }
        guard inserted.count == records.count else {
            for (aaid, keyID) in inserted { _ = try await delete(aaid: aaid, keyID: keyID) }
            throw StoreError.duplicateRegistration
        }
    }

    public func registration(aaid: String, keyID: String) async throws -> RegistrationRecord? {
        try await database.run { sql in
            try await sql.statement("SELECT * FROM registrations WHERE aaid = \(bind: AAID.normalized(aaid)) AND key_id = \(bind: keyID)").first()
        }.map(Self.record)
    }

    public func registrations(username: String) async throws -> [RegistrationRecord] {
        try await database.run { sql in
            try await sql.statement("SELECT * FROM registrations WHERE username = \(bind: username) ORDER BY created_at, aaid, key_id").all()
        }.map(Self.record)
    }

    /// The registrations a device made, of the given users only (see `DeviceService`).
    public func registrations(deviceId: String, usernames: [String]) async throws -> [RegistrationRecord] {
        guard !usernames.isEmpty else { return [] }
        return try await database.run { sql in
            try await sql.statement(
                """
                SELECT * FROM registrations WHERE device_id = \(bind: deviceId) AND username IN (\(binds: usernames))
                ORDER BY created_at, aaid, key_id
                """
            ).all()
        }.map(Self.record)
    }

    /// Links the keys of one registration to `deviceId`: the key (`aaid`, `keyID`) of `username` and every key of
    /// hers stored with it in the same response (the same `created_at`), each only if it names no device yet. Returns
    /// the key IDs linked. The device a Nevis SDK registered on is known only when it creates its dispatch target
    /// (server-api §D.1 step 6), with the registration's token (`DispatchTargetService.create(_:principal:)`).
    public func link(username: String, aaid: String, keyID: String, deviceId: String) async throws -> [String] {
        try await database.run { sql in
            try await sql.statement(
                """
                UPDATE registrations SET device_id = \(bind: deviceId)
                WHERE username = \(bind: username) AND device_id IS NULL AND created_at = (
                    SELECT created_at FROM registrations
                    WHERE aaid = \(bind: AAID.normalized(aaid)) AND key_id = \(bind: keyID) AND username = \(bind: username))
                RETURNING key_id
                """
            ).all().map { try $0.decode(column: "key_id", as: String.self) }
        }
    }

    /// Sets the counter only if it still is `from`; returns false if another request changed it first.
    public func updateSignCounter(aaid: String, keyID: String, from: UInt32, to: UInt32) async throws -> Bool {
        let update = Self.counterAdvance(aaid: aaid, keyID: keyID, from: from, to: to)
        return try await database.run { sql in try await sql.changedAny(update) }
    }

    /// The compare-and-set of ``updateSignCounter(aaid:keyID:from:to:)``, without its `RETURNING`.
    static func counterAdvance(aaid: String, keyID: String, from: UInt32, to: UInt32) -> StoreStatement {
        """
        UPDATE registrations SET sign_counter = \(bind: Int64(to)) \
        WHERE aaid = \(bind: AAID.normalized(aaid)) AND key_id = \(bind: keyID) AND sign_counter = \(bind: Int64(from))
        """
    }

    /// Deletes one registration; returns whether it existed.
    public func delete(aaid: String, keyID: String) async throws -> Bool {
        try await database.run { sql in
            try await sql.statement(
                """
                DELETE FROM registrations WHERE aaid = \(bind: AAID.normalized(aaid)) AND key_id = \(bind: keyID) RETURNING key_id
                """
            ).first() != nil
        }
    }

    /// Deletes `username`'s registrations, all of them or those of the given AAIDs or KeyIDs, in one statement;
    /// returns what was deleted.
    /// With `deviceId`, only registrations that device made.
    public func delete(
        username: String, aaids: [String]? = nil, keyIDs: [String]? = nil, deviceId: String? = nil
    ) async throws -> [RegistrationRecord] {
        try await database.run { sql in
            var query: StoreStatement = "DELETE FROM registrations WHERE username = \(bind: username)"
            if let deviceId { query += " AND device_id = \(bind: deviceId)" }
            // An empty list selects nothing (never "everything"): callers pass nil for "all".
            if let aaids { query += aaids.isEmpty ? " AND 1 = 0" : " AND aaid IN (\(binds: aaids.map(AAID.normalized)))" }
            if let keyIDs { query += keyIDs.isEmpty ? " AND 1 = 0" : " AND key_id IN (\(binds: keyIDs))" }
            return try await sql.statement(query + " RETURNING *").all()
        }.map(Self.record).sorted { ($0.aaid, $0.keyID) < ($1.aaid, $1.keyID) }
    }

    static func record(_ row: any SQLRow) throws -> RegistrationRecord {
        guard let attestation = AttestationType(rawValue: UInt16(truncatingIfNeeded: try row.decode(column: "attestation_type", as: Int64.self))),
            let publicKey = Base64URL.decode(try row.decode(column: "public_key", as: String.self))
        else {
            throw StoreError.malformedRow("registrations")
        }
        var record = RegistrationRecord(
            username: try row.decode(column: "username", as: String.self), aaid: try row.decode(column: "aaid", as: String.self),
            keyID: try row.decode(column: "key_id", as: String.self), publicKey: Array(publicKey),
            publicKeyEncoding: PublicKeyEncoding(rawValue: UInt16(truncatingIfNeeded: try row.decode(column: "public_key_encoding", as: Int64.self))),
            signatureAlgorithm: SignatureAlgorithm(
                rawValue: UInt16(truncatingIfNeeded: try row.decode(column: "signature_algorithm", as: Int64.self))),
            signCounter: UInt32(truncatingIfNeeded: try row.decode(column: "sign_counter", as: Int64.self)),
            registrationCounter: UInt32(truncatingIfNeeded: try row.decode(column: "registration_counter", as: Int64.self)),
            authenticatorVersion: UInt16(truncatingIfNeeded: try row.decode(column: "authenticator_version", as: Int64.self)),
            attestationType: attestation, createdAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self)),
            deviceId: try row.decode(column: "device_id", as: String?.self))
        record.appAttestation = try row.decode(column: "app_attestation", as: String?.self)
        record.appAttestKeyID = try row.decode(column: "app_attest_key_id", as: String?.self)
        return record
    }
}
