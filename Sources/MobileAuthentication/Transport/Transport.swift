import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOSSL

/// Why an HTTP exchange did not happen.
enum TransportFailure: Error, CustomStringConvertible {
    /// Plain HTTP, or a certificate the flavor does not trust: never retried, never downgraded.
    case insecure(String)
    /// The server could not be reached or did not answer in time.
    case network(any Error)

    var description: String {
        switch self {
        case .insecure(let reason): return "insecure transport: \(reason)"
        case .network(let error): return "network failure: \(error)"
        }
    }
}

/// One HTTP exchange, reported to an app-supplied trace hook (the virtual device prints these).
public struct HTTPTraceEvent: Sendable {
    /// False for the event sent before the request goes out, true for the one after its answer (or failure).
    public let isResponse: Bool
    public let method: String
    public let url: URL
    public let requestBody: Data?
    /// 0 when no response arrived.
    public let status: Int
    public let responseBody: Data
}

struct HTTPExchange: Sendable {
    let status: Int
    let body: Data
}

/// HTTPS to the server with AsyncHTTPClient. TLS only: the release flavor uses the system trust store; the
/// debug flavor additionally trusts given certificates. There is no flag to accept an arbitrary certificate.
final class Transport: Sendable {
    static let uafContentType = "application/fido+uaf;charset=UTF-8"
    static let maximumResponseSize = 1 << 20
    private let client: HTTPClient
    private let timeout: TimeAmount
    private let trace: (@Sendable (HTTPTraceEvent) -> Void)?

    init(configuration: Configuration, trace: (@Sendable (HTTPTraceEvent) -> Void)? = nil) throws {
        self.trace = trace
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if case .debug(let pems) = configuration.transportSecurity, !pems.isEmpty {
            var certificates: [NIOSSLCertificate] = []
            for pem in pems { certificates += try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)) }
            tls.additionalTrustRoots = [.certificates(certificates)]
        }
        var clientConfiguration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(Int64(configuration.networkTimeoutInSeconds))))
        // A failed connection (refused, or a certificate the flavor does not trust) fails the request at once
        // instead of being retried with back-off until the network timeout: a trust failure never heals by waiting.
        clientConfiguration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        timeout = .seconds(Int64(configuration.networkTimeoutInSeconds))
    }

    deinit {
        // Shut the client down even if the app never calls `shutdown()`; the callback keeps it alive until then.
        let client = self.client
        client.shutdown { _ in _ = client }
    }

    func shutdown() async {
        try? await client.shutdown()
    }

    func send(_ method: HTTPMethod, _ url: URL, body: Data?, headers: [(String, String)], accept: String = uafContentType) async throws(TransportFailure) -> HTTPExchange {
        guard url.scheme?.lowercased() == "https" else {
            throw TransportFailure.insecure("\(url.scheme ?? "no scheme")://… is not allowed; the SDK speaks HTTPS only")
        }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = method
        request.headers.add(name: "Accept", value: accept)
        if let body {
            request.headers.add(name: "Content-Type", value: Self.uafContentType)
            request.body = .bytes(ByteBuffer(data: body))
        }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        trace?(HTTPTraceEvent(isResponse: false, method: method.rawValue, url: url, requestBody: body, status: 0, responseBody: Data()))
        do {
            let response = try await client.execute(request, timeout: timeout)
            let bytes = try await response.body.collect(upTo: Self.maximumResponseSize)
            let exchange = HTTPExchange(status: Int(response.status.code), body: Data(buffer: bytes))
            trace?(HTTPTraceEvent(isResponse: true, method: method.rawValue, url: url, requestBody: body, status: exchange.status, responseBody: exchange.body))
            return exchange
        } catch {
            trace?(HTTPTraceEvent(isResponse: true, method: method.rawValue, url: url, requestBody: body, status: 0, responseBody: Data()))
            if Self.isTLSFailure(error) { throw TransportFailure.insecure("the server's certificate is not trusted (\(error))") }
            throw TransportFailure.network(error)
        }
    }

    static func isTLSFailure(_ error: any Error) -> Bool {
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError { return true }
        let text = String(describing: error)
        return text.contains("CERTIFICATE_VERIFY_FAILED") || text.contains("handshakeFailed")
    }
}
