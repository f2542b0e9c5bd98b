import ArgumentParser
import Crypto
import FIDOServer
import FIDOServerCore
import Foundation
import JOSE

/// Operator tasks on a server's database, with the server running or not (`mauth admin …`).
struct AdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin", abstract: "Administer a server's database (users' data, Auth Cloud access keys, token-signing keys).",
        subcommands: [
            AdminUserCommand.self, AccessKeyCommand.self, SigningKeyCommand.self, AdminAuditCommand.self,
            AdminTokenCommand.self, AdminExportCommand.self, AdminImportCommand.self, AdminMigrateCommand.self,
        ])
}

/// Where the database is: the server's configuration file (and MAUTH_* variables), or `--database` alone.
struct DatabaseOptions: ParsableArguments {
    @Option(help: "The server's configuration file (JSON); MAUTH_* environment variables override it.") var config: String?
    @Option(help: "SQLite database file or a postgres:// URL (overrides the configuration).") var database: String?
    @Flag(help: "Create the SQLite database if there is none yet (before the server's first start).") var create = false

    /// Opens the database (running its migrations), runs `body` on its stores, and closes it, also when `body` fails.
    func withStores<T>(_ body: (Stores) async throws -> T) async throws -> T {
        try await withDatabase(groupCommit: true) { try await body(Stores(database: $0)) }
    }

    /// Opens the database as ``withStores(_:)`` does; with `groupCommit` false, SQLite commits each run on its own, so
    /// that a transfer may hold one transaction (see `StoreDatabase.open`).
    func withDatabase<T>(groupCommit: Bool, _ body: (StoreDatabase) async throws -> T) async throws -> T {
        var configuration = try ServerConfiguration.load(path: config)
        if let database { configuration.database = .init(text: database) }
        // A mistyped path, or a working directory other than the server's, would otherwise make a new empty database
        // without a word: keys created there are refused by the server, and a user with keys shows none.
        if case .sqlite(let path) = configuration.database, !create, !FileManager.default.fileExists(atPath: path) {
            throw ValidationError(
                "no database at \(path): name the server's with --config FILE (its configuration) or --database PATH, "
                    + "or pass --create to make a new one")
        }
        let database = try await StoreDatabase.open(configuration.database, groupCommit: groupCommit)
        let result: T
        do { result = try await body(database) } catch {
            try? await database.close()
            throw error
        }
        try await database.close()
        return result
    }

    /// The operator at the database: the account that ran `mauth`, which holds the database's credentials. The trail
    /// names it `operator:<login name>`, with the client `local`.
    static var databaseOperator: Principal {
        let login = getpwuid(geteuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } } ?? "uid \(geteuid())"
        return Principal(source: .databaseOperator(login: login), subject: nil, isAdmin: false, isOperator: true)
    }

    /// Runs `body` with the operator's service (``AdminService``), the one the HTTP admin endpoints call: the same
    /// rules, answers, refusals and audit events. Every decision it takes is written to the audit trail, and so is a
    /// refusal (`operation`, as the server records a rejection); a refusal ends the command with the service's words.
    func withAdmin<T>(_ operation: OperationName, _ body: (AdminService, Principal) async throws -> T) async throws -> T {
        let principal = Self.databaseOperator
        let decisions = DecisionLog()
        return try await withStores { stores in
            // The names the server would show for passkeys: the bundled list and the configured file's.
            let providers = try PasskeyProviders(file: try ServerConfiguration.load(path: config).fido2?.providerNamesPath)
            let admin = AdminService(stores: stores, clock: { Date() }, providers: providers, onDecision: { decisions.append($0) })
            do {
                let result = try await body(admin, principal)
                try await record(stores, decisions.taken, principal: principal)
                return result
            } catch let failure as ServiceFailure {
                decisions.append(
                    ServerDecision(
                        operation: operation, username: failure.username, statusCode: Int(failure.status.rawValue),
                        detail: "rejected: \(failure.detail)"))
                try await record(stores, decisions.taken, principal: principal)
                throw AdminRefusal(description: failure.detail)
            }
        }
    }

    /// Records an operator's action in the audit trail, as the decisions of the server are. Nothing is stored when
    /// the configuration keeps no audit trail (`observability.auditRetentionDays` 0).
    func record(_ stores: Stores, _ operation: OperationName, username: String?, detail: String) async throws {
        try await record(
            stores, [ServerDecision(operation: operation, username: username, statusCode: 200, detail: detail)],
            principal: Self.databaseOperator)
    }

    private func record(_ stores: Stores, _ decisions: [ServerDecision], principal: Principal) async throws {
        let retentionDays = try ServerConfiguration.load(path: config).observability.auditRetentionDays
        guard retentionDays > 0, !decisions.isEmpty else { return }
        try await stores.audit.insert(
            decisions.map { decision in
                AuditEvent(
                    at: Date(), requestID: nil, clientAddress: "local", principal: principal.auditName, operation: decision.operation.rawValue,
                    username: decision.username, statusCode: decision.statusCode, detail: decision.detail)
            }, retention: TimeInterval(retentionDays) * 86_400)
    }
}

