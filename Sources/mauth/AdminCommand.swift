import ArgumentParser
import Foundation
import UAFServer

/// Operator tasks on a server's database, with the server running or not (`mauth admin …`).
struct AdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "admin", abstract: "Administer a server's database (Auth Cloud access keys).",
                                                    subcommands: [AccessKeyCommand.self])
}

/// Where the database is: the server's configuration file (and MAUTH_* variables), or `--database` alone.
struct DatabaseOptions: ParsableArguments {
    @Option(help: "The server's configuration file (JSON); MAUTH_* environment variables override it.") var config: String?
    @Option(help: "SQLite database file or a postgres:// URL (overrides the configuration).") var database: String?

    /// Opens the database (running its migrations), runs `body` on its stores, and closes it, also when `body` fails.
    func withStores<T>(_ body: (Stores) async throws -> T) async throws -> T {
        var configuration = try ServerConfiguration.load(path: config)
        if let database { configuration.database = .init(text: database) }
        let database = try await StoreDatabase.open(configuration.database)
        let result: T
        do { result = try await body(Stores(database: database)) } catch {
            try? await database.close()
            throw error
        }
        try await database.close()
        return result
    }
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
            let created = try await options.withStores { try await $0.accessKeys.create(name: name, now: Date()) }
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
                say("\(key.id)  \(formatter.string(from: key.createdAt))  \(key.revokedAt.map { "revoked \(formatter.string(from: $0))" } ?? "active")  \(key.name)")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a key by id: it stops working at once on every instance.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The key's id (from list).") var id: String

        func run() async throws {
            let revoked = try await options.withStores { try await $0.accessKeys.revoke(id: id, now: Date()) }
            guard revoked else { throw ValidationError("no active access key has the id \(id)") }
            say("access key \(id) revoked")
        }
    }
}
