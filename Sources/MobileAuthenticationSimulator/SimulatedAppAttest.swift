import AppAttestation
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