/// The decisions a command's service call took, in order.
final class DecisionLog: @unchecked Sendable {
    private let lock = NSLock()
    private var decisions: [ServerDecision] = []
    func append(_ decision: ServerDecision) { lock.withLock { decisions.append(decision) } }
    var taken: [ServerDecision] { lock.withLock { decisions } }
}

/// A refusal of the operator's service, in its words (the HTTP API answers the same words).
struct AdminRefusal: Error, CustomStringConvertible {
    let description: String
}

struct AccessKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "access-key", abstract: "Auth Cloud API access keys (Authorization: Bearer), stored hashed.",
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a key and print it once: only its hash is kept.")
        @OptionGroup var options: DatabaseOptions
        @Option(help: "What the key is for (shown by list).") var name: String
        @Flag(help: "Print only the key (for scripts).") var quiet = false

        func run() async throws {
            guard !name.isEmpty, name.utf8.count <= 200 else { throw ValidationError("--name must be 1...200 bytes") }
            let created = try await options.withStores { stores in
                let created = try await stores.accessKeys.create(name: name, now: Date())
                try await options.record(
                    stores, "admin access-key create", username: nil, detail: "created access key \(created.record.id) (\(name))")
                return created
            }
            if quiet {
                say(created.key)
            } else {
                say("access key \(created.record.id) (\(name)) created; it is shown only now:")
                say(created.key)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List keys (ids, names, dates; never the keys).")
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            let keys = try await options.withStores { try await $0.accessKeys.list() }
            let formatter = ISO8601DateFormatter()
            for key in keys {
                say(
                    "\(key.id)  \(formatter.string(from: key.createdAt))  \(key.revokedAt.map { "revoked \(formatter.string(from: $0))" } ?? "active")  \(key.name)"
                )
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a key by id: it stops working at once on every instance.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The key's id (from list).") var id: String

        func run() async throws {
            let revoked = try await options.withStores { stores in
                let revoked = try await stores.accessKeys.revoke(id: id, now: Date())
                if revoked { try await options.record(stores, "admin access-key revoke", username: nil, detail: "revoked access key \(id)") }
                return revoked
            }
            guard revoked else { throw ValidationError("no active access key has the id \(id)") }
            say("access key \(id) revoked")
        }
    }
}

/// The token-signing keys every instance shares through the database (when `tokens.signingKeyPath` is not set):
/// add a key, let it be published, activate it, and the key it replaces verifies until its tokens have expired.
struct SigningKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signing-key",
        abstract: "Rotate the token-signing keys every instance shares: add, then activate; retired keys verify until their tokens expire.",
        discussion: """
            A rotation: `add` makes a pending key, which every instance publishes at /.well-known/jwks.json within 10 seconds. \
            Once relying parties have fetched the JWKS again, `activate KID` makes it sign on every instance within 10 seconds; \
            the key it replaces keeps verifying until the tokens it signed have expired, and is then no longer published.
            """,
        subcommands: [List.self, Add.self, Activate.self, Retire.self])

    /// Runs one change on the key store; a refused change (unknown kid, wrong state) is a usage error with its reason.
    static func change(
        _ options: DatabaseOptions, _ operation: OperationName, detail: String,
        _ body: @escaping (SigningKeyStore) async throws -> Void
    ) async throws {
        do {
            try await options.withStores { stores in
                try await body(stores.signingKeys)
                try await options.record(stores, operation, username: nil, detail: detail)
            }
        } catch let refusal as SigningKeyStore.ChangeRefusal {
            throw ValidationError(refusal.description)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the keys: kid, state and dates (never the keys).")
        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            let keys = try await options.withStores { try await $0.signingKeys.list() }
            let formatter = ISO8601DateFormatter()
            for key in keys {
                let dates = [
                    "created \(formatter.string(from: key.createdAt))", key.activatedAt.map { "activated \(formatter.string(from: $0))" },
                    key.retiredAt.map { "retired \(formatter.string(from: $0))" },
                ].compactMap { $0 }.joined(separator: ", ")
                say("\(key.kid)  \(key.state.rawValue)  \(dates)")
            }
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a pending key (generated here, or --pem): published at once, signing only once activated.")
        @OptionGroup var options: DatabaseOptions
        @Option(help: "A PEM P-256 private key to add instead of a generated one.") var pem: String?
        @Flag(help: "Print only the kid (for scripts).") var quiet = false

        func run() async throws {
            let key: P256.Signing.PrivateKey
            if let pem {
                key = try readP256PrivateKey(pem, option: "--pem")
            } else {
                key = P256.Signing.PrivateKey()
            }
            let kid = JOSE.JWK(publicKey: key.publicKey).thumbprint
            try await options.withStores { stores in
                try await stores.signingKeys.add(kid: kid, pem: key.pemRepresentation, now: Date())
                try await options.record(stores, "admin signing-key add", username: nil, detail: "added signing key \(kid) (pending)")
            }
            say(quiet ? kid : "signing key \(kid) added (pending); activate it once relying parties have fetched the JWKS again")
        }
    }

    struct Activate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a pending key sign, on every instance within 10 seconds; the active key is retired.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The pending key's kid (from list).") var kid: String

        func run() async throws {
            try await SigningKeyCommand.change(options, "admin signing-key activate", detail: "activated signing key \(kid)") {
                try await $0.activate(kid: kid, now: Date())
            }
            say("signing key \(kid) activated; the key it replaces verifies until its tokens have expired")
        }
    }

    struct Retire: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Retire a pending key that will not be used (the active key is retired by activating another).")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The key's kid (from list).") var kid: String

        func run() async throws {
            try await SigningKeyCommand.change(options, "admin signing-key retire", detail: "retired signing key \(kid)") {
                try await $0.retire(kid: kid, now: Date())
            }
            say("signing key \(kid) retired")
        }
    }
}

