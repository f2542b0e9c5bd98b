import Foundation

/// The SDK's version.
public struct MobileAuthenticationVersion: Sendable, Equatable, CustomStringConvertible {
    public let major: Int
    public let minor: Int
    public let patch: Int
    /// The build: the UAF protocol version and the platform family.
    public let build: String
    public var description: String { "\(major).\(minor).\(patch)" }
    public var descriptionWithBuild: String { "\(description) (\(build))" }
}

/// Facts about the SDK, available without a client (seed 002, "SDK MetaData").
public enum MetaData {
    public static let mobileAuthenticationVersion = MobileAuthenticationVersion(major: 0, minor: 8, patch: 0, build: "FIDO UAF 1.1, \(platformName)")

    /// The FacetID the SDK uses when the configuration names none: `ios:bundle-id:<bundle id>` on Apple platforms
    /// (as nevisFIDO expects for iOS apps), `linux:<executable name>` elsewhere.
    public static var applicationFacetId: String {
        #if canImport(Darwin)
        if let bundle = Bundle.main.bundleIdentifier { return "ios:bundle-id:\(bundle)" }
        #endif
        return "linux:\(ProcessInfo.processInfo.processName)"
    }

    private static var platformName: String {
        #if os(Linux)
        return "Linux"
        #elseif canImport(Darwin)
        return "Apple"
        #else
        return "other"
        #endif
    }
}
