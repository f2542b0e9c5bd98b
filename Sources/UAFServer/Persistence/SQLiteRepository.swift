import Foundation
import NIOCore
import SQLiteNIO
import UAF

/// The embedded default repository: one SQLite file (WAL mode). Atomicity comes from single statements:
/// `DELETE … RETURNING` consumes a challenge once, a multi-row `INSERT` stores registrations all-or-nothing, and a
/// conditional `UPDATE` advances a counter only from the value that was verified.
public final class SQLiteRepository: Repository {
    private let connection: SQLiteConnection

    private init(connection: SQLiteConnection) { self.connection = connection }

    /// Opens (creating if needed) the database and its schema.
    public static func open(_ database: ServerConfiguration.Database) async throws -> SQLiteRepository {
        let storage: SQLiteConnection.Storage
        switch database {
        case .sqliteInMemory:
            storage = .memory
        case .sqlite(let path):
            let directory = (path as NSString).deletingLastPathComponent
            if !directory.isEmpty {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            }
            storage = .file(path: path)
        }
        let connection = try await SQLiteConnection.open(storage: storage)
        let repository = SQLiteRepository(connection: connection)
        try await repository.migrate()
        return repository
    }

    private func migrate() async throws {
        for statement in [
            "PRAGMA busy_timeout = 5000",
            "PRAGMA journal_mode = WAL",
            "PRAGMA synchronous = NORMAL",
            """
            CREATE TABLE IF NOT EXISTS challenges (
                id TEXT PRIMARY KEY, operation TEXT NOT NULL, challenge TEXT NOT NULL, username TEXT,
                policy TEXT NOT NULL, transactions TEXT NOT NULL, expires_at REAL NOT NULL)
            """,
            """
            CREATE TABLE IF NOT EXISTS registrations (
                aaid TEXT NOT NULL, key_id TEXT NOT NULL, username TEXT NOT NULL, public_key BLOB NOT NULL,
                public_key_encoding INTEGER NOT NULL, signature_algorithm INTEGER NOT NULL, sign_counter INTEGER NOT NULL,
                registration_counter INTEGER NOT NULL, authenticator_version INTEGER NOT NULL, attestation_type INTEGER NOT NULL,
                created_at REAL NOT NULL, PRIMARY KEY (aaid, key_id))
            """,
            "CREATE INDEX IF NOT EXISTS registrations_by_username ON registrations(username)",
        ] {
            _ = try await connection.query(statement)
        }
    }

    private static func json<T: Encodable>(_ value: T) throws -> String { String(decoding: try JSONEncoder().encode(value), as: UTF8.self) }
    private static func decode<T: Decodable>(_ type: T.Type, _ text: String?) throws -> T {
        guard let text else { throw RepositoryError.storage("missing column") }
        return try JSONDecoder().decode(T.self, from: Data(text.utf8))
    }

