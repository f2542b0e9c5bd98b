import Foundation
import Primitives

/// How the SDK secures its HTTP connections.
public enum TransportSecurity: Sendable, Equatable {
    /// Release flavor: HTTPS only, certificates must chain to the system's trust store.
    case release
    /// Debug flavor: HTTPS only, and additionally trusts exactly these PEM certificates (e.g. a self-signed
    /// development server). Plain HTTP is refused in both flavors.
    case debug(trustedCertificatesPEM: [String])
}

/// The SDK configuration. `Decodable` with the Nevis keys, so apps decode it from a plist or JSON file.
public struct Configuration: Decodable, Sendable {
    public let baseUrl: URL
    public let registrationRequestPath: String
    public let registrationResponsePath: String
    public let authenticationRequestPath: String
    public let authenticationResponsePath: String
    public let deregistrationRequestPath: String
    public let dispatchTargetResourcePath: String
    public let deviceResourcePath: String
    public let networkTimeoutInSeconds: Int
    public let userInteractionTimeoutInSeconds: Int
    /// Deprecated and ignored, as in the Nevis SDK (use a retry policy).
    public let authenticationMaxRetries: Int
    /// Deprecated and ignored.
    public let authenticationRetryIntervalInSeconds: Int
    /// The application's FacetID (`ios:bundle-id:…`); on Apple platforms the bundle ID is used when absent.
    public let facetId: String?
    /// Not decoded: set with ``withTransportSecurity(_:)``. Defaults to ``TransportSecurity/release``.
    public private(set) var transportSecurity: TransportSecurity = .release
    /// How the app proves it is genuine when a server's policy asks (``AppAttestation``); nil (the default): it
    /// answers nothing, and a server that requires it refuses with ``OperationError/AppAttestationError(cause:)``.
    /// Set with ``withAppAttestation(_:)``.
    public private(set) var appAttestation: AppAttestation?

    enum CodingKeys: String, CodingKey {
        case baseUrl, registrationRequestPath, registrationResponsePath, authenticationRequestPath, authenticationResponsePath
        case deregistrationRequestPath, dispatchTargetResourcePath, deviceResourcePath, networkTimeoutInSeconds
        case userInteractionTimeoutInSeconds, authenticationMaxRetries, authenticationRetryIntervalInSeconds, facetId
    }

    /// The generic initializer: every path explicit. The defaults are nevisFIDO's own paths, so a client talks
    /// straight to a nevisFIDO-compatible server (this project's `mauth server`).
    public init(
        baseUrl: URL,
        registrationRequestPath: String = "/nevisfido/uaf/1.1/request/registration/",
        registrationResponsePath: String = "/nevisfido/uaf/1.1/registration/",
        authenticationRequestPath: String = "/nevisfido/uaf/1.1/request/authentication/",
        authenticationResponsePath: String = "/nevisfido/uaf/1.1/authentication/",
        deregistrationRequestPath: String = "/nevisfido/uaf/1.1/request/deregistration/",
        dispatchTargetResourcePath: String = "/nevisfido/token/dispatch/targets/",
        deviceResourcePath: String = "/nevisfido/devices/",
        networkTimeoutInSeconds: Int = 60, userInteractionTimeoutInSeconds: Int = 240,
        facetId: String? = nil
    ) {
        self.baseUrl = baseUrl
        self.registrationRequestPath = registrationRequestPath
        self.registrationResponsePath = registrationResponsePath
        self.authenticationRequestPath = authenticationRequestPath
        self.authenticationResponsePath = authenticationResponsePath
        self.deregistrationRequestPath = deregistrationRequestPath
        self.dispatchTargetResourcePath = dispatchTargetResourcePath
        self.deviceResourcePath = deviceResourcePath
        self.networkTimeoutInSeconds = networkTimeoutInSeconds
        self.userInteractionTimeoutInSeconds = userInteractionTimeoutInSeconds
        self.authenticationMaxRetries = 3
        self.authenticationRetryIntervalInSeconds = 1
        self.facetId = facetId
    }

    /// Identity Suite (nevisAdmin4 pattern) preset: authentication goes through nevisAuth.
    public init(idSuiteHostname: String, networkTimeoutInSeconds: Int = 60, userInteractionTimeoutInSeconds: Int = 240, facetId: String? = nil) {
        self.init(
            baseUrl: URL(string: "https://\(idSuiteHostname)")!, authenticationRequestPath: "/auth/fidouaf",
            authenticationResponsePath: "/auth/fidouaf/authenticationresponse/",
            networkTimeoutInSeconds: networkTimeoutInSeconds, userInteractionTimeoutInSeconds: userInteractionTimeoutInSeconds, facetId: facetId)
    }

