import Foundation

/// Apple's App Attest as the SDK uses it: the calls of `DCAppAttestService` (DeviceCheck), with its signatures. The
/// Apple platform answers with the real service; `SimulatedPlatform` (module `MobileAuthenticationSimulator`) with a
/// software one under its own root, which only a server configured with that root trusts.
///
/// The SDK makes one key per install and keeps its ID; the first operation a server asks to attest sends the key's
/// attestation, every later one an assertion (NevisProtocol's `AppAttestationWire`).
public protocol AppAttestProvider: Sendable {
    /// Whether the device can attest (false in the Simulator, on a Mac without a Secure Enclave, and for app
    /// extensions): then the SDK sends nothing, and the server's policy decides.
    var isSupported: Bool { get }
    /// A new key in the Secure Enclave; its ID (standard base64 of SHA-256 of the public key).
    func generateKey() async throws -> String
    /// Apple's attestation of `keyId` for `clientDataHash` (a network call to Apple on a device).
    func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data
    /// An assertion of `keyId` over `clientDataHash`.
    func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data
}

/// What a provider throws when the service no longer knows a key (`DCError.invalidKey`: the app was restored on
/// another device, or the OS dropped the key): the SDK makes a new key once, then gives up with
/// `AppAttestationError`.
public struct AppAttestKeyInvalid: Error, Sendable, Equatable, CustomStringConvertible {
    public init() {}
    public var description: String { "the App Attest key is no longer valid" }
}
