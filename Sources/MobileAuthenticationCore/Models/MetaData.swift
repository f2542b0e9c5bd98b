import Foundation
import Primitives

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
    /// The project's `ProductVersion` (module Primitives), with the UAF version the SDK speaks and the platform family.
    public static let mobileAuthenticationVersion = MobileAuthenticationVersion(
        major: ProductVersion.major, minor: ProductVersion.minor, patch: ProductVersion.patch, build: "FIDO UAF 1.1, \(platformName)")

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
