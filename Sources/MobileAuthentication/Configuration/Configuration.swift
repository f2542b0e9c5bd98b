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

    enum CodingKeys: String, CodingKey {
        case baseUrl, registrationRequestPath, registrationResponsePath, authenticationRequestPath, authenticationResponsePath
        case deregistrationRequestPath, dispatchTargetResourcePath, deviceResourcePath, networkTimeoutInSeconds
        case userInteractionTimeoutInSeconds, authenticationMaxRetries, authenticationRetryIntervalInSeconds, facetId
    }

    /// The generic initializer: every path explicit. The defaults are nevisFIDO's own paths, so a client talks
    /// straight to a nevisFIDO-compatible server (this project's `mauth server`).
    public init(baseUrl: URL,
                registrationRequestPath: String = "/nevisfido/uaf/1.1/request/registration/",
                registrationResponsePath: String = "/nevisfido/uaf/1.1/registration/",
                authenticationRequestPath: String = "/nevisfido/uaf/1.1/request/authentication/",
                authenticationResponsePath: String = "/nevisfido/uaf/1.1/authentication/",
                deregistrationRequestPath: String = "/nevisfido/uaf/1.1/request/deregistration/",
                dispatchTargetResourcePath: String = "/nevisfido/token/dispatch/targets/",
                deviceResourcePath: String = "/nevisfido/devices/",
                networkTimeoutInSeconds: Int = 60, userInteractionTimeoutInSeconds: Int = 240,
                facetId: String? = nil) {
        self.baseUrl = baseUrl
        self.registrationRequestPath = registrationRequestPath; self.registrationResponsePath = registrationResponsePath
        self.authenticationRequestPath = authenticationRequestPath; self.authenticationResponsePath = authenticationResponsePath
        self.deregistrationRequestPath = deregistrationRequestPath; self.dispatchTargetResourcePath = dispatchTargetResourcePath
        self.deviceResourcePath = deviceResourcePath; self.networkTimeoutInSeconds = networkTimeoutInSeconds
        self.userInteractionTimeoutInSeconds = userInteractionTimeoutInSeconds
        self.authenticationMaxRetries = 3; self.authenticationRetryIntervalInSeconds = 1; self.facetId = facetId
    }

    /// Identity Suite (nevisAdmin4 pattern) preset: authentication goes through nevisAuth.
    public init(idSuiteHostname: String, networkTimeoutInSeconds: Int = 60, userInteractionTimeoutInSeconds: Int = 240) {
        self.init(baseUrl: URL(string: "https://\(idSuiteHostname)")!, authenticationRequestPath: "/auth/fidouaf",
                  authenticationResponsePath: "/auth/fidouaf/authenticationresponse/",
                  networkTimeoutInSeconds: networkTimeoutInSeconds, userInteractionTimeoutInSeconds: userInteractionTimeoutInSeconds)
    }

    /// Authentication Cloud preset.
    public init(authCloudHostname: String, networkTimeoutInSeconds: Int = 60, userInteractionTimeoutInSeconds: Int = 240) {
        self.init(baseUrl: URL(string: "https://\(authCloudHostname)/_app")!,
                  registrationRequestPath: "/uaf/1.1/request/registration/", registrationResponsePath: "/uaf/1.1/registration/",
                  authenticationRequestPath: "/uaf/1.1/request/authentication/", authenticationResponsePath: "/uaf/1.1/authentication/",
                  deregistrationRequestPath: "/uaf/1.1/request/deregistration/", dispatchTargetResourcePath: "/token/dispatch/targets/",
                  deviceResourcePath: "/devices/", networkTimeoutInSeconds: networkTimeoutInSeconds,
                  userInteractionTimeoutInSeconds: userInteractionTimeoutInSeconds)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        // Foundation's Codable form of URL is {"relative": "..."}; a plain string is accepted too.
        struct CodableURL: Decodable { let relative: URL }
        let baseUrl: URL
        if let wrapped = try? c.decode(CodableURL.self, forKey: .baseUrl) { baseUrl = wrapped.relative } else {
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

    /// A copy using `security` for its connections.
    public func withTransportSecurity(_ security: TransportSecurity) -> Configuration {
        var copy = self
        copy.transportSecurity = security
        return copy
    }

    /// A resource path (with or without its trailing `/`) followed by `segments`, each percent-encoded as exactly one
    /// path segment (an id cannot add segments).
    func url(_ resource: String, segments: [String], base: URL? = nil) -> URL {
        let path = resource.hasSuffix("/") ? String(resource.dropLast()) : resource
        return url(([path] + segments.map(Text.percentEncoded)).joined(separator: "/"), base: base)
    }

    func url(_ path: String, base: URL? = nil) -> URL {
        let root = (base ?? baseUrl).absoluteString
        let trimmed = root.hasSuffix("/") ? String(root.dropLast()) : root
        return URL(string: trimmed + (path.hasPrefix("/") ? path : "/" + path))!
    }
}
