import AppAttestation
import Crypto
import FIDOSimulation
import Foundation
import MobileAuthenticationCore

/// `DCAppAttestService` in software, for the simulated device: keys in memory, attested by a
/// `SoftwareAppAttestAuthority` of FIDOSimulation (never Apple's root, so only a server configured with its root
/// trusts them), with the counter each assertion raises. It can be made unsupported (as in the Simulator) and can
/// lose its keys (as after a restore onto another device), so tests see what the SDK does then.
public final class SimulatedAppAttest: AppAttestProvider, @unchecked Sendable {
    // @unchecked: every mutable member is read and written under `lock`.
    private let lock = NSLock()
    public let authority: SoftwareAppAttestAuthority
    public let appID: String
    public let environment: AppAttestEnvironment
    private let clock: @Sendable () -> Date
    private var keys: [String: SoftwareAppAttestKey] = [:]
    private var counters: [String: UInt32] = [:]
    private var supported = true
    private var attestations = 0

    public init(
        authority: SoftwareAppAttestAuthority, appID: String, environment: AppAttestEnvironment = .development,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.authority = authority
        self.appID = appID
        self.environment = environment
        self.clock = clock
    }

    public var isSupported: Bool { lock.withLock { supported } }
    /// Whether the device can attest (false: as in the Simulator).
    public func setSupported(_ supported: Bool) { lock.withLock { self.supported = supported } }
    /// The service forgets every key (`DCError.invalidKey` from now on for them).
    public func loseKeys() { lock.withLock { keys = [:] } }
    /// How many attestations were made (each is a call to Apple on a device).
    public var attestationCount: Int { lock.withLock { attestations } }

    /// The keys the service holds and their counters, to keep between runs of a process (`mauth device`): what a
    /// device's Secure Enclave keeps across app launches. Private keys: store it as such.
    public struct State: Codable, Sendable, Equatable {
        public struct Key: Codable, Sendable, Equatable {
            /// The P-256 private key, raw (32 bytes), base64.
            public var privateKey: String
            public var counter: UInt32
        }
        /// By key ID (standard base64, as the service names keys).
        public var keys: [String: Key]
    }

    public var state: State {
        lock.withLock {
            State(
                keys: keys.mapValues { key in
                    State.Key(
                        privateKey: key.privateKey.rawRepresentation.base64EncodedString(),
                        counter: counters[Data(key.keyID).base64EncodedString()] ?? 0)
                })
        }
    }

    /// Holds the keys of `state` (a key that does not read as P-256 is left out: the SDK makes a new one, as after a
    /// restore).
    public func restore(_ state: State) {
        lock.withLock {
            for (keyId, stored) in state.keys {
                guard let raw = Data(base64Encoded: stored.privateKey), let privateKey = try? P256.Signing.PrivateKey(rawRepresentation: raw) else {
                    continue
                }
                keys[keyId] = SoftwareAppAttestKey(privateKey: privateKey)
                counters[keyId] = stored.counter
            }
        }
    }

    public func generateKey() async throws -> String {
        let key = SoftwareAppAttestKey()
        let keyId = Data(key.keyID).base64EncodedString()
        lock.withLock { keys[keyId] = key }
        return keyId
    }

    public func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        guard let key = lock.withLock({ keys[keyId] }) else { throw AppAttestKeyInvalid() }
        lock.withLock { attestations += 1 }
        return Data(try authority.attest(key, appID: appID, environment: environment, clientDataHash: Array(clientDataHash), now: clock()))
    }

    public func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        let (key, counter): (SoftwareAppAttestKey?, UInt32) = lock.withLock {
            let next = (counters[keyId] ?? 0) + 1
            counters[keyId] = next
            return (keys[keyId], next)
        }
        guard let key else { throw AppAttestKeyInvalid() }
        return Data(try key.assertion(appID: appID, counter: counter, clientDataHash: Array(clientDataHash)))
    }
}
