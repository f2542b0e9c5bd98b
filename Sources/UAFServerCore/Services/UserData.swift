import Foundation

/// What the server holds about one user, and what removing part or all of it means. One rule for every way in: UAF
/// deregistration, the Auth Cloud API's user deletion, and an operator's `mauth admin user`.
package enum UserData {
    /// The user's registrations, live sessions, dispatch targets and outstanding UAF requests.
    package struct Summary: Sendable {
        package var registrations: [RegistrationRecord]
        package var sessions: [SessionRecord]
        package var targets: [DispatchTargetRecord]
        /// Unexpired requests that count against the user's cap (``ServerConfiguration/Limits/outstandingRequestsPerUsername``).
        package var outstandingRequests: Int
        package var isEmpty: Bool { registrations.isEmpty && sessions.isEmpty && targets.isEmpty && outstandingRequests == 0 }
    }

    package static func summary(_ stores: Stores, username: String, now: Date) async throws -> Summary {
        Summary(registrations: try await stores.registrations.registrations(username: username),
                sessions: try await stores.sessions.live(username: username, now: now),
                targets: try await stores.dispatchTargets.targets(username: username),
                outstandingRequests: try await stores.requests.outstanding(username: username, now: now))
    }

    /// Removes the user's registrations (all with neither list; else those of the AAIDs or the KeyIDs; with
    /// `deviceId`, only that device's) and ends the sessions they opened; with the user's last key, every session of
    /// hers. Returns what was removed.
    package static func removeRegistrations(_ stores: Stores, username: String, aaids: [String]? = nil, keyIDs: [String]? = nil,
                                            deviceId: String? = nil, now: Date) async throws -> [RegistrationRecord] {
        let removed = try await stores.registrations.delete(username: username, aaids: aaids, keyIDs: keyIDs, deviceId: deviceId)
        // A session opened with a removed key ends with it (a stolen key must not keep a session alive).
        _ = try await stores.sessions.revoke(username: username, keyIDs: removed.map(\.keyID), now: now)
        if try await stores.registrations.registrations(username: username).isEmpty {
            _ = try await stores.sessions.revokeAll(username: username, now: now)
        }
        return removed
    }

    /// What ``erase(_:username:now:)`` removed or ended.
    package struct Erased: Sendable, Equatable {
        package var registrations: Int
        package var sessions: Int
        package var targets: Int
        package var dispatchTokens: Int
        package var requests: Int
    }

    /// Removes everything the server holds that could act for the user: registrations, sessions, dispatch targets,
    /// unredeemed dispatch tokens and outstanding requests. An enrollment link or a registration request issued
    /// before must not enrol a key for a user who no longer exists (or for the next user given the same name).
    /// Status records and expired rows go with the purge.
    package static func erase(_ stores: Stores, username: String, now: Date) async throws -> Erased {
        let registrations = try await stores.registrations.delete(username: username).count
        let sessions = try await stores.sessions.revokeAll(username: username, now: now)
        var targets = 0
        for target in try await stores.dispatchTargets.targets(username: username) {
            if try await stores.dispatchTargets.delete(id: target.id) { targets += 1 }
        }
        let tokens = try await stores.dispatchTokens.expireUnredeemed(username: username, now: now)
        let requests = try await stores.requests.deleteCounted(username: username)
        return Erased(registrations: registrations, sessions: sessions, targets: targets, dispatchTokens: tokens, requests: requests)
    }
}
