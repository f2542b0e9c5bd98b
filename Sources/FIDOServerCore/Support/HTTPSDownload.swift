import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL

/// One GET of a document the server depends on (the Metadata Service BLOB, the relying party's JWKS): HTTPS only,
/// without redirects, at most `maximumBytes`, all of it within `timeout`, trusting the system's roots plus
/// `trustedCertificatesPath` (a proxy, a local mirror, a test host). A client is made for each download and shut
/// down after it: downloads are rare (minutes apart), and nothing is left open between them.
enum HTTPSDownload {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Through `proxy` (a `CONNECT` tunnel) unless it exempts the URL's host.
    static func get(
        _ url: String, trustedCertificatesPath: String?, maximumBytes: Int, timeout: TimeAmount = .seconds(30),
        proxy: ServerConfiguration.OutboundProxy? = nil
    ) async throws -> Data {
        guard url.hasPrefix("https://") else { throw Failure(description: "\(url) is not an https:// URL") }
        var tls = TLSConfiguration.makeClientConfiguration()
        if let path = trustedCertificatesPath {
            // Added to the system's roots; certificate checks are never relaxed.
            tls.additionalTrustRoots = [.file(path)]
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, timeout: .init(connect: .seconds(10), read: timeout))
        configuration.redirectConfiguration = .disallow
        if let host = URL(string: url)?.host { configuration.proxy = proxy?.proxy(for: host) }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        // The whole download, body included, within `timeout`: the client's own timeout ends at the response's head,
        // and a host that trickles its body a byte at a time would otherwise hold the fetch for ever.
        let outcome = await withTaskGroup(of: Result<Data, any Error>?.self) { group in
            group.addTask {
                do {
                    let response = try await client.execute(HTTPClientRequest(url: url), timeout: timeout)
                    guard response.status == .ok else { throw Failure(description: "\(url): HTTP \(response.status.code)") }
                    return .success(Data(buffer: try await response.body.collect(upTo: maximumBytes)))
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: .nanoseconds(timeout.nanoseconds))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        // Shut down without waiting for it: a connection that is still held can take the client seconds to close.
        Task { try? await client.shutdown() }
        switch outcome {
        case .success(let data): return data
        case .failure(let failure as Failure): throw failure
        case .failure(let error): throw Failure(description: "\(url): \(error)")
        case nil: throw Failure(description: "\(url): not downloaded within \(timeout.nanoseconds / 1_000_000_000) s")
        }
    }
}
