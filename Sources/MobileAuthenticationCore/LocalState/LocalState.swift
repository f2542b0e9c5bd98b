import Foundation
import SecureStorage
import UAF

/// One registration of one authenticator for one account, as the device remembers it.
package struct LocalRegistration: Codable, Hashable, Sendable {
    package var username: Username
    package var server: Server
    package var aaid: String
    /// base64url KeyID.
    package var keyID: String
    package var keyAlias: String
    var signCounter: UInt32
    /// The algorithm the key signs with; nil in records made before the Android profile (ECDSA P-256 DER).
    var signatureAlgorithm: SignatureAlgorithm?
    /// The registration's options (passcode fallback, Class 2 sensors); nil in older records (the secure defaults).
    var options: RegistrationOptions?
    var createdAt: Date

    /// Whether this is `username`'s registration with `aaid` (with any authenticator when `aaid` is nil).
    package func isOf(_ username: Username, aaid: String?) -> Bool {
        self.username == username && (aaid.map { AAID.equal($0, self.aaid) } ?? true)
    }
}

/// The dispatch target this device created on a server for one of its users (server-api §B.8).
package struct LocalDispatchTarget: Codable, Hashable, Sendable {
    package var server: Server
    package var username: Username
    package var id: String
    var extId: String
}

/// The install's App Attest key (its ID, as `DCAppAttestService` names it) and the servers (base URLs) that accepted
/// its attestation.
package struct LocalAppAttest: Codable, Sendable, Equatable {
    package var keyId: String
    package var attestedServers: [String]
}

/// Everything the SDK remembers besides secrets.
package struct LocalStateData: Codable, Sendable {
    package var accounts: [AccountRecord] = []
    package var registrations: [LocalRegistration] = []
    package var deviceInformation: DeviceInformation?
    /// Registration counter per AAID.
    var registrationCounters: [String: UInt32] = [:]
    /// One per (server, user) the device registered with; the device information's id–username pairs
    /// (``publishedDeviceInformation``).
    package var dispatchTargets: [LocalDispatchTarget] = []
    /// This install's App Attest key and the servers that have its attestation (the next operation there asserts).
    package var appAttest: LocalAppAttest?

    init() {}

    enum CodingKeys: String, CodingKey { case accounts, registrations, deviceInformation, registrationCounters, dispatchTargets, appAttest }
    /// Members added after the first release are optional on disk, so a device's existing state still opens.
    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        accounts = try c.decode([AccountRecord].self, forKey: .accounts)
        registrations = try c.decode([LocalRegistration].self, forKey: .registrations)
        deviceInformation = try c.decodeIfPresent(DeviceInformation.self, forKey: .deviceInformation)
        registrationCounters = try c.decode([String: UInt32].self, forKey: .registrationCounters)
        dispatchTargets = try c.decodeIfPresent([LocalDispatchTarget].self, forKey: .dispatchTargets) ?? []
        appAttest = try c.decodeIfPresent(LocalAppAttest.self, forKey: .appAttest)
    }

    /// The device information the app sees: its id–username pairs are the dispatch targets (derived here, never
    /// stored, so the two cannot disagree).
    package var publishedDeviceInformation: DeviceInformation? {
        deviceInformation.map {
            DeviceInformation(
                name: $0.name, fcmRegistrationToken: $0.fcmRegistrationToken, deviceId: $0.deviceId,
                idUsernamePairs: dispatchTargets.map { IdUsernamePair(identifier: $0.id, username: $0.username) })
        }
    }
}

