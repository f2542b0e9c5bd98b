import Foundation
import Primitives
import SQLKit

/// Passkeys, keyed by credential ID. Registering one that exists inserts nothing (WebAuthn §7.1 step 26, held by the
/// primary key on every instance at once); a sign-in advances the counter by compare-and-set, so two answers signed
/// with one counter value cannot both count.
public struct PasskeyStore: Sendable {
    let database: StoreDatabase

    static let columns = """
        credential_id, username, user_handle, public_key, sign_count, uv_initialized, backup_eligible, backup_state, transports, aaguid, \
        attestation_format, attestation_type, discoverable, name, created_at, last_used_at, trust
        """

    /// Stores a new passkey; false when its credential ID is already registered (to anyone).
    public func insert(_ record: PasskeyRecord) async throws -> Bool {
        try await database.run { sql in
            try await sql.statement(
                """
                INSERT INTO passkeys (\(unsafeRaw: Self.columns)) VALUES (
                \(bind: record.credentialID), \(bind: record.username), \(bind: record.userHandle), \(bind: Base64URL.encode(record.publicKey)),
                \(bind: Int64(record.signCount)), \(bind: Self.flag(record.userVerifiedAtRegistration)), \(bind: Self.flag(record.backupEligible)),
                \(bind: Self.flag(record.backupState)), \(bind: record.transports.joined(separator: ",")), \(bind: record.aaguid),
                \(bind: record.attestationFormat), \(bind: record.attestationType), \(bind: record.discoverable.map(Self.flag)), \(bind: record.name),
                \(bind: record.createdAt.epochMillis), \(bind: record.lastUsedAt?.epochMillis), \(bind: record.trust))
                ON CONFLICT DO NOTHING RETURNING credential_id
                """
            ).first() != nil
        }
    }

    /// How many passkeys the user holds.
    public func count(username: String) async throws -> Int {
        try await database.run { sql in
            try await sql.statement("SELECT count(*) AS n FROM passkeys WHERE username = \(bind: username)").first()
        }.map { try $0.decode(column: "n", as: Int.self) } ?? 0
    }

    /// The passkey with credential ID `id` (base64url), whoever's it is.
    public func passkey(id: String) async throws -> PasskeyRecord? {
        try await database.run { sql in
            try await sql.statement("SELECT * FROM passkeys WHERE credential_id = \(bind: id)").first()
        }.map(Self.record)
    }

    /// The user's passkeys, oldest first.
    public func passkeys(username: String) async throws -> [PasskeyRecord] {
        try await database.run { sql in
            try await sql.statement("SELECT * FROM passkeys WHERE username = \(bind: username) ORDER BY created_at, credential_id").all()
        }.map(Self.record)
    }

    /// The user handle the user's passkeys carry, if she has one.
    public func userHandle(username: String) async throws -> String? {
        try await database.run { sql in
            try await sql.statement("SELECT user_handle FROM passkeys WHERE username = \(bind: username) LIMIT 1").first()
        }.map { try $0.decode(column: "user_handle", as: String.self) }
    }

    /// Records a sign-in: the counter moves from `from` to `to` only if it is still `from` (compare-and-set), with
    /// the backup state and the time. False when another sign-in moved it first (or the passkey is gone).
    public func recordUse(id: String, from: UInt32, to: UInt32, backupState: Bool, at: Date) async throws -> Bool {
        try await database.run { sql in
            try await sql.changedAny(Self.use(id: id, from: from, to: to, backupState: backupState, at: at))
        }
    }

    /// The compare-and-set of ``recordUse(id:from:to:backupState:at:)`` without its `RETURNING`.
    static func use(id: String, from: UInt32, to: UInt32, backupState: Bool, at: Date) -> StoreStatement {
        """
        UPDATE passkeys SET sign_count = \(bind: Int64(to)), backup_state = \(bind: flag(backupState)), last_used_at = \(bind: at.epochMillis)
        WHERE credential_id = \(bind: id) AND sign_count = \(bind: Int64(from))
        """
    }