    /// Authentication Cloud preset.
    public init(authCloudHostname: String, networkTimeoutInSeconds: Int = 60, userInteractionTimeoutInSeconds: Int = 240, facetId: String? = nil) {
        self.init(
            baseUrl: URL(string: "https://\(authCloudHostname)/_app")!,
            registrationRequestPath: "/uaf/1.1/request/registration/", registrationResponsePath: "/uaf/1.1/registration/",
            authenticationRequestPath: "/uaf/1.1/request/authentication/", authenticationResponsePath: "/uaf/1.1/authentication/",
            deregistrationRequestPath: "/uaf/1.1/request/deregistration/", dispatchTargetResourcePath: "/token/dispatch/targets/",
            deviceResourcePath: "/devices/", networkTimeoutInSeconds: networkTimeoutInSeconds,
            userInteractionTimeoutInSeconds: userInteractionTimeoutInSeconds, facetId: facetId)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        // Foundation's Codable form of URL is {"relative": "..."}; a plain string is accepted too.
        struct CodableURL: Decodable { let relative: URL }
        let baseUrl: URL
        if let wrapped = try? c.decode(CodableURL.self, forKey: .baseUrl) {
            baseUrl = wrapped.relative
        } else {
            baseUrl = try c.decode(URL.self, forKey: .baseUrl)
        }
        let d = Configuration(baseUrl: baseUrl)
        self.baseUrl = baseUrl
        registrationRequestPath = try c.decodeIfPresent(String.self, forKey: .registrationRequestPath) ?? d.registrationRequestPath
        registrationResponsePath = try c.decodeIfPresent(String.self, forKey: .registrationResponsePath) ?? d.registrationResponsePath
        authenticationRequestPath = try c.decodeIfPresent(String.self, forKey: .authenticationRequestPath) ?? d.authenticationRequestPath
        authenticationResponsePath = try c.decodeIfPresent(String.self, forKey: .authenticationResponsePath) ?? d.authenticationResponsePath
        deregistrationRequestPath = try c.decodeIfPresent(String.self, forKey: .deregistrationRequestPath) ?? d.deregistrationRequestPath
        dispatchTargetResourcePath = try c.decodeIfPresent(String.self, forKey: .dispatchTargetResourcePath) ?? d.dispatchTargetResourcePath
        deviceResourcePath = try c.decodeIfPresent(String.self, forKey: .deviceResourcePath) ?? d.deviceResourcePath
        networkTimeoutInSeconds = try c.decodeIfPresent(Int.self, forKey: .networkTimeoutInSeconds) ?? 60
        userInteractionTimeoutInSeconds = try c.decodeIfPresent(Int.self, forKey: .userInteractionTimeoutInSeconds) ?? 240
        authenticationMaxRetries = try c.decodeIfPresent(Int.self, forKey: .authenticationMaxRetries) ?? 3
        authenticationRetryIntervalInSeconds = try c.decodeIfPresent(Int.self, forKey: .authenticationRetryIntervalInSeconds) ?? 1
        facetId = try c.decodeIfPresent(String.self, forKey: .facetId)
    }

    /// The base URL of the server at `origin` (a redeem URL's scheme, host and port): the configured base URL when it
    /// is on that origin (so a path prefix such as the Auth Cloud preset's `/_app` applies to the operation that
    /// follows, and its account is the same as an in-band one), otherwise the origin itself.
    package func base(forOrigin origin: URL) -> URL {
        func key(_ url: URL) -> [String?] { [url.scheme?.lowercased(), url.host?.lowercased(), url.port.map(String.init)] }
        return key(baseUrl) == key(origin) ? baseUrl : origin
    }

    /// Starts the Authentication Cloud preset for `hostname` (`<instance>.mauth.nevis.cloud`, or any server that
    /// serves the Auth Cloud paths, such as `mauth server`): base `https://<hostname>/_app`.
    public static func authCloudBuilder(hostname: String) -> Builder { Builder(preset: .authCloud, hostname: hostname) }

    /// Starts the Identity Suite (nevisAdmin4 pattern) preset for `hostname`.
    public static func admin4PatternBuilder(hostname: String) -> Builder { Builder(preset: .identitySuite, hostname: hostname) }