/// The SDK's state in one ``SecureStore``: `state` (accounts, registrations, device information), `pin/<user>` and
/// `password/<user>` (verifiers and attempt counters) and `key/<alias>` (private keys with their access control). Each change is committed
/// durably before the call returns.
package actor LocalState {
    static let stateKey = "state"
    let store: SecureStore
    private var data: LocalStateData

    private init(store: SecureStore, data: LocalStateData) {
        self.store = store
        self.data = data
    }

    package static func open(platform: any Platform) async throws -> LocalState {
        let location = StoreLocation(directory: platform.storageDirectory, name: "mobile-authentication")
        // Out of backups: its key secret never is in one, so a restored copy could never be opened (see below).
        try platform.excludeFromBackup(platform.storageDirectory)
        let store: SecureStore
        do {
            store = try await SecureStore.openOrCreate(
                at: location, fingerprint: platform.deviceFingerprint, protector: try platform.makeKeyProtector())
        } catch SecureStorageError.fingerprintMismatch {
            // This device cannot unlock the file: a backup of another device restored here (or a reset Keychain).
            // Failing on every start would leave the app no way forward, and nothing in the file is usable here (its
            // authenticator keys are device-bound too): set it aside, say so once, start clean next time.
            try SecureStore.setAside(at: location)
            throw StorageResetError(setAsidePath: location.directory.appendingPathComponent("\(location.name).mauthstore.unreadable").path)
        }
        let data = try await store.value(LocalStateData.self, for: stateKey) ?? LocalStateData()
        return LocalState(store: store, data: data)
    }

    package var snapshot: LocalStateData { data }

    /// Applies `changes` (secrets to set or remove) and `body` (the state change) and commits them with **one**
    /// durable write: an operation's outcome is either entirely on disk or not at all. If the write fails, the
    /// in-memory store is put back as it was, so a later write cannot commit half of it.
    @discardableResult
    func commit<T: Sendable>(_ changes: StateChanges, _ body: (inout LocalStateData) throws -> T) async throws -> T {
        try await exclusively { try await self.write(changes, body) }
    }

    private func write<T: Sendable>(_ changes: StateChanges, _ body: (inout LocalStateData) throws -> T) async throws -> T {
        var copy = data
        let result = try body(&copy)
        let touched = Array(changes.secrets.keys) + Array(changes.removals) + [Self.stateKey]
        var previous: [String: [UInt8]?] = [:]
        for key in touched { previous[key] = try await store.bytes(for: key) }
        do {
            for (key, value) in changes.secrets { try await store.set(value, for: key) }
            for key in changes.removals { try await store.remove(key) }
            try await store.set(encoding: copy, for: Self.stateKey)
            try await store.write()
        } catch {
            for (key, bytes) in previous {
                if let bytes { try? await store.set(bytes, for: key) } else { _ = try? await store.remove(key) }
            }
            throw error
        }
        data = copy
        return result
    }

    func secret<T: Decodable & Sendable>(_ type: T.Type, _ key: String) async throws -> T? { try await store.value(T.self, for: key) }

    /// Reads the secret under `key`, lets `body` decide, and writes what it returns (nothing for nil), with no other
    /// write in between: the read-modify-write a failure counter needs, so parallel attempts are each counted.
    func updateSecret<T: Codable & Sendable, R: Sendable>(
        _ type: T.Type, _ key: String,
        _ body: (T?) throws -> (write: T?, result: R)
    ) async throws -> R {
        try await exclusively {
            let (write, result) = try body(try await self.store.value(T.self, for: key))
            if let write {
                try await self.store.set(encoding: write, for: key)
                try await self.store.write()
            }
            return result
        }
    }

    // One write at a time. The actor alone does not give that: at every `await` on the store another call may run,
    // so two read-modify-writes could read the same state and the later write would undo the earlier (a lost
    // attempt counted by a brute-force limit, or a commit lost under another).
    private var writing = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    private func exclusively<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        if writing {
            await withCheckedContinuation { waiting.append($0) }
        } else {
            writing = true
        }
        defer {
            // Hand the turn to the next waiter, or free it.
            if waiting.isEmpty { writing = false } else { waiting.removeFirst().resume() }
        }
        return try await body()
    }
}

/// Secrets an operation sets or removes, committed together with its state change by ``LocalState/commit(_:_:)``.
package struct StateChanges: Sendable {
    private(set) var secrets: [String: [UInt8]] = [:]
    private(set) var removals: Set<String> = []

    package init() {}

    /// Stores `value` JSON-encoded under `key` (the form ``LocalState/secret(_:_:)`` reads).
    package mutating func set<T: Encodable>(_ value: T, _ key: String) throws {
        secrets[key] = Array(try JSONEncoder().encode(value))
        removals.remove(key)
    }

    package mutating func remove(_ key: String) {
        secrets[key] = nil
        removals.insert(key)
    }
}
