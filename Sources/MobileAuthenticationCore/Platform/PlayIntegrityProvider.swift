import Foundation

/// Google's Play Integrity as the SDK uses it: a standard request (Android's `StandardIntegrityManager`), prepared
/// once for the app's Google Cloud project number, then asked for a verdict token bound to a request hash. Google
/// encrypts the token under that project's keys, which the server holds ("local decryption"). `SimulatedPlatform`
/// (module `MobileAuthenticationSimulator`) answers with a software issuer under its own keys, which only a server
/// configured with them trusts.
public protocol PlayIntegrityProvider: Sendable {
    /// A verdict token whose `requestHash` is `requestHash`, from a token provider prepared for
    /// `cloudProjectNumber`. Throws what the platform throws (Play Store missing or outdated, no network, too many
    /// requests): the SDK reports it as `AppAttestationError`.
    func standardIntegrityToken(cloudProjectNumber: Int64, requestHash: String) async throws -> String
}
