import Foundation
import SQLKit

/// The server's token-signing keys when none is configured (`tokens.signingKeyPath`): held in the database, so
/// every instance signs with, and publishes, the same keys, and an operator rotates them on every instance at once
/// (`mauth admin signing-key`). A key is added pending (published, so relying parties and the other instances learn
/// it before it signs), activated (it signs; the key it replaces is retired), and retired keys stay published and
/// verifying until the tokens they signed have expired. Whoever can read the database can forge tokens; see the
/// production checklist in the FIDOServer documentation ("Deploying the server").
public struct SigningKeyStore: Sendable {
    let database: StoreDatabase

    static func record(_ row: any SQLRow) throws -> SigningKeyRecord {
        SigningKeyRecord(
            kid: try row.decode(column: "kid", as: String.self), pem: try row.decode(column: "private_key_pem", as: String.self),
            createdAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self)),
            activatedAt: try row.decode(column: "activated_at", as: Int64?.self).map(Date.init(epochMillis:)),
            retiredAt: try row.decode(column: "retired_at", as: Int64?.self).map(Date.init(epochMillis:)))
    }

    /// Makes `candidate` the active key when no key is active (the first start). Two instances starting together may
    /// both insert; ``usable(now:keepRetiredFor:)`` orders the active keys the same way on both, so both sign with one.
    public func bootstrap(candidate: (kid: String, pem: String), now: Date) async throws {
        try await database.run { sql in
            guard try await sql.statement("SELECT kid FROM signing_keys WHERE activated_at IS NOT NULL AND retired_at IS NULL LIMIT 1").first() == nil
            else { return }
            try await sql.statement(
                """
                INSERT INTO signing_keys (kid, private_key_pem, created_at, activated_at)
                VALUES (\(bind: candidate.kid), \(bind: candidate.pem), \(bind: now.epochMillis), \(bind: now.epochMillis))
                ON CONFLICT DO NOTHING
                """
            ).run()
        }
    }

    /// The keys an instance publishes and verifies with at `now`: pending, active, and retired less than
    /// `keepRetiredFor` ago; the signing key first (the most recently activated active key, then by kid).
    public func usable(now: Date, keepRetiredFor: TimeInterval) async throws -> [SigningKeyRecord] {
        let cutoff = now.addingTimeInterval(-keepRetiredFor).epochMillis
        return try await database.run { sql in
            try await sql.statement("SELECT * FROM signing_keys WHERE retired_at IS NULL OR retired_at > \(bind: cutoff)").all()
        }.map(Self.record).sorted(by: Self.signingOrder)
    }

    /// Every key, newest first.
    public func list() async throws -> [SigningKeyRecord] {
        try await database.run { sql in try await sql.statement("SELECT * FROM signing_keys").all() }
            .map(Self.record).sorted { ($0.createdAt, $0.kid) > ($1.createdAt, $1.kid) }
    }

    /// Active keys first, the latest activation first, then by kid: the same order on every instance.
    static func signingOrder(_ a: SigningKeyRecord, _ b: SigningKeyRecord) -> Bool {
        func rank(_ r: SigningKeyRecord) -> Int { r.state == .active ? 0 : r.state == .pending ? 1 : 2 }
        if rank(a) != rank(b) { return rank(a) < rank(b) }
        let (x, y) = (a.activatedAt ?? a.createdAt, b.activatedAt ?? b.createdAt)
        return x != y ? x > y : a.kid < b.kid
    }

    /// Adds a pending key.
    public func add(kid: String, pem: String, now: Date) async throws {
        try await database.run { sql in
            try await sql.statement(
                "INSERT INTO signing_keys (kid, private_key_pem, created_at) VALUES (\(bind: kid), \(bind: pem), \(bind: now.epochMillis))"
            ).run()
        }
    }

    public enum ChangeRefusal: Error, Equatable, CustomStringConvertible {
        case unknown(String)
        case notPending(String, SigningKeyRecord.State)
        case active(String)
        case alreadyRetired(String)
        public var description: String {
            switch self {
            case .unknown(let kid): return "no signing key has the kid \(kid)"
            case .notPending(let kid, let state): return "signing key \(kid) is \(state.rawValue); only a pending key can be activated"
            case .active(let kid): return "signing key \(kid) is the active one; activate another key first"
            case .alreadyRetired(let kid): return "signing key \(kid) is already retired"
            }
        }
    }

    /// Makes the pending key `kid` the signing key and retires the active one, in one statement (so no instance
    /// ever reads two keys changing apart).
    public func activate(kid: String, now: Date) async throws {
        let changed = try await database.run { sql in
            try await sql.statement(
                """
                UPDATE signing_keys
                SET activated_at = CASE WHEN kid = \(bind: kid) THEN \(bind: now.epochMillis) ELSE activated_at END,
                    retired_at = CASE WHEN kid = \(bind: kid) THEN NULL ELSE \(bind: now.epochMillis) END
                WHERE EXISTS (SELECT 1 FROM signing_keys p WHERE p.kid = \(bind: kid) AND p.activated_at IS NULL AND p.retired_at IS NULL)
                  AND (kid = \(bind: kid) OR (activated_at IS NOT NULL AND retired_at IS NULL))
                RETURNING kid
                """
            ).all()
        }
        guard changed.isEmpty else { return }
        guard let state = try await state(kid) else { throw ChangeRefusal.unknown(kid) }
        throw ChangeRefusal.notPending(kid, state)
    }

    /// Retires a pending key that will not be used; the active key is retired by activating another.
    public func retire(kid: String, now: Date) async throws {
        let changed = try await database.run { sql in
            try await sql.statement(
                """
                UPDATE signing_keys SET retired_at = \(bind: now.epochMillis)
                WHERE kid = \(bind: kid) AND activated_at IS NULL AND retired_at IS NULL RETURNING kid
                """
            ).all()
        }
        guard changed.isEmpty else { return }
        switch try await state(kid) {
        case nil: throw ChangeRefusal.unknown(kid)
        case .active: throw ChangeRefusal.active(kid)
        case .retired, .pending: throw ChangeRefusal.alreadyRetired(kid)
        }
    }

    private func state(_ kid: String) async throws -> SigningKeyRecord.State? {
        try await database.run { sql in
            try await sql.statement("SELECT * FROM signing_keys WHERE kid = \(bind: kid)").first()
        }.map(Self.record)?.state
    }
}
