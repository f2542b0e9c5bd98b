import ArgumentParser
import FIDOServer
import FIDOServerCore
import Foundation
import Primitives

/// One user's data on a server, for support calls and erasure requests (`mauth admin user …`): what the server holds
/// about a username, and removing part or all of it. Each command calls the operator's service (`AdminService`), the
/// one `/nevisfido/admin/…` calls: the same rules, refusals and audit events, and with `--json` the same answer.
/// Works with the server running (every instance sees the change at once) or stopped.
struct AdminUserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Show or remove a user's keys, passkeys, sessions and dispatch targets.",
        discussion: """
            Usernames are compared byte for byte, as the server does. Removing keys ends the sessions they opened (all of \
            the user's sessions with her last key); the device learns of it at its next authentication, which the server \
            refuses. `erase` removes everything that could act for the user.
            """,
        subcommands: [Show.self, RemoveKeys.self, RemovePasskeys.self, RenamePasskey.self, EndSessions.self, RemoveTarget.self, Erase.self])

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the user's registered keys, passkeys, live sessions, dispatch targets and outstanding requests.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The username.") var username: String
        @Flag(help: "Print JSON (for scripts): the answer of GET /nevisfido/admin/user.") var json = false

        func run() async throws {
            let report = try await options.withAdmin("admin user show") { admin, principal in try await admin.user(username, principal: principal) }
            if json {
                say(String(decoding: try report.json(), as: UTF8.self))
                return
            }
            report.lines.forEach(say)
        }
    }

    struct RemoveKeys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-keys", abstract: "Remove the user's keys (those of --aaid or --key-id, or --all) and end the sessions they opened.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The username.") var username: String
        @Option(help: "Remove the keys of this AAID (repeatable).") var aaid: [String] = []
        @Option(name: .customLong("key-id"), help: "Remove the key with this KeyID, base64url as `show` prints it (repeatable).") var keyIDs:
            [String] = []
        @Flag(help: "Remove every key of the user.") var all = false
        @Flag(help: "Print JSON (for scripts): the answer of DELETE /nevisfido/admin/user/keys.") var json = false

        func run() async throws {
            let removed = try await options.withAdmin("admin user remove keys") { admin, principal in
                try await admin.removeKeys(username, aaids: aaid, keyIDs: keyIDs, all: all, principal: principal)
            }
            if json { return try sayJSON(removed) }
            say(
                "removed \(removed.removed.count) key(s) of \(username): "
                    + removed.removed.map { "\($0.aaid) key \($0.keyID)" }.joined(separator: ", ")
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
        @Flag(help: "Print JSON (for scripts): the answer of DELETE /nevisfido/admin/user/passkeys.") var json = false

        func run() async throws {
            let removed = try await options.withAdmin("admin user remove passkeys") { admin, principal in
                try await admin.removePasskeys(username, ids: id, all: all, principal: principal)
            }
            if json { return try sayJSON(removed) }
            say(
                "removed \(removed.removed.count) passkey(s) of \(username): " + removed.removed.joined(separator: ", ")
                    + "; the sessions they opened are ended")
        }
    }

    struct RenamePasskey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rename-passkey", abstract: "Name one of the user's passkeys.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The username.") var username: String
        @Option(help: "The passkey's credential ID, base64url as `show` prints it.") var id: String
        @Option(help: "Its new name (1-256 bytes).") var name: String
        @Flag(help: "Print JSON (for scripts): the answer of PATCH /nevisfido/admin/user/passkeys/<id>.") var json = false

        func run() async throws {
            let renamed = try await options.withAdmin("admin user rename passkey") { admin, principal in
                try await admin.renamePasskey(username, id: id, name: name, principal: principal)
            }
            if json { return try sayJSON(renamed) }
            say("named passkey \(renamed.credentialID) of \(username) \(UntrustedText.quoted(renamed.name))")
        }
    }

    struct EndSessions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "end-sessions",
            abstract: "End the user's live sessions (or the one of --session): their cookies and tokens stop working at once.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The username.") var username: String
        @Option(help: "End only this session (its id, as `show` prints it).") var session: String?
        @Flag(help: "Print JSON (for scripts): the answer of DELETE /nevisfido/admin/user/sessions.") var json = false

        func run() async throws {
            let ended = try await options.withAdmin("admin user end sessions") { admin, principal in
                try await admin.endSessions(username, session: session, principal: principal)
            }
            if json { return try sayJSON(ended) }
            say("ended \(ended.ended) session(s) of \(username)")
        }
    }

    struct RemoveTarget: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-target", abstract: "Remove one of the user's dispatch targets: no push or QR dispatch reaches that device again.")
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The username.") var username: String
        @Argument(help: "The dispatch target's id, as `show` prints it.") var id: String

        func run() async throws {
            try await options.withAdmin("admin user remove target") { admin, principal in
                try await admin.removeTarget(username, id: id, principal: principal)
            }
            say("removed dispatch target \(id) of \(username)")
        }
    }

    struct Erase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Remove everything that could act for the user: keys, passkeys, sessions, dispatch targets, unredeemed dispatch tokens, outstanding requests, and the Auth Cloud user."
        )
        @OptionGroup var options: DatabaseOptions
        @Argument(help: "The username.") var username: String
        @Flag(help: "Print JSON (for scripts): the answer of DELETE /nevisfido/admin/user.") var json = false

        func run() async throws {
            let erased = try await options.withAdmin("admin user erase") { admin, principal in try await admin.erase(username, principal: principal) }
            if json { return try sayJSON(erased) }
            say(
                "erased \(username): \(erased.registrations) key(s), \(erased.passkeys) passkey(s), \(erased.sessions) session(s), \(erased.targets) dispatch target(s), "
                    + "\(erased.dispatchTokens) unredeemed dispatch token(s), \(erased.requests) outstanding request(s)"
                    + (erased.authCloudUser == true ? ", the Auth Cloud user" : ""))
        }
    }
}

/// An answer of the operator's service as one JSON line, members sorted.
func sayJSON(_ answer: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    say(String(decoding: try encoder.encode(answer), as: UTF8.self))
}
