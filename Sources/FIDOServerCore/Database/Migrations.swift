import Foundation
import Logging
import SQLKit

/// The schema, as numbered migrations applied once each at start-up, in order, inside one transaction, and
/// recorded in `mauth_migrations`. A migration is never edited after it shipped: a change is a new number.
/// Several instances starting together on PostgreSQL serialise on an advisory lock, so each migration runs once.
enum Migrations {
    package struct Migration: Sendable {
        let version: Int
        let name: String
        let statements: [String]
        /// Storage settings only PostgreSQL has, run there after ``statements`` (SQLite has no equivalent and needs
        /// none): never a change to what a table holds.
        var postgresStatements: [String] = []
    }

    /// Portable DDL only (TEXT and BIGINT): the same statements run on SQLite and PostgreSQL, but for storage settings
    /// only PostgreSQL has (``Migration/postgresStatements``).
    static let all: [Migration] = [
        Migration(
            version: 1, name: "uaf requests and registrations",
            statements: [
                """
                CREATE TABLE uaf_requests (
                    id TEXT PRIMARY KEY, operation TEXT NOT NULL, challenge TEXT NOT NULL, username TEXT,
                    policy TEXT NOT NULL, transactions TEXT NOT NULL, expires_at BIGINT NOT NULL)
                """,
                "CREATE INDEX uaf_requests_by_expiry ON uaf_requests(expires_at)",
                "CREATE INDEX uaf_requests_by_username ON uaf_requests(username)",
                """
                CREATE TABLE registrations (
                    aaid TEXT NOT NULL, key_id TEXT NOT NULL, username TEXT NOT NULL, public_key TEXT NOT NULL,
                    public_key_encoding BIGINT NOT NULL, signature_algorithm BIGINT NOT NULL, sign_counter BIGINT NOT NULL,
                    registration_counter BIGINT NOT NULL, authenticator_version BIGINT NOT NULL, attestation_type BIGINT NOT NULL,
                    created_at BIGINT NOT NULL, PRIMARY KEY (aaid, key_id))
                """,
                "CREATE INDEX registrations_by_username ON registrations(username)",
            ]),
        Migration(
            version: 2, name: "sessions, signing keys and status records",
            statements: [
                """
                CREATE TABLE sessions (
                    token_hash TEXT PRIMARY KEY, id TEXT NOT NULL UNIQUE, username TEXT NOT NULL, aaid TEXT NOT NULL,
                    key_id TEXT NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, revoked_at BIGINT)
                """,
                "CREATE INDEX sessions_by_username ON sessions(username)",
                "CREATE INDEX sessions_by_expiry ON sessions(expires_at)",
                """
                CREATE TABLE signing_keys (
                    kid TEXT PRIMARY KEY, private_key_pem TEXT NOT NULL, created_at BIGINT NOT NULL)
                """,
                """
                CREATE TABLE status_records (
                    session_id TEXT PRIMARY KEY, status TEXT NOT NULL, username TEXT, operation TEXT NOT NULL,
                    uaf_status_code BIGINT, asm_status_code BIGINT, client_error_code BIGINT, authenticators TEXT NOT NULL,
                    updated_at BIGINT NOT NULL, expires_at BIGINT NOT NULL)
                """,
                "CREATE INDEX status_records_by_expiry ON status_records(expires_at)",
            ]),
        Migration(
            version: 3, name: "dispatch targets, dispatch tokens and device request ids",
            statements: [
                """
                CREATE TABLE dispatch_targets (
                    id TEXT PRIMARY KEY, ext_id TEXT NOT NULL UNIQUE, username TEXT NOT NULL, name TEXT NOT NULL, device_id TEXT,
                    dispatcher TEXT NOT NULL, target TEXT, signature_key TEXT NOT NULL, encryption_key TEXT,
                    created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, UNIQUE (username, name))
                """,
                "CREATE INDEX dispatch_targets_by_device ON dispatch_targets(device_id)",
                """
                CREATE TABLE dispatch_tokens (
                    token_hash TEXT PRIMARY KEY, session_id TEXT NOT NULL UNIQUE, operation TEXT NOT NULL, get_uaf_request TEXT NOT NULL,
                    username TEXT, dispatch_target_id TEXT, dispatcher TEXT NOT NULL, dispatch_information TEXT, payload TEXT,
                    created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, redeemed_at BIGINT)
                """,
                "CREATE INDEX dispatch_tokens_by_target ON dispatch_tokens(dispatch_target_id)",
                "CREATE INDEX dispatch_tokens_by_expiry ON dispatch_tokens(expires_at)",
                """
                CREATE TABLE device_requests (
                    dispatch_target_id TEXT NOT NULL, request_id TEXT NOT NULL, expires_at BIGINT NOT NULL,
                    PRIMARY KEY (dispatch_target_id, request_id))
                """,
                "CREATE INDEX device_requests_by_expiry ON device_requests(expires_at)",
                "ALTER TABLE status_records ADD COLUMN token_information TEXT",
            ]),
        Migration(
            version: 4, name: "the device a registration was made on",
            statements: [
                "ALTER TABLE registrations ADD COLUMN device_id TEXT",
                "CREATE INDEX registrations_by_device ON registrations(device_id)",
            ]),
        Migration(
            version: 5, name: "Auth Cloud users and access keys",
            statements: [
                """
                CREATE TABLE auth_cloud_users (
                    user_id TEXT PRIMARY KEY, username TEXT NOT NULL UNIQUE, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL)
                """,
                """
                CREATE TABLE access_keys (
                    id TEXT PRIMARY KEY, name TEXT NOT NULL, key_hash TEXT NOT NULL UNIQUE, created_at BIGINT NOT NULL, revoked_at BIGINT)
                """,
            ]),
        // The per-user cap counts a user's unexpired requests on every issued request (`UAFCeremonyStore.unexpired`).
        // An index on (username, expires_at) answers that count from the index alone, and still serves every
        // lookup by user that the index on username alone served, so it replaces it.
        Migration(
            version: 6, name: "requests indexed by user and expiry",
            statements: [
                "CREATE INDEX uaf_requests_by_username_expiry ON uaf_requests(username, expires_at)",
                "DROP INDEX uaf_requests_by_username",
            ]),
        // The per-user cap counts only requests asked for by a caller who may act for the user (see
        // `UAFExchange.issue`): `counted_username` is that user, NULL for a request that counts against nobody
        // (no user named, or an anonymous step-up). Anonymous callers could otherwise fill a user's budget and lock
        // her out. The cap's index moves to the new column; the old one served nothing else. Deleting a user expires
        // her unredeemed dispatch tokens, found by username.
        Migration(
            version: 7, name: "requests counted against a user's cap; dispatch tokens by user",
            statements: [
                "ALTER TABLE uaf_requests ADD COLUMN counted_username TEXT",
                "UPDATE uaf_requests SET counted_username = username",
                "CREATE INDEX uaf_requests_by_counted_username_expiry ON uaf_requests(counted_username, expires_at)",
                "DROP INDEX uaf_requests_by_username_expiry",
                "CREATE INDEX dispatch_tokens_by_username ON dispatch_tokens(username)",
            ]),
        // A token dispatched by a device signature carries the device it was confined to, so the operation it
        // stands for stays within that device when redeemed (see `Principal.confinedDeviceId`).
        Migration(
            version: 8, name: "dispatch tokens confined to a device",
            statements: [
                "ALTER TABLE dispatch_tokens ADD COLUMN device_id TEXT"
            ]),
        // Who created an Auth Cloud user: `demo-site` for the web demo, which may reach only the users it created;
        // NULL for a user of the API (an access key acts for every user).
        Migration(
            version: 9, name: "auth cloud users know who created them",
            statements: [
                "ALTER TABLE auth_cloud_users ADD COLUMN created_by TEXT"
            ]),
        // Token-signing keys that rotate: a key is pending (published, not signing), active (signing) or retired
        // (published and verifying until the tokens it signed have expired). The key every instance used so far
        // (the oldest) becomes the active one; rows two instances inserted at once and never used are retired.
        Migration(
            version: 10, name: "token-signing keys that rotate",
            statements: [
                "ALTER TABLE signing_keys ADD COLUMN activated_at BIGINT",
                "ALTER TABLE signing_keys ADD COLUMN retired_at BIGINT",
                "UPDATE signing_keys SET activated_at = created_at WHERE kid = (SELECT kid FROM signing_keys ORDER BY created_at, kid LIMIT 1)",
                "UPDATE signing_keys SET retired_at = created_at WHERE activated_at IS NULL",
            ]),
        // The audit trail (`AuditTrail`): one row per security decision, kept until `expires_at` (its time plus the
        // retention in force when it was written), read by user and newest first, purged through `expires_at`.
        Migration(
            version: 11, name: "the audit trail",
            statements: [
                """
                CREATE TABLE audit_events (
                    at BIGINT NOT NULL, expires_at BIGINT NOT NULL, request_id TEXT, client_address TEXT, principal TEXT,
                    operation TEXT NOT NULL, username TEXT, status_code BIGINT NOT NULL, detail TEXT NOT NULL)
                """,
                "CREATE INDEX audit_events_by_expiry ON audit_events(expires_at)",
                "CREATE INDEX audit_events_by_at ON audit_events(at)",
                "CREATE INDEX audit_events_by_username_at ON audit_events(username, at)",
            ]),
        // The configured policy set a request was issued under (`UAFCeremony.policyName`), NULL for the built-in
        // policy: a login's token names it, so that the relying party sees which policy the login satisfied.
        Migration(
            version: 12, name: "requests remember their policy's name",
            statements: [
                "ALTER TABLE uaf_requests ADD COLUMN policy_name TEXT"
            ]),
        // Passkeys (WebAuthn credential records, §7.1 step 27) and the ceremonies awaiting their answer. A ceremony is
        // found by its challenge, which the browser's answer carries in clientDataJSON, and consumed by one
        // `DELETE … RETURNING`, so it is answered once across every instance. The user handle is random and kept
        // on each of the user's passkeys (never the username: it is stored on the authenticator and may be shown).
        Migration(
            version: 13, name: "passkeys and WebAuthn ceremonies",
            statements: [
                """
                CREATE TABLE passkeys (
                    credential_id TEXT PRIMARY KEY, username TEXT NOT NULL, user_handle TEXT NOT NULL, public_key TEXT NOT NULL,
                    sign_count BIGINT NOT NULL, uv_initialized BIGINT NOT NULL, backup_eligible BIGINT NOT NULL, backup_state BIGINT NOT NULL,
                    transports TEXT NOT NULL, aaguid TEXT NOT NULL, attestation_format TEXT NOT NULL, attestation_type TEXT NOT NULL,
                    discoverable BIGINT, name TEXT, created_at BIGINT NOT NULL, last_used_at BIGINT)
                """,
                "CREATE INDEX passkeys_by_username ON passkeys(username)",
                """
                CREATE TABLE webauthn_ceremonies (
                    challenge TEXT PRIMARY KEY, session_id TEXT NOT NULL, kind TEXT NOT NULL, username TEXT, user_handle TEXT,
                    user_verification TEXT NOT NULL, counted_username TEXT, expires_at BIGINT NOT NULL)
                """,
                "CREATE INDEX webauthn_ceremonies_by_expiry ON webauthn_ceremonies(expires_at)",
                "CREATE INDEX webauthn_ceremonies_by_counted_username_expiry ON webauthn_ceremonies(counted_username, expires_at)",
            ]),
        // Whether a passkey's attestation chained to an accepted root when it registered (`trusted`, `untrusted`),
        // for the operator's view; NULL for passkeys registered before it was kept.
        Migration(
            version: 14, name: "passkeys remember whether their attestation was trusted",
            statements: [
                "ALTER TABLE passkeys ADD COLUMN trust TEXT"
            ]),
        // A session names the kind of credential that opened it (`uaf` or `passkey`) and its id (a UAF KeyID or a
        // passkey's credential ID); only a UAF key has an AAID (passkey sessions stored an empty one before). Rebuilt,
        // since SQLite cannot drop NOT NULL from a column; sessions live hours, so the copy is small.
        Migration(
            version: 15, name: "sessions name the credential that opened them",
            statements: [
                """
                CREATE TABLE sessions_next (
                    token_hash TEXT PRIMARY KEY, id TEXT NOT NULL UNIQUE, username TEXT NOT NULL, credential_kind TEXT NOT NULL, aaid TEXT,
                    credential_id TEXT NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, revoked_at BIGINT)
                """,
                """
                INSERT INTO sessions_next (token_hash, id, username, credential_kind, aaid, credential_id, created_at, expires_at, revoked_at)
                SELECT token_hash, id, username, CASE WHEN aaid = '' THEN 'passkey' ELSE 'uaf' END, NULLIF(aaid, ''), key_id, created_at,
                    expires_at, revoked_at
                FROM sessions
                """,
                "DROP TABLE sessions",
                "ALTER TABLE sessions_next RENAME TO sessions",
                "CREATE INDEX sessions_by_username ON sessions(username)",
                "CREATE INDEX sessions_by_expiry ON sessions(expires_at)",
            ]),
        // App attestation: what a UAF request asked of the app (`report`, `require`; NULL for nothing), and the App
        // Attest keys, one per app install, by key ID, with the counter its last assertion reached (raised by a
        // compare-and-set, so an assertion counts once across every instance) and Apple's receipt.
        Migration(
            version: 16, name: "app attestation",
            statements: [
                "ALTER TABLE uaf_requests ADD COLUMN app_attestation TEXT",
                """
                CREATE TABLE app_attest_keys (
                    key_id TEXT PRIMARY KEY, app_id TEXT NOT NULL, environment TEXT NOT NULL, public_key TEXT NOT NULL,
                    counter BIGINT NOT NULL, receipt TEXT NOT NULL, created_at BIGINT NOT NULL, last_used_at BIGINT NOT NULL)
                """,
            ]),
        // A registration remembers the app attestation it passed (the verdict line; NULL when none was asked) and the
        // App Attest key of the install that registered it, so an operator sees a device's attestation state.
        Migration(
            version: 17, name: "registrations remember their app attestation",
            statements: [
                "ALTER TABLE registrations ADD COLUMN app_attestation TEXT",
                "ALTER TABLE registrations ADD COLUMN app_attest_key_id TEXT",
            ]),
        // Secrets every instance shares, made by whichever starts first (the passkey decoys' key): a secret in the
        // database changes with nothing but an operator's action, so what it keys stays the same across restarts.
        Migration(
            version: 18, name: "secrets the instances share",
            statements: [
                "CREATE TABLE server_secrets (name TEXT PRIMARY KEY, secret TEXT NOT NULL, created_at BIGINT NOT NULL)"
            ]),
        // nevisFIDO's FIDO2 status service: a ceremony's row outlives its answer, for the status retention past its
        // expiry. Its state moves once from `initialized` to `answered` (the answer consumed it, so a challenge is
        // still answered once across every instance) and then to `succeeded` or `failed` with the refusal's words.
        Migration(
            version: 19, name: "WebAuthn ceremonies keep their outcome for the status service",
            statements: [
                "ALTER TABLE webauthn_ceremonies ADD COLUMN state TEXT NOT NULL DEFAULT 'initialized'",
                "ALTER TABLE webauthn_ceremonies ADD COLUMN outcome TEXT",
                "CREATE INDEX webauthn_ceremonies_by_session ON webauthn_ceremonies(session_id)",
            ]),
        // A registration the page makes by conditional create (`mediation: "conditional"`), where the browser may make
        // the passkey without the user's gesture, so its answer may lack user presence.
        Migration(
            version: 20, name: "WebAuthn ceremonies remember a conditional create",
            statements: [
                "ALTER TABLE webauthn_ceremonies ADD COLUMN conditional BIGINT NOT NULL DEFAULT 0"
            ]),
        // The Auth Cloud's passkey channel: an approval may be for one passkey (the only credential that may answer
        // it), and its status names the passkey that answered; a cancelled ceremony reads `cancelled` (a state value).
        Migration(
            version: 21, name: "WebAuthn ceremonies name their credential",
            statements: [
                "ALTER TABLE webauthn_ceremonies ADD COLUMN credential_id TEXT"
            ]),
        // Every sign-in updates its key's row (the signature counter). PostgreSQL writes an update as a new version of
        // the row: on the same page, with no index touched (a HOT update), only where the page has room. Rows written in
        // bulk fill their pages, so at ten million users most updates went to another page and added an entry to each of
        // the table's indexes, and logins ran at 0.74 to 0.90 of the 1,000-user rate (measured, `mauth load
        // --fill-database`). A tenth of each new page is kept free for those updates. SQLite updates in place.
        Migration(
            version: 22, name: "room on the pages of rows every sign-in updates (PostgreSQL)", statements: [],
            postgresStatements: [
                "ALTER TABLE registrations SET (fillfactor = 90)",
                "ALTER TABLE passkeys SET (fillfactor = 90)",
                "ALTER TABLE app_attest_keys SET (fillfactor = 90)",
            ]),
    ]

