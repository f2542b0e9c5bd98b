import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Primitives

/// One server: its base URL and the appID its requests imply when they name none.
struct LoadTarget: Sendable {
    var base: String
    var appID: String
    var host: String
    var port: Int
    /// The Host header: the host (an IPv6 address in brackets) and the port.
    var hostHeader: String
    init(_ url: URL) {
        base = url.absoluteString.hasSuffix("/") ? String(url.absoluteString.dropLast()) : url.absoluteString
        appID = base + "/nevisfido/uaf/1.1/facets"
        host = url.host ?? "localhost"
        port = url.port ?? 443
        hostHeader = (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }
}

/// What every loop's ``LoadClient`` shares: the TLS context (the trusted certificates), the request timeout and the
/// event loops.
final class LoadHTTP: Sendable {
    let tls: NIOSSLContext
    let timeout: TimeAmount
    let group: MultiThreadedEventLoopGroup

    init(plan: LoadPlan) throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let pem = plan.trustedCertificatesPEM {
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        }
        tls = try NIOSSLContext(configuration: configuration)
        timeout = .seconds(plan.requestTimeoutSeconds)
        group = .singleton
    }

    /// A short, stable description, so the same failure is counted under one key.
    static func short(_ error: any Error) -> String {
        if let error = error as? NIOConnectionError, let first = error.connectionErrors.first?.error { return short(first) }
        if let io = error as? IOError { return SystemErrorText.connectionReason(errno: io.errnoCode, place: nil) }
        let text = String(describing: error)
        // BoringSSL's text of an untrusted certificate is long and cut off mid-word; say what it means.
        if error is NIOSSLError, text.contains("CERTIFICATE_VERIFY_FAILED") { return untrusted }
        return text.count > 80 ? String(text.prefix(80)) + "…" : text
    }

    static let refused = SystemErrorText.connectionReason(errno: ECONNREFUSED, place: nil)
    static let untrusted = "the server's certificate is not trusted (the TLS handshake refused it)"
}
