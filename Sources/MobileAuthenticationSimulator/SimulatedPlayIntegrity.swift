import FIDOSimulation
import Foundation
import MobileAuthenticationCore

/// Play Integrity's standard requests in software, for the simulated Android device: verdict tokens from a
/// `SoftwarePlayIntegrity` of FIDOSimulation (its keys, never Google's, so only a server configured with them trusts
/// the tokens), for the verdicts a test sets. As on a device, a token asked for another Google Cloud project number is
/// encrypted under that project's keys, which the server does not hold; the service can be unavailable (no Play
/// Store), and an app or device can be made to fail the checks.
public final class SimulatedPlayIntegrity: PlayIntegrityProvider, @unchecked Sendable {
    // @unchecked: every mutable member is read and written under `lock`.
    private let lock = NSLock()
    public let issuer: SoftwarePlayIntegrity
    public let cloudProjectNumber: Int64
    private var verdicts: SoftwarePlayIntegrity.Verdicts
    private var available = true
    private var tokens = 0
    private let clock: @Sendable () -> Date

    public init(
        issuer: SoftwarePlayIntegrity, cloudProjectNumber: Int64, verdicts: SoftwarePlayIntegrity.Verdicts,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.issuer = issuer
        self.cloudProjectNumber = cloudProjectNumber
        self.verdicts = verdicts
        self.clock = clock
    }

    /// What Google says of the app and device from now on (a tampered app: `appRecognitionVerdict`
    /// `UNRECOGNIZED_VERSION`; a rooted device: no `deviceRecognitionVerdict`).
    public func setVerdicts(_ verdicts: SoftwarePlayIntegrity.Verdicts) { lock.withLock { self.verdicts = verdicts } }
    public var currentVerdicts: SoftwarePlayIntegrity.Verdicts { lock.withLock { verdicts } }
    /// Whether Play Integrity answers (false: as on a device without the Play Store).
    public func setAvailable(_ available: Bool) { lock.withLock { self.available = available } }
    /// How many tokens were issued (each is a call to Google on a device).
    public var tokenCount: Int { lock.withLock { tokens } }

    public func standardIntegrityToken(cloudProjectNumber: Int64, requestHash: String) async throws -> String {
        let (verdicts, available) = lock.withLock { (self.verdicts, self.available) }
        guard available else { throw SimulatedPlayIntegrityUnavailable() }
        lock.withLock { tokens += 1 }
        // Google encrypts and signs with the keys of the project the request names: another project's are not ours.
        let issuer = cloudProjectNumber == self.cloudProjectNumber ? self.issuer : SoftwarePlayIntegrity()
        return try issuer.token(verdicts, requestHash: requestHash, timestamp: clock())
    }
}

/// What the simulated Play Integrity throws when it is unavailable (Google's `IntegrityErrorCode.API_NOT_AVAILABLE`).
public struct SimulatedPlayIntegrityUnavailable: Error, Sendable, Equatable, CustomStringConvertible {
    public init() {}
    public var description: String { "Play Integrity is not available on this device (API_NOT_AVAILABLE)" }
}