    /// Whether tables of an earlier, unversioned schema exist (`challenges` was its request table).
    static func hasUnversionedSchema(_ sql: any SQLDatabase, engine: StoreDatabase.Engine) async throws -> Bool {
        switch engine {
        case .sqlite:
            return try await sql.raw("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('challenges', 'registrations')").first() != nil
        case .postgres:
            return try await sql.raw(
                """
                SELECT table_name FROM information_schema.tables
                WHERE table_schema = current_schema() AND table_name IN ('challenges', 'registrations')
                """
            ).first() != nil
        }
    }

    static func run(on database: StoreDatabase, logger: Logger) async throws {
        try await database.transaction { sql in
            if database.engine == .postgres {
                // One instance migrates at a time; the lock is released with the transaction.
                try await sql.raw("SELECT pg_advisory_xact_lock(7263570001)").run()
            }
            try await sql.raw(
                """
                CREATE TABLE IF NOT EXISTS mauth_migrations (
                    version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)
                """
            ).run()
            let applied = Set(
                try await sql.raw("SELECT version FROM mauth_migrations").all().map {
                    try $0.decode(column: "version", as: Int64.self)
                })
            if applied.isEmpty, try await hasUnversionedSchema(sql, engine: database.engine) {
                // Tables without a migration record were written by a mauth from before numbered migrations. Refuse
                // rather than guess: nothing is changed, and the operator decides what to do with the old file.
                throw ServerConfiguration.ConfigurationError.invalid(
                    "the database has mauth tables but no migration record (made by an earlier mauth version); move it aside and start with an empty database"
                )
            }
            for migration in all where !applied.contains(Int64(migration.version)) {
                for statement in migration.statements { try await sql.raw(SQLQueryString(statement)).run() }
                if database.engine == .postgres {
                    for statement in migration.postgresStatements { try await sql.raw(SQLQueryString(statement)).run() }
                }
                try await sql.raw(
                    """
                    INSERT INTO mauth_migrations (version, name, applied_at)
                    VALUES (\(bind: Int64(migration.version)), \(bind: migration.name), \(bind: Date().epochMillis))
                    """
                ).run()
                logger.info("database migration \(migration.version) applied: \(migration.name)")
            }
        }
    }
}
