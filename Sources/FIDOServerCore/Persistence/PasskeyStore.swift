import Foundation
import Primitives
import SQLKit

/// A passkey: a WebAuthn credential record (WebAuthn §7.1 step 27) and what the server knows of its authenticator.
public struct PasskeyRecord: Sendable, Equatable {
    /// base64url of the credential ID.
    public var credentialID: String
    public var username: String
    /// base64url of the user handle the credential was created with (`user.id`).
    public var userHandle: String
    /// The credential public key as COSE_Key bytes.
    public var publicKey: [UInt8]
    public var signCount: UInt32
    /// UV at registration (`uvInitialized`).
    public var userVerifiedAtRegistration: Bool
    public var backupEligible: Bool
    public var backupState: Bool
    /// The transports the client reported, returned in allow and exclude lists as hints.
    public var transports: [String]
    /// The authenticator model, as a lower-case UUID (all zeros when the authenticator does not say).
    public var aaguid: String
    public var attestationFormat: String
    /// `none`, `self`, `basic`, `attCA` or `anonCA`.
    public var attestationType: String
    /// `credProps.rk`: whether the passkey is discoverable; nil when the client did not say.
    public var discoverable: Bool?
    /// A name for the passkey (nevisFIDO's `userFriendlyName`).
    public var name: String?
    public var createdAt: Date
    public var lastUsedAt: Date?
    /// Whether its attestation chained to an accepted root at registration: `trusted`, `untrusted`; nil for a passkey
    /// registered before the server kept it.
    public var trust: String?

    public init(
        credentialID: String, username: String, userHandle: String, publicKey: [UInt8], signCount: UInt32, userVerifiedAtRegistration: Bool,
        backupEligible: Bool, backupState: Bool, transports: [String], aaguid: String, attestationFormat: String, attestationType: String,
        discoverable: Bool?, name: String?, createdAt: Date, lastUsedAt: Date? = nil, trust: String? = nil
    ) {
        self.trust = trust
        self.credentialID = credentialID
        self.username = username
        self.userHandle = userHandle
        self.publicKey = publicKey
        self.signCount = signCount
        self.userVerifiedAtRegistration = userVerifiedAtRegistration
        self.backupEligible = backupEligible
        self.backupState = backupState
        self.transports = transports
        self.aaguid = aaguid
        self.attestationFormat = attestationFormat
        self.attestationType = attestationType
        self.discoverable = discoverable
        self.name = name
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}

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
            try await sql.raw(
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
            try await sql.raw("SELECT count(*) AS n FROM passkeys WHERE username = \(bind: username)").first()
        }.map { try $0.decode(column: "n", as: Int.self) } ?? 0
    }

    /// The passkey with credential ID `id` (base64url), whoever's it is.
    public func passkey(id: String) async throws -> PasskeyRecord? {
        try await database.run { sql in
            try await sql.raw("SELECT * FROM passkeys WHERE credential_id = \(bind: id)").first()
        }.map(Self.record)
    }

    /// The user's passkeys, oldest first.
    public func passkeys(username: String) async throws -> [PasskeyRecord] {
        try await database.run { sql in
            try await sql.raw("SELECT * FROM passkeys WHERE username = \(bind: username) ORDER BY created_at, credential_id").all()
        }.map(Self.record)
    }

    /// The user handle the user's passkeys carry, if she has one.
    public func userHandle(username: String) async throws -> String? {
        try await database.run { sql in
            try await sql.raw("SELECT user_handle FROM passkeys WHERE username = \(bind: username) LIMIT 1").first()
        }.map { try $0.decode(column: "user_handle", as: String.self) }
    }

    /// Records a sign-in: the counter moves from `from` to `to` only if it is still `from` (compare-and-set), with
    /// the backup state and the time. False when another sign-in moved it first (or the passkey is gone).
    public func recordUse(id: String, from: UInt32, to: UInt32, backupState: Bool, at: Date) async throws -> Bool {
        try await database.run { sql in
            try await sql.raw("\(Self.use(id: id, from: from, to: to, backupState: backupState, at: at)) RETURNING credential_id").first() != nil
        }
    }

    /// The compare-and-set of ``recordUse(id:from:to:backupState:at:)`` without its `RETURNING`.
    static func use(id: String, from: UInt32, to: UInt32, backupState: Bool, at: Date) -> SQLQueryString {
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
                return try await sql.raw(
                    """
                    DELETE FROM passkeys WHERE username = \(bind: username) AND credential_id IN (\(binds: ids)) RETURNING *
                    """
                ).all()
            }
            return try await sql.raw("DELETE FROM passkeys WHERE username = \(bind: username) RETURNING *").all()
        }.map(Self.record)
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

