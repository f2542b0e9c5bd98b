import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL

/// One GET of a document the server depends on (the Metadata Service BLOB, the relying party's JWKS): HTTPS only,
/// without redirects, at most `maximumBytes`, within `timeout`, trusting the system's roots plus
/// `trustedCertificatesPath` (a proxy, a local mirror, a test host). A client is made for each download and shut
/// down after it: downloads are rare (minutes apart), and nothing is left open between them.
enum HTTPSDownload {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func get(_ url: String, trustedCertificatesPath: String?, maximumBytes: Int, timeout: TimeAmount = .seconds(30)) async throws -> Data {
        guard url.hasPrefix("https://") else { throw Failure(description: "\(url) is not an https:// URL") }
        var tls = TLSConfiguration.makeClientConfiguration()
        if let path = trustedCertificatesPath {
            // Added to the system's roots; certificate checks are never relaxed.
            tls.additionalTrustRoots = [.file(path)]
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, timeout: .init(connect: .seconds(10), read: timeout))
        configuration.redirectConfiguration = .disallow
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: timeout)
            guard response.status == .ok else { throw Failure(description: "\(url): HTTP \(response.status.code)") }
            let body = try await response.body.collect(upTo: maximumBytes)
            try await client.shutdown()
            return Data(buffer: body)
        } catch {
            try? await client.shutdown()
            if let failure = error as? Failure { throw failure }
            throw Failure(description: "\(url): \(error)")
        }
    }
}
