import ArgumentParser
import Foundation
import UAF
import UAFServer

/// One user's data on a server, for support calls and erasure requests (`mauth admin user …`): what the server holds
/// about a username, and removing part or all of it with the rules the API applies (`UserData`). Works with the
/// server running (every instance sees the change at once) or stopped.
struct AdminUserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Show or remove a user's keys, sessions and dispatch targets.",
        discussion: """
            Usernames are compared byte for byte, as the server does. Removing keys ends the sessions they opened (all of \
            the user's sessions with her last key); the device learns of it at its next authentication, which the server \
            refuses. `erase` removes everything that could act for the user.
            """,
        subcommands: [Show.self, RemoveKeys.self, EndSessions.self, RemoveTarget.self, Erase.self])

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the user's registered keys, live sessions, dispatch targets and outstanding requests.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The username.") var username: String
        @Flag(help: "Print JSON (for scripts).") var json = false

        func run() async throws {
            let summary = try await options.withStores { try await UserData.summary($0, username: username, now: Date()) }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                encoder.dateEncodingStrategy = .iso8601
                say(String(decoding: try encoder.encode(ShownUser(username: username, summary)), as: UTF8.self))
                return
            }
            let formatter = ISO8601DateFormatter()
            say("user \(username)")
            say("keys (\(summary.registrations.count)):")
            for key in summary.registrations {
                say("  \(key.aaid)  key \(key.keyID)  registered \(formatter.string(from: key.createdAt))  counter \(key.signCounter)"
                    + (key.deviceId.map { "  device \($0)" } ?? ""))
            }
            say("live sessions (\(summary.sessions.count)):")
            for session in summary.sessions {
                say("  \(session.id)  opened \(formatter.string(from: session.createdAt))  expires \(formatter.string(from: session.expiresAt))  key \(session.keyID)")
            }
            say("dispatch targets (\(summary.targets.count)):")
            for target in summary.targets {
                say("  \(target.id)  \"\(target.name)\"  \(target.dispatcher)  created \(formatter.string(from: target.createdAt))"
                    + (target.deviceId.map { "  device \($0)" } ?? ""))
            }
            say("outstanding requests: \(summary.outstandingRequests)")
        }
    }

    /// The JSON of `show`: what an operator's script reads. Never a secret (sessions by public id, no tokens).
    struct ShownUser: Encodable {
        struct Key: Encodable { var aaid: String; var keyID: String; var registeredAt: Date; var signCounter: UInt32; var deviceId: String? }
        struct Session: Encodable { var id: String; var aaid: String; var keyID: String; var openedAt: Date; var expiresAt: Date }
        struct Target: Encodable { var id: String; var name: String; var dispatcher: String; var deviceId: String?; var createdAt: Date }
        var username: String
        var keys: [Key]
        var sessions: [Session]
        var dispatchTargets: [Target]
        var outstandingRequests: Int

        init(username: String, _ summary: UserData.Summary) {
            self.username = username
            keys = summary.registrations.map { Key(aaid: $0.aaid, keyID: $0.keyID, registeredAt: $0.createdAt, signCounter: $0.signCounter, deviceId: $0.deviceId) }
            sessions = summary.sessions.map { Session(id: $0.id, aaid: $0.aaid, keyID: $0.keyID, openedAt: $0.createdAt, expiresAt: $0.expiresAt) }
            dispatchTargets = summary.targets.map { Target(id: $0.id, name: $0.name, dispatcher: $0.dispatcher, deviceId: $0.deviceId, createdAt: $0.createdAt) }
            outstandingRequests = summary.outstandingRequests
        }
    }

    struct RemoveKeys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-keys", abstract: "Remove the user's keys (those of --aaid or --key-id, or --all) and end the sessions they opened.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The username.") var username: String
        @Option(help: "Remove the keys of this AAID (repeatable).") var aaid: [String] = []
        @Option(name: .customLong("key-id"), help: "Remove the key with this KeyID, base64url as `show` prints it (repeatable).") var keyIDs: [String] = []
        @Flag(help: "Remove every key of the user.") var all = false

        func validate() throws {
            // Exactly one selection: a forgotten option must never widen into "every key".
            guard [all, !aaid.isEmpty, !keyIDs.isEmpty].filter({ $0 }).count == 1 else {
                throw ValidationError("say which keys: --aaid, --key-id or --all (one of them)")
            }
            if let bad = aaid.first(where: { !AAID.isValid($0) }) { throw ValidationError("--aaid \(bad) is not an AAID (VVVV#MMMM)") }
        }

        func run() async throws {
            let removed = try await options.withStores { stores in
                try await stores.database.unitOfWork {
                    try await UserData.removeRegistrations(stores, username: username, aaids: aaid.isEmpty ? nil : aaid,
                                                           keyIDs: keyIDs.isEmpty ? nil : keyIDs, now: Date())
                }
            }
            guard !removed.isEmpty else { throw ValidationError("\(username) has no key that matches") }
            say("removed \(removed.count) key(s) of \(username): " + removed.map { "\($0.aaid) key \($0.keyID)" }.joined(separator: ", ")
                + "; the sessions they opened are ended")
        }
    }

    struct EndSessions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "end-sessions", abstract: "End the user's live sessions (or the one of --session): their cookies and tokens stop working at once.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The username.") var username: String
        @Option(help: "End only this session (its id, as `show` prints it).") var session: String?

        func run() async throws {
            let ended = try await options.withStores { stores -> Int in
                let now = Date()
                guard let session else { return try await stores.sessions.revokeAll(username: username, now: now) }
                // Only a session of this user: an id mistyped into another user's must not end hers.
                guard let record = try await stores.sessions.session(id: session, now: now), record.username == username else { return 0 }
                return try await stores.sessions.revoke(id: session, now: now) ? 1 : 0
            }
            if session != nil, ended == 0 { throw ValidationError("\(username) has no live session \(session!)") }
            say("ended \(ended) session(s) of \(username)")
        }
    }

    struct RemoveTarget: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-target", abstract: "Remove one of the user's dispatch targets: no push or QR dispatch reaches that device again.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The username.") var username: String
        @Argument(help: "The dispatch target's id, as `show` prints it.") var id: String

        func run() async throws {
            let removed = try await options.withStores { stores -> Bool in
                guard let target = try await stores.dispatchTargets.target(id: id), target.username == username else { return false }
                return try await stores.dispatchTargets.delete(id: id)
            }
            guard removed else { throw ValidationError("\(username) has no dispatch target \(id)") }
            say("removed dispatch target \(id) of \(username)")
        }
    }

    struct Erase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove everything that could act for the user: keys, sessions, dispatch targets, unredeemed dispatch tokens, outstanding requests, and the Auth Cloud user.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The username.") var username: String

        func run() async throws {
            let (erased, cloudUser) = try await options.withStores { stores in
                try await stores.database.unitOfWork {
                    let erased = try await UserData.erase(stores, username: username, now: Date())
                    let cloudUser = try await stores.authCloudUsers.user(username: username)
                    if let cloudUser { _ = try await stores.authCloudUsers.delete(id: cloudUser.userId) }
                    return (erased, cloudUser != nil)
                }
            }
            say("erased \(username): \(erased.registrations) key(s), \(erased.sessions) session(s), \(erased.targets) dispatch target(s), "
                + "\(erased.dispatchTokens) unredeemed dispatch token(s), \(erased.requests) outstanding request(s)"
                + (cloudUser ? ", the Auth Cloud user" : ""))
        }
    }
}