/// A WebAuthn ceremony awaiting the browser's answer: found by its challenge, answered once.
public struct WebAuthnCeremonyRecord: Sendable, Equatable {
    public enum Kind: String, Sendable { case registration, authentication }
    /// base64url of the challenge (the key: the answer's clientDataJSON carries it).
    public var challenge: String
    /// nevisFIDO's `fido2SessionId`.
    public var sessionID: String
    public var kind: Kind
    /// The user a registration is for, or an authentication names; nil for a sign-in without a username.
    public var username: String?
    /// base64url of the user handle a registration offered.
    public var userHandle: String?
    /// `required`, `preferred` or `discouraged`: what the answer is held to.
    public var userVerification: String
    public var expiresAt: Date

    public init(challenge: String, sessionID: String, kind: Kind, username: String?, userHandle: String?, userVerification: String, expiresAt: Date) {
        self.challenge = challenge
        self.sessionID = sessionID
        self.kind = kind
        self.username = username
        self.userHandle = userHandle
        self.userVerification = userVerification
        self.expiresAt = expiresAt
    }
}

/// WebAuthn ceremonies awaiting an answer. ``consume(challenge:)`` is one `DELETE … RETURNING`: a challenge is
/// answered at most once across every instance sharing the database, whether the answer succeeds or not.
public struct WebAuthnCeremonyStore: Sendable {
    let database: StoreDatabase

    /// Stores a ceremony; under `cap` only while its user has fewer than `cap.limit` counted ceremonies unexpired
    /// (the count and the insert in one statement). False when the cap is reached.
    package func open(_ record: WebAuthnCeremonyRecord, cap: UAFRequestStore.Cap?) async throws -> Bool {
        let values: SQLQueryString = """
            \(bind: record.challenge), \(bind: record.sessionID), \(bind: record.kind.rawValue), \(bind: record.username), \(bind: record.userHandle), \
            \(bind: record.userVerification), \(bind: cap?.username), \(bind: record.expiresAt.epochMillis)
            """
        let columns = "challenge, session_id, kind, username, user_handle, user_verification, counted_username, expires_at"
        return try await database.run { sql in
            if let cap {
                return try await sql.raw(
                    """
                    INSERT INTO webauthn_ceremonies (\(unsafeRaw: columns)) SELECT \(values)
                    WHERE (SELECT COUNT(*) FROM webauthn_ceremonies WHERE counted_username = \(bind: cap.username)
                           AND +expires_at >= \(bind: cap.now.epochMillis)) < \(bind: Int64(cap.limit))
                    RETURNING challenge
                    """
                ).first() != nil
            }
            return try await sql.raw("INSERT INTO webauthn_ceremonies (\(unsafeRaw: columns)) VALUES (\(values)) RETURNING challenge").first() != nil
        }
    }

    /// Removes and returns the ceremony of `challenge` (once only), expired or not: the caller refuses an expired one.
    public func consume(challenge: String) async throws -> WebAuthnCeremonyRecord? {
        try await database.run { sql in
            try await sql.raw("DELETE FROM webauthn_ceremonies WHERE challenge = \(bind: challenge) RETURNING *").first()
        }.map { try Self.record($0) }
    }

    /// Removes the unanswered ceremonies counted against `username` (her erasure); returns how many.
    public func deleteCounted(username: String) async throws -> Int {
        try await database.run { sql in
            try await sql.raw("DELETE FROM webauthn_ceremonies WHERE counted_username = \(bind: username) RETURNING challenge").all().count
        }
    }

    /// Removes ceremonies that expired before `date`; returns how many.
    public func purge(expiredBefore date: Date, batch: Int = StoreDatabase.purgeBatch) async throws -> Int {
        try await database.deleteExpired(from: "webauthn_ceremonies", before: date.epochMillis, batch: batch)
    }

    /// The columns a ceremony is read from.
    static let columns = ["challenge", "session_id", "kind", "username", "user_handle", "user_verification", "expires_at"]
    /// What a ceremony's columns are renamed to when a statement also returns a passkey's (which has its own
    /// `username` and `user_handle`).
    static let prefix = "ceremony_"

    /// `source`'s ceremony columns, each as ``prefix`` and its name.
    static func prefixedColumns(from source: String) -> String {
        columns.map { "\(source).\($0) AS \(prefix)\($0)" }.joined(separator: ", ")
    }

    static func record(_ row: any SQLRow, prefix: String = "") throws -> WebAuthnCeremonyRecord {
        func column(_ name: String) -> String { prefix + name }
        let kind = try row.decode(column: column("kind"), as: String.self)
        guard let parsed = WebAuthnCeremonyRecord.Kind(rawValue: kind) else { throw StoreError.malformedRow("WebAuthn ceremony kind \(kind)") }
        return WebAuthnCeremonyRecord(
            challenge: try row.decode(column: column("challenge"), as: String.self),
            sessionID: try row.decode(column: column("session_id"), as: String.self),
            kind: parsed, username: try row.decode(column: column("username"), as: String?.self),
            userHandle: try row.decode(column: column("user_handle"), as: String?.self),
            userVerification: try row.decode(column: column("user_verification"), as: String.self),
            expiresAt: Date(epochMillis: try row.decode(column: column("expires_at"), as: Int64.self)))
    }
}