/// The audit trail as the database keeps it (`mauth admin audit`): the newest security decisions first. The operator's
/// service answers, as for `GET /nevisfido/admin/audit`, and the reading is itself recorded.
struct AdminAuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit", abstract: "Print the audit trail: security decisions (who, from where, what, outcome), newest first.")
    @OptionGroup var options: DatabaseOptions
    @Option(help: "Only the decisions about this user.") var username: String?
    @Option(help: "Only decisions at or after this time (RFC 3339, e.g. 2026-11-26T10:00:00Z).") var since: String?
    @Option(help: "At most this many (1...\(AdminService.maximumAuditEvents)).") var limit = 100
    @Flag(help: "Print one JSON object a line (for scripts).") var json = false

    func validate() throws {
        if let since, ISO8601DateFormatter().date(from: since) == nil { throw ValidationError("--since \(since) is not an RFC 3339 time") }
    }

    func run() async throws {
        let events = try await options.withAdmin("admin audit") { admin, principal in
            try await admin.audit(
                username: username, since: since.flatMap { ISO8601DateFormatter().date(from: $0) }, limit: limit, principal: principal)
        }
        for event in events {
            if json {
                try sayJSON(event)
            } else {
                // Every field is escaped by `AuditEvent` itself, also in rows an older version wrote raw: a caller's
                // newline or escape sequence never reaches the operator's terminal.
                say(
                    [
                        AuditEvent.timestamp(event.at), event.clientAddress ?? "-", event.principal ?? "anonymous", "\(event.statusCode)",
                        event.operation + (event.username.map { " for \($0)" } ?? ""), event.detail,
                    ].joined(separator: "  "))
            }
        }
    }
}