    /// Builds a ``Configuration`` from a preset; every setter returns the builder. Its settings are kept in a
    /// `BuilderState`, like every operation builder's, so a builder shared across tasks stays consistent.
    public final class Builder: Sendable {
        enum Preset { case authCloud, identitySuite }
        struct Fields: Sendable {
            var networkTimeout = 60
            var userInteractionTimeout = 240
            var facetId: String?
            var security: TransportSecurity = .release
        }
        private let preset: Preset
        private let hostname: String
        private let state = BuilderState(Fields())

        init(preset: Preset, hostname: String) {
            self.preset = preset
            self.hostname = hostname
        }

        @discardableResult public func networkTimeoutInSeconds(_ seconds: Int) -> Self {
            state.update { $0.networkTimeout = seconds }
            return self
        }
        @discardableResult public func userInteractionTimeoutInSeconds(_ seconds: Int) -> Self {
            state.update { $0.userInteractionTimeout = seconds }
            return self
        }
        @discardableResult public func facetId(_ facetId: String) -> Self {
            state.update { $0.facetId = facetId }
            return self
        }
        @discardableResult public func transportSecurity(_ security: TransportSecurity) -> Self {
            state.update { $0.security = security }
            return self
        }

        /// The configuration; nil when `hostname` does not make an HTTPS URL.
        public func build() -> Configuration? {
            guard !hostname.isEmpty, !hostname.contains("/"), URL(string: "https://\(hostname)")?.host != nil else { return nil }
            let fields = state.value
            switch preset {
            case .authCloud:
                return Configuration(
                    authCloudHostname: hostname, networkTimeoutInSeconds: fields.networkTimeout,
                    userInteractionTimeoutInSeconds: fields.userInteractionTimeout, facetId: fields.facetId
                ).withTransportSecurity(fields.security)
            case .identitySuite:
                return Configuration(
                    idSuiteHostname: hostname, networkTimeoutInSeconds: fields.networkTimeout,
                    userInteractionTimeoutInSeconds: fields.userInteractionTimeout, facetId: fields.facetId
                ).withTransportSecurity(fields.security)
            }
        }
    }

    /// A copy that answers a server's app attestation ask with `attestation`.
    public func withAppAttestation(_ attestation: AppAttestation?) -> Configuration {
        var copy = self
        copy.appAttestation = attestation
        return copy
    }

    /// A copy using `security` for its connections.
    public func withTransportSecurity(_ security: TransportSecurity) -> Configuration {
        var copy = self
        copy.transportSecurity = security
        return copy
    }

    /// A resource path (with or without its trailing `/`) followed by `segments`, each percent-encoded as exactly one
    /// path segment (an id cannot add segments).
    package func url(_ resource: String, segments: [String], base: URL? = nil) -> URL {
        let path = resource.hasSuffix("/") ? String(resource.dropLast()) : resource
        return url(([path] + segments.map(Text.percentEncoded)).joined(separator: "/"), base: base)
    }

    package func url(_ path: String, base: URL? = nil) -> URL {
        let root = (base ?? baseUrl).absoluteString
        let trimmed = root.hasSuffix("/") ? String(root.dropLast()) : root
        return URL(string: trimmed + (path.hasPrefix("/") ? path : "/" + path))!
    }
}

/// How an app proves to the server that it is the genuine, untampered app (the Nevis SDK 4's app attestation): on
/// Apple platforms Apple's App Attest (DeviceCheck). The app needs the App Attest capability (Xcode adds the
/// `com.apple.developer.devicecheck.appattest-environment` entitlement), and the server the app's Team ID and bundle
/// ID. On Android, Google's Play Integrity (the Nevis SDK's `AppAttestation(googleCloudProjectNumber)`): the server
/// needs the package, its signing-certificate digests and the project's two Play Console keys.
public struct AppAttestation: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case appAttest
        case playIntegrity(cloudProjectNumber: Int64)
    }
    let kind: Kind

    /// Apple's App Attest: one key per install, attested once per server, an assertion for every later operation.
    public static let appAttest = AppAttestation(kind: .appAttest)

    /// Google's Play Integrity, standard requests for the Google Cloud project `cloudProjectNumber` (the number, not
    /// the project ID): a fresh verdict token for every operation a server asks to attest.
    public static func playIntegrity(cloudProjectNumber: Int64) -> AppAttestation {
        AppAttestation(kind: .playIntegrity(cloudProjectNumber: cloudProjectNumber))
    }

    /// The Nevis SDK's Android initializer: ``playIntegrity(cloudProjectNumber:)``.
    public init(googleCloudProjectNumber: Int64) { kind = .playIntegrity(cloudProjectNumber: googleCloudProjectNumber) }

    init(kind: Kind) { self.kind = kind }
}
