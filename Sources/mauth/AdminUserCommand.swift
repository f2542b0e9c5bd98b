import ArgumentParser
import FIDOServer
import Foundation
import Primitives
import UAF

/// One user's data on a server, for support calls and erasure requests (`mauth admin user …`): what the server holds
/// about a username, and removing part or all of it with the rules the API applies (`UserData`). Works with the
/// server running (every instance sees the change at once) or stopped.
struct AdminUserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Show or remove a user's keys, passkeys, sessions and dispatch targets.",
        discussion: """
            Usernames are compared byte for byte, as the server does. Removing keys ends the sessions they opened (all of \
            the user's sessions with her last key); the device learns of it at its next authentication, which the server \
            refuses. `erase` removes everything that could act for the user.
            """,
        subcommands: [Show.self, RemoveKeys.self, RemovePasskeys.self, EndSessions.self, RemoveTarget.self, Erase.self])

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the user's registered keys, passkeys, live sessions, dispatch targets and outstanding requests.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The username.") var username: String
        @Flag(help: "Print JSON (for scripts).") var json = false

        func run() async throws {
            let summary = try await options.withStores { stores in
                let summary = try await UserData.summary(stores, username: username, now: Date())
                // Reading a user's data is recorded too: who looked at whose data is part of the trail.
                try await options.record(stores, "admin user show", username: username, detail: "\(summary.registrations.count) key(s), \(summary.passkeys.count) passkey(s), \(summary.sessions.count) live session(s), \(summary.targets.count) dispatch target(s) shown")
                return summary
            }
            if json {
                say(String(decoding: try UserData.Report(username: username, summary).json(), as: UTF8.self))
                return
            }
            let formatter = ISO8601DateFormatter()
            say("user \(username)")
            say("keys (\(summary.registrations.count)):")
            for key in summary.registrations {
                say("  \(key.aaid)  key \(key.keyID)  registered \(formatter.string(from: key.createdAt))  counter \(key.signCounter)"
                    + (key.deviceId.map { "  device \($0)" } ?? ""))
            }
            say("passkeys (\(summary.passkeys.count)):")
            for passkey in summary.passkeys {
                say("  \(passkey.credentialID)  \(passkey.aaguid)  \(passkey.attestationFormat) (\(passkey.attestationType), \(passkey.trust ?? "trust unknown"))  registered \(formatter.string(from: passkey.createdAt))"
                    + (passkey.lastUsedAt.map { "  last used \(formatter.string(from: $0))" } ?? "  never used") + "  counter \(passkey.signCount)"
                    + (passkey.name.map { "  \(UntrustedText.quoted($0))" } ?? ""))
            }
            say("live sessions (\(summary.sessions.count)):")
            for session in summary.sessions {
                say("  \(session.id)  opened \(formatter.string(from: session.createdAt))  expires \(formatter.string(from: session.expiresAt))  \(session.credential.kind == .passkey ? "passkey" : "key") \(session.credential.id)")
            }
            say("dispatch targets (\(summary.targets.count)):")
            for target in summary.targets {
                say("  \(target.id)  \"\(target.name)\"  \(target.dispatcher)  created \(formatter.string(from: target.createdAt))"
                    + (target.deviceId.map { "  device \($0)" } ?? ""))
            }
            say("outstanding requests: \(summary.outstandingRequests)")
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
                    let removed = try await UserData.removeRegistrations(stores, username: username, aaids: aaid.isEmpty ? nil : aaid,
                                                                         keyIDs: keyIDs.isEmpty ? nil : keyIDs, now: Date())
                    if !removed.isEmpty {
                        try await options.record(stores, "admin user remove keys", username: username,
                                                 detail: "removed " + removed.map { "\($0.aaid) key \($0.keyID.prefix(10))…" }.joined(separator: ", "))
                    }
                    return removed
                }
            }
            guard !removed.isEmpty else { throw ValidationError("\(username) has no key that matches") }
            say("removed \(removed.count) key(s) of \(username): " + removed.map { "\($0.aaid) key \($0.keyID)" }.joined(separator: ", ")
                + "; the sessions they opened are ended")
        }
    }

    struct RemovePasskeys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-passkeys", abstract: "Remove the user's passkeys (those of --id, or --all) and end the sessions they opened.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The username.") var username: String
        @Option(help: "Remove the passkey with this credential ID, base64url as `show` prints it (repeatable).") var id: [String] = []
        @Flag(help: "Remove every passkey of the user.") var all = false

        func validate() throws {
            // Exactly one selection: a forgotten option must never widen into "every passkey".
            guard all != !id.isEmpty else { throw ValidationError("say which passkeys: --id or --all (one of them)") }
        }

        func run() async throws {
            let removed = try await options.withStores { stores in
                try await stores.database.unitOfWork {
                    let removed = try await UserData.removePasskeys(stores, username: username, ids: all ? nil : id, now: Date())
                    if !removed.isEmpty {
                        try await options.record(stores, "admin user remove passkeys", username: username,
                                                 detail: "removed passkey " + removed.map { "\($0.credentialID.prefix(10))…" }.joined(separator: ", "))
                    }
                    return removed
                }
            }
            guard !removed.isEmpty else { throw ValidationError("\(username) has no passkey that matches") }
            say("removed \(removed.count) passkey(s) of \(username): " + removed.map(\.credentialID).joined(separator: ", ")
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
                let ended: Int
                if let session {
                    // Only a session of this user: an id mistyped into another user's must not end hers.
                    guard let record = try await stores.sessions.session(id: session, now: now), record.username == username else { return 0 }
                    ended = try await stores.sessions.revoke(id: session, now: now) ? 1 : 0
                } else {
                    ended = try await stores.sessions.revokeAll(username: username, now: now)
                }
                try await options.record(stores, "admin user end sessions", username: username, detail: "ended \(ended) session(s)")
                return ended
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
                guard let target = try await stores.dispatchTargets.target(id: id), target.username == username,
                      try await stores.dispatchTargets.delete(id: id) else { return false }
                try await options.record(stores, "admin user remove target", username: username, detail: "removed dispatch target \(id)")
                return true
            }
            guard removed else { throw ValidationError("\(username) has no dispatch target \(id)") }
            say("removed dispatch target \(id) of \(username)")
        }
    }

    struct Erase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove everything that could act for the user: keys, passkeys, sessions, dispatch targets, unredeemed dispatch tokens, outstanding requests, and the Auth Cloud user.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The username.") var username: String

        func run() async throws {
            let (erased, cloudUser) = try await options.withStores { stores in
                let (erased, cloudUser) = try await UserData.eraseWithCloudUser(stores, username: username, now: Date())
                try await options.record(stores, "admin user erase", username: username,
                                         detail: "erased \(erased.registrations) key(s), \(erased.passkeys) passkey(s), \(erased.sessions) session(s), \(erased.targets) dispatch target(s)")
                return (erased, cloudUser)
            }
            say("erased \(username): \(erased.registrations) key(s), \(erased.passkeys) passkey(s), \(erased.sessions) session(s), \(erased.targets) dispatch target(s), "
                + "\(erased.dispatchTokens) unredeemed dispatch token(s), \(erased.requests) outstanding request(s)"
                + (cloudUser ? ", the Auth Cloud user" : ""))
        }
    }
}