    /// Removes the user's passkeys (all, or those of `ids`); returns what was removed. Another user's passkey is never
    /// removed, whatever `ids` names.
    public func delete(username: String, ids: [String]? = nil) async throws -> [PasskeyRecord] {
        if let ids, ids.isEmpty { return [] }
        return try await database.run { sql in
            if let ids {
                return try await sql.statement(
                    """
                    DELETE FROM passkeys WHERE username = \(bind: username) AND credential_id IN (\(binds: ids)) RETURNING *
                    """
                ).all()
            }
            return try await sql.statement("DELETE FROM passkeys WHERE username = \(bind: username) RETURNING *").all()
        }.map(Self.record)
    }

    /// Names the user's passkey `id`; false when she has none of that ID.
    public func rename(username: String, id: String, name: String?) async throws -> Bool {
        try await database.run { sql in
            try await sql.statement(
                """
                UPDATE passkeys SET name = \(bind: name) WHERE credential_id = \(bind: id) AND username = \(bind: username)
                RETURNING credential_id
                """
            ).first() != nil
        }
    }

    /// How a user's removal of one of her passkeys ended (``remove(username:id:allowingLast:)``).
    public enum Removal: Sendable, Equatable {
        case removed(PasskeyRecord)
        /// She holds no passkey of that ID.
        case notFound
        /// It is her last way to sign in (no other passkey, no UAF key), and removing it was not allowed.
        case lastCredential
    }

    /// Removes the user's passkey `id`, unless it is her last credential (no other passkey and no UAF registration)
    /// and `allowingLast` is false: the count and the removal are one statement. Two removals of her last two passkeys
    /// committed at the same moment on PostgreSQL may both pass; they are her own requests.
    public func remove(username: String, id: String, allowingLast: Bool) async throws -> Removal {
        let removed = try await database.run { sql in
            try await sql.statement(
                """
                DELETE FROM passkeys WHERE credential_id = \(bind: id) AND username = \(bind: username)
                    AND (\(unsafeRaw: allowingLast ? "TRUE" : "FALSE")
                         OR (SELECT COUNT(*) FROM passkeys WHERE username = \(bind: username))
                            + (SELECT COUNT(*) FROM registrations WHERE username = \(bind: username)) > 1)
                RETURNING *
                """
            ).first()
        }
        if let removed { return .removed(try Self.record(removed)) }
        return try await passkey(id: id)?.username == username ? .lastCredential : .notFound
    }

    private static func flag(_ value: Bool) -> Int64 { value ? 1 : 0 }

    static func record(_ row: any SQLRow) throws -> PasskeyRecord {
        let key = try row.decode(column: "public_key", as: String.self)
        guard let publicKey = Base64URL.decode(key) else { throw StoreError.malformedRow("passkey public key is not base64url") }
        let transports = try row.decode(column: "transports", as: String.self)
        return PasskeyRecord(
            credentialID: try row.decode(column: "credential_id", as: String.self), username: try row.decode(column: "username", as: String.self),
            userHandle: try row.decode(column: "user_handle", as: String.self), publicKey: Array(publicKey),
            signCount: UInt32(clamping: try row.decode(column: "sign_count", as: Int64.self)),
            userVerifiedAtRegistration: try row.decode(column: "uv_initialized", as: Int64.self) != 0,
            backupEligible: try row.decode(column: "backup_eligible", as: Int64.self) != 0,
            backupState: try row.decode(column: "backup_state", as: Int64.self) != 0,
            transports: transports.isEmpty ? [] : transports.split(separator: ",").map(String.init),
            aaguid: try row.decode(column: "aaguid", as: String.self),
            attestationFormat: try row.decode(column: "attestation_format", as: String.self),
            attestationType: try row.decode(column: "attestation_type", as: String.self),
            discoverable: try row.decode(column: "discoverable", as: Int64?.self).map { $0 != 0 },
            name: try row.decode(column: "name", as: String?.self),
            createdAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self)),
            lastUsedAt: try row.decode(column: "last_used_at", as: Int64?.self).map(Date.init(epochMillis:)),
            trust: try row.decode(column: "trust", as: String?.self))
    }
}
