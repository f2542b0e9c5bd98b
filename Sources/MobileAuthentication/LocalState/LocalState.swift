import Foundation
import SecureStorage
import UAF

/// One registration of one authenticator for one account, as the device remembers it.
struct LocalRegistration: Codable, Hashable, Sendable {
    var username: Username
    var server: Server
    var aaid: String
    /// base64url KeyID.
    var keyID: String
    var keyAlias: String
    var signCounter: UInt32
    var createdAt: Date
}

/// Everything the SDK remembers besides secrets.
struct LocalStateData: Codable, Sendable {
    var accounts: [AccountRecord] = []
    var registrations: [LocalRegistration] = []
    var deviceInformation: DeviceInformation?
    /// Registration counter per AAID.
    var registrationCounters: [String: UInt32] = [:]
}

/// The SDK's state in one ``SecureStore``: `state` (accounts, registrations, device information), `pin/<user>`
/// (PIN verifiers and attempt counters) and `key/<alias>` (software private keys). Each change is committed
/// durably before the call returns.
actor LocalState {
    static let stateKey = "state"
    let store: SecureStore
    private var data: LocalStateData

    private init(store: SecureStore, data: LocalStateData) { self.store = store; self.data = data }

    static func open(platform: any Platform) async throws -> LocalState {
        let location = StoreLocation(directory: platform.storageDirectory, name: "mobile-authentication")
        let store = try await SecureStore.openOrCreate(at: location, fingerprint: platform.deviceFingerprint, protector: try platform.makeKeyProtector())
        let data = try await store.value(LocalStateData.self, for: stateKey) ?? LocalStateData()
        return LocalState(store: store, data: data)
    }

    var snapshot: LocalStateData { data }

    /// Changes the state and commits it; on failure the in-memory state is left unchanged.
    @discardableResult
    func update<T: Sendable>(_ body: (inout LocalStateData) throws -> T) async throws -> T {
        var copy = data
        let result = try body(&copy)
        try await store.set(encoding: copy, for: Self.stateKey)
        try await store.write()
        data = copy
        return result
    }

    func secret<T: Decodable & Sendable>(_ type: T.Type, _ key: String) async throws -> T? { try await store.value(T.self, for: key) }

    func setSecret<T: Encodable & Sendable>(_ value: T, _ key: String) async throws {
        try await store.set(encoding: value, for: key)
        try await store.write()
    }

    func removeSecret(_ key: String) async throws {
        if try await store.remove(key) { try await store.write() }
    }
}
