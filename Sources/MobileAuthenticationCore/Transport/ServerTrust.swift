// Compiled in MobileAuthenticationCore where Security exists, and in the test target ApplePlatformTests (a link to
// this file) only against its shim on Linux: on an Apple platform the test module is not this file's home.
#if APPLE_FRAMEWORKS_SHIM || (canImport(Security) && !APPLE_SOURCES_LINKED)
import Foundation
#if APPLE_FRAMEWORKS_SHIM
import AppleFrameworksShim
#else
import Security
#endif

/// The trust decision of ``URLSessionTransport`` on Apple platforms when the debug flavor names roots: the server's
/// chain (already bound to the host by URLSession's SSL policy) must lead to one of the system's roots or to one of
/// the configured ones. The release flavor never comes here: it names no roots, and URLSession's own evaluation
/// decides.
enum ServerTrust {
    enum Decision: Equatable {
        /// URLSession's own evaluation decides (the system's roots, App Transport Security, pinned domains).
        case systemDefault
        case trusted
        case refused(String)
    }

    /// What the transport answers to a server trust challenge, given the DER certificates its flavor adds
    /// (``TransportSecurity/additionalAnchors(in:)``: none in the release flavor).
    static func decide(_ trust: SecTrust, addingAnchors anchors: [Data]) -> Decision {
        guard !anchors.isEmpty else { return .systemDefault }
        let certificates = anchors.compactMap { SecCertificateCreateWithData(nil, $0 as CFData) }
        guard certificates.count == anchors.count else { return .refused("a certificate of TransportSecurity.debug cannot be read") }
        // The configured roots are added, not substituted: `…Only(false)` keeps the system's roots, so a debug build
        // still reaches servers with public certificates.
        guard SecTrustSetAnchorCertificates(trust, certificates as CFArray) == errSecSuccess,
            SecTrustSetAnchorCertificatesOnly(trust, false) == errSecSuccess
        else { return .refused("the server's certificate could not be checked") }
        var error: CFError?
        guard SecTrustEvaluateWithError(trust, &error) else {
            return .refused("the server's certificate is not trusted" + (error.map { " (\(($0 as Error).localizedDescription))" } ?? ""))
        }
        return .trusted
    }
}
#endif
