import Crypto
import Foundation
import Primitives
import UAF

/// One software authenticator and response builder, shared by the server tests, the benchmarks and the CLI's load
/// tools: an ECDSA P-256 key (ALG_SIGN 0x0002, ALG_KEY 0x0101) answering RegistrationRequests and
/// AuthenticationRequests the way a UAF authenticator does. Each step takes a `mutate` hook so a test can make
/// exactly one thing wrong. (The SDK's own authenticators build the same messages with the same `UAF` builders.)
public struct SoftwareAuthenticator: Sendable {
    /// Not restricted to compact-representable keys (swift-crypto's default, which draws about two keys per key kept):
    /// UAF sends the whole public key, and the load tool makes one authenticator per registration.
    public var key = P256.Signing.PrivateKey(compactRepresentable: false)
    public var keyID: [UInt8] = SecureRandom.bytes(32)
    public var counter: UInt32 = 0
    public var aaid = "F1D0#1001"
    public var facetID = SoftwareAuthenticator.virtualDeviceFacetID
    public var channelBinding = ChannelBinding()

    public init() {}

    /// The facet ID the virtual devices report (`mauth device`, `mauth load`, `mauth demo`): the servers those start
    /// for development trust it. The SDK's `SimulatedPlatform` reports the same by default.
    public static let virtualDeviceFacetID = "ios:bundle-id:ch.nevis.mauth.virtualdevice"
    /// The Android virtual device's facet: `android:apk-key-hash:` and the base64 of the SHA-1 of its (notional)
    /// signing certificate, `=` removed (uaf-spec, AppID and Facets: 27 characters), here of the bytes of
    /// "ch.nevis.mauth.virtualdevice".
    public static let virtualAndroidDeviceFacetID = "android:apk-key-hash:PkpoMXtqLR8auIK+WSSO7OsR8bQ"

    /// The final challenge for a request: its appID, or the server's when the request names none.
    public func fcParams(appID: String?, challenge: String, serverAppID: String) -> String {
        // The encoding of fixed, valid strings cannot fail.
        try! FinalChallengeParams(appID: appID ?? serverAppID, challenge: challenge, facetID: facetID, channelBinding: channelBinding)
            .encodedFCParams()
    }

    /// The RegistrationResponse to `request` (surrogate basic attestation).
    public func register(
        _ request: RegistrationRequest, serverAppID: String, mutate: (inout KeyRegistrationData) -> Void = { _ in }
    ) throws -> RegistrationResponse {
        let fc = fcParams(appID: request.header.appID, challenge: request.challenge, serverAppID: serverAppID)
        var krd = KeyRegistrationData(
            aaid: aaid, authenticatorVersion: 1, signatureAlgorithm: .secp256r1ECDSASHA256DER,
            publicKeyEncoding: .eccX962DER, finalChallengeHash: FinalChallengeParams.hash(fcParams: fc),
            keyID: keyID, signCounter: 0, registrationCounter: 1, publicKey: Array(key.publicKey.derRepresentation))
        mutate(&krd)
        let assertion = try AssertionBuilder.registration(krd, sign: AssertionBuilder.p256Signer(key, algorithm: .secp256r1ECDSASHA256DER))
        var header = request.header
        header.exts = nil
        return RegistrationResponse(header: header, fcParams: fc, assertions: [.init(assertion: Base64URL.encode(assertion))])
    }

    /// The AuthenticationResponse to `request`, advancing the counter; a transaction is confirmed (mode 0x02).
    public mutating func authenticate(
        _ request: AuthenticationRequest, serverAppID: String,
        mutate: (inout SignedData) -> Void = { _ in }
    ) throws -> AuthenticationResponse {
        counter += 1
        let fc = fcParams(appID: request.header.appID, challenge: request.challenge, serverAppID: serverAppID)
        let transaction = request.transaction?.first
        var signed = SignedData(
            aaid: aaid, authenticatorVersion: 1,
            authenticationMode: transaction == nil ? AuthenticationMode.userVerified.rawValue : AuthenticationMode.transactionConfirmed.rawValue,
            signatureAlgorithm: .secp256r1ECDSASHA256DER, authenticatorNonce: SecureRandom.bytes(16),
            finalChallengeHash: FinalChallengeParams.hash(fcParams: fc),
            transactionContentHash: transaction?.contentHash ?? [],
            keyID: keyID, signCounter: counter)
        mutate(&signed)
        let assertion = try AssertionBuilder.authentication(signed, sign: AssertionBuilder.p256Signer(key, algorithm: .secp256r1ECDSASHA256DER))
        // The request's extensions are the server's (an app attestation ask, say), not the client's answer.
        var header = request.header
        header.exts = nil
        return AuthenticationResponse(header: header, fcParams: fc, assertions: [.init(assertion: Base64URL.encode(assertion))])
    }

    /// What a server stores for this authenticator once registered (for verifier-level tests and benchmarks).
    public func registeredKey(username: String, signCounter: UInt32 = 0) -> RegisteredKey {
        RegisteredKey(
            aaid: aaid, keyID: Base64URL.encode(keyID), username: username, publicKey: Array(key.publicKey.derRepresentation),
            publicKeyEncoding: .eccX962DER, signCounter: signCounter)
    }
}
