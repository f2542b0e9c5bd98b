// Compiled in MobileAuthenticationCore where DeviceCheck exists, and in the test target ApplePlatformTests (a link to
// this file) only against its shim on Linux: on an Apple platform the test module is not this file's home.
#if APPLE_FRAMEWORKS_SHIM || (canImport(DeviceCheck) && !APPLE_SOURCES_LINKED)
import Foundation
#if APPLE_FRAMEWORKS_SHIM
import AppleFrameworksShim
import MobileAuthenticationCore
#else
import DeviceCheck
#endif

/// Apple's App Attest through `DCAppAttestService.shared` (DeviceCheck, iOS 14 and macOS 11 on): the calls pass
/// through unchanged, and `DCError.invalidKey` (a key the service no longer knows, as after a restore onto another
/// device) becomes ``AppAttestKeyInvalid``, on which the SDK makes a new key once. `isSupported` is false in the
/// Simulator and in app extensions; attestation itself needs the App Attest capability and reaches Apple.
public struct AppleAppAttestService: AppAttestProvider {
    public init() {}

    public var isSupported: Bool { DCAppAttestService.shared.isSupported }

    public func generateKey() async throws -> String {
        try await Self.mapped { try await DCAppAttestService.shared.generateKey() }
    }

    public func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        try await Self.mapped { try await DCAppAttestService.shared.attestKey(keyId, clientDataHash: clientDataHash) }
    }

    public func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        try await Self.mapped { try await DCAppAttestService.shared.generateAssertion(keyId, clientDataHash: clientDataHash) }
    }

    /// `body`'s result; `DCError.invalidKey` as ``AppAttestKeyInvalid``, every other error as it came.
    static func mapped<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let error as DCError where error.code == .invalidKey { throw AppAttestKeyInvalid() }
    }
}
#endif