    public func insertChallenge(_ record: ChallengeRecord) async throws {
        _ = try await connection.query(
            "INSERT INTO challenges (id, operation, challenge, username, policy, transactions, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [.text(record.id), .text(record.operation.rawValue), .text(record.challenge),
             record.username.map(SQLiteData.text) ?? .null, .text(try Self.json(record.policy)),
             .text(try Self.json(record.transactions)), .float(record.expiresAt.timeIntervalSince1970)])
    }

    public func consumeChallenge(id: String) async throws -> ChallengeRecord? {
        let rows = try await connection.query(
            "DELETE FROM challenges WHERE id = ? RETURNING operation, challenge, username, policy, transactions, expires_at", [.text(id)])
        guard let row = rows.first else { return nil }
        guard let op = row.column("operation")?.string.flatMap(UAFOperation.init(rawValue:)),
              let challenge = row.column("challenge")?.string, let expires = row.column("expires_at")?.double else {
            throw RepositoryError.storage("malformed challenge row")
        }
        return ChallengeRecord(
            id: id, operation: op, challenge: challenge, username: row.column("username")?.string,
            policy: try Self.decode(Policy.self, row.column("policy")?.string),
            transactions: try Self.decode([Transaction].self, row.column("transactions")?.string),
            expiresAt: Date(timeIntervalSince1970: expires))
    }

    public func purgeChallenges(expiredBefore date: Date) async throws -> Int {
        try await connection.query("DELETE FROM challenges WHERE expires_at < ? RETURNING id", [.float(date.timeIntervalSince1970)]).count
    }

    public func insertRegistrations(_ records: [RegistrationRecord]) async throws {
        guard !records.isEmpty else { return }
        let placeholders = Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", count: records.count).joined(separator: ", ")
        var binds: [SQLiteData] = []
        for r in records {
            binds += [.text(AAID.normalized(r.aaid)), .text(r.keyID), .text(r.username), .blob(ByteBuffer(bytes: r.publicKey)),
                      .integer(Int(r.publicKeyEncoding.rawValue)), .integer(Int(r.signatureAlgorithm.rawValue)),
                      .integer(Int(r.signCounter)), .integer(Int(r.registrationCounter)), .integer(Int(r.authenticatorVersion)),
                      .integer(Int(r.attestationType.rawValue)), .float(r.createdAt.timeIntervalSince1970)]
        }
        do {
            _ = try await connection.query("""
                INSERT INTO registrations (aaid, key_id, username, public_key, public_key_encoding, signature_algorithm,
                    sign_counter, registration_counter, authenticator_version, attestation_type, created_at) VALUES \(placeholders)
                """, binds)
        } catch {
            if "\(error)".contains("UNIQUE") || "\(error)".contains("constraint") { throw RepositoryError.duplicateRegistration }
            throw error
        }
    }

    private func record(_ row: SQLiteRow) throws -> RegistrationRecord {
        guard let aaid = row.column("aaid")?.string, let keyID = row.column("key_id")?.string,
              let username = row.column("username")?.string, let key = row.column("public_key")?.blob,
              let encoding = row.column("public_key_encoding")?.integer, let algorithm = row.column("signature_algorithm")?.integer,
              let sign = row.column("sign_counter")?.integer, let reg = row.column("registration_counter")?.integer,
              let version = row.column("authenticator_version")?.integer,
              let attestation = row.column("attestation_type")?.integer.flatMap({ AttestationType(rawValue: UInt16($0)) }),
              let created = row.column("created_at")?.double else {
            throw RepositoryError.storage("malformed registration row")
        }
        return RegistrationRecord(
            username: username, aaid: aaid, keyID: keyID, publicKey: Array(key.readableBytesView),
            publicKeyEncoding: PublicKeyEncoding(rawValue: UInt16(encoding)), signatureAlgorithm: SignatureAlgorithm(rawValue: UInt16(algorithm)),
            signCounter: UInt32(sign), registrationCounter: UInt32(reg), authenticatorVersion: UInt16(version),
            attestationType: attestation, createdAt: Date(timeIntervalSince1970: created))
    }

    public func registration(aaid: String, keyID: String) async throws -> RegistrationRecord? {
        try await connection.query("SELECT * FROM registrations WHERE aaid = ? AND key_id = ?", [.text(AAID.normalized(aaid)), .text(keyID)])
            .first.map(record)
    }

    public func registrations(username: String) async throws -> [RegistrationRecord] {
        try await connection.query("SELECT * FROM registrations WHERE username = ? ORDER BY created_at", [.text(username)]).map(record)
    }

    public func updateSignCounter(aaid: String, keyID: String, from: UInt32, to: UInt32) async throws -> Bool {
        let rows = try await connection.query(
            "UPDATE registrations SET sign_counter = ? WHERE aaid = ? AND key_id = ? AND sign_counter = ? RETURNING key_id",
            [.integer(Int(to)), .text(AAID.normalized(aaid)), .text(keyID), .integer(Int(from))])
        return !rows.isEmpty
    }

    public func close() async throws { try await connection.close() }
}
