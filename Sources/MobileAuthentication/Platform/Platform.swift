import Foundation
import SecureStorage

/// Why the platform refuses to run an operation.
public enum PlatformIntegrityError: Error, Sendable, Equatable {
    /// A debugger is attached or the process was tampered with.
    case deviceProtection(String)
    /// The device has no screen lock.
    case noDeviceLock
}

/// What the SDK needs from the operating system. Three implementations: ``SoftwarePlatform`` (Linux),
/// the Apple platform (Secure Enclave, Keychain, LocalAuthentication; compiled only where they exist), and
/// ``SimulatedPlatform`` (tests and the CLI's virtual device).
public protocol Platform: Sendable {
    /// Device-dependent data that binds the SDK's storage to this device.
    var deviceFingerprint: String { get }
    /// Where the SDK keeps its storage file.
    var storageDirectory: URL { get }
    /// The FacetID of the running application, used when the configuration names none.
    var applicationFacetId: String { get }
    /// The current time (a platform so that tests can move it).
    func now() -> Date
    /// Checks the device's integrity before and during operations.
    func checkIntegrity() throws(PlatformIntegrityError)
    /// The key protection for the SDK's storage.
    func makeKeyProtector() throws -> any KeyProtector
}

/// Linux (and any system without a hardware keystore): keys live in the SDK's SecureStorage, bound to
/// `/etc/machine-id`, the user and the application facet, protected with scrypt.
public struct SoftwarePlatform: Platform {
    public let storageDirectory: URL
    public let applicationFacetId: String
    /// scrypt cost for the storage key.
    public let storageKDFCost: Int

    public init(storageDirectory: URL, applicationFacetId: String, storageKDFCost: Int = 1 << 15) {
        self.storageDirectory = storageDirectory; self.applicationFacetId = applicationFacetId; self.storageKDFCost = storageKDFCost
    }

    public var deviceFingerprint: String {
        let machineID = (try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "no-machine-id"
        return "\(machineID)|uid=\(getuid())|\(applicationFacetId)"
    }

    public func now() -> Date { Date() }
    public func checkIntegrity() throws(PlatformIntegrityError) {}
    public func makeKeyProtector() throws -> any KeyProtector { try SoftwareKeyProtector(iterationCount: storageKDFCost) }
}

/// A scriptable platform for tests and the virtual device: it can move the clock, attach a debugger or remove
/// the device lock, as real devices do.
public final class SimulatedPlatform: Platform, @unchecked Sendable {
    private let lock = NSLock()
    public let storageDirectory: URL
    public let applicationFacetId: String
    public let deviceFingerprint: String
    private var clockOffset: TimeInterval = 0
    private var debuggerAttached = false
    private var deviceLockPresent = true
    private let protector: SoftwareKeyProtector

    public init(storageDirectory: URL, applicationFacetId: String = "ios:bundle-id:ch.nevis.mauth.virtualdevice",
                deviceFingerprint: String = "simulated-device") {
        self.storageDirectory = storageDirectory; self.applicationFacetId = applicationFacetId
        self.deviceFingerprint = deviceFingerprint
        protector = try! SoftwareKeyProtector(iterationCount: 1024)
    }

    public func now() -> Date { lock.withLock { Date().addingTimeInterval(clockOffset) } }
    /// Moves the simulated clock forward.
    public func advanceClock(by seconds: TimeInterval) { lock.withLock { clockOffset += seconds } }
    public func attachDebugger(_ attached: Bool = true) { lock.withLock { debuggerAttached = attached } }
    public func setDeviceLock(_ present: Bool) { lock.withLock { deviceLockPresent = present } }

    public func checkIntegrity() throws(PlatformIntegrityError) {
        let (debugger, deviceLock) = lock.withLock { (debuggerAttached, deviceLockPresent) }
        if debugger { throw .deviceProtection("a debugger is attached") }
        if !deviceLock { throw .noDeviceLock }
    }

    public func makeKeyProtector() throws -> any KeyProtector { protector }
}
