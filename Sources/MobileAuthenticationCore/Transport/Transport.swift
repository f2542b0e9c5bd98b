import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix
import NIOSSL
import NevisProtocol

/// Why an HTTP exchange did not happen.
package enum TransportFailure: Error, CustomStringConvertible {
    /// Plain HTTP, or a certificate the flavor does not trust: never retried, never downgraded.
    case insecure(String)
    /// The server could not be reached or did not answer in time.
    case network(any Error)

    package var description: String {
        switch self {
        case .insecure(let reason): return "insecure transport: \(reason)"
        case .network(let error): return "network failure: \(error)"
        }
    }

    /// A TLS handshake that failed, in the words every transport uses.
    static func handshake(_ reason: String) -> TransportFailure { .insecure("the TLS handshake failed: \(reason)") }
    /// A certificate the flavor does not trust.
    static let untrustedCertificate = "the server's certificate is not trusted"
    /// Any other handshake failure (a protocol version or cipher refused, a broken handshake).
    static let unacceptableTLS = "the server's TLS is not acceptable"
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

package struct HTTPExchange: Sendable {
    package let status: Int
    package let body: Data
    package var headers: [(String, String)] = []
}

/// One HTTP request of an operation.
package struct HTTPRequest: Sendable {
    package enum Method: String, Sendable { case GET, POST, PUT, PATCH, DELETE }
    var method: Method
    var url: URL
    var body: Data?
    package var headers: [(String, String)]
    var accept: String = uafContentType
    var contentType: String = uafContentType

    package init(
        method: Method, url: URL, body: Data?, headers: [(String, String)], accept: String = uafContentType,
        contentType: String = uafContentType
    ) {
        self.method = method
        self.url = url
        self.body = body
        self.headers = headers
        self.accept = accept
        self.contentType = contentType
    }

    /// Refuses anything but HTTPS before a byte is sent, in every flavor and on every transport: never downgraded.
    func requireHTTPS() throws(TransportFailure) {
        guard url.scheme?.lowercased() == "https" else {
            throw TransportFailure.insecure("\(url.scheme ?? "no scheme")://… is not allowed; the SDK speaks HTTPS only")
        }
    }

    /// The trace hook's event for this request: before it goes out (`answer` nil, not yet sent), or after its answer
    /// or its failure (`answer` nil, sent: status 0).
    func traceEvent(sent: Bool, answer: HTTPExchange? = nil) -> HTTPTraceEvent {
        HTTPTraceEvent(
            isResponse: sent, method: method.rawValue, url: url, requestBody: body, status: answer?.status ?? 0,
            responseBody: answer?.body ?? Data())
    }

    /// Fresh `Device-Signature` claims that name this request (method, path, body hash), signed as `dispatchTargetId`.
    package func deviceSignatureClaims(dispatchTargetId: String, now: Date) -> DeviceSignature.Claims {
        DeviceSignature.Claims(
            dispatchTargetId: dispatchTargetId, now: now, method: method.rawValue, path: DeviceSignature.path(of: url),
            body: Array(body ?? Data()))
    }
}

/// How operations reach the server. ``HTTPTransport`` is the real one; tests of the operation runner use a fake
/// that answers in memory.
package protocol ClientTransport: Sendable {
    func send(_ request: HTTPRequest) async throws(TransportFailure) -> HTTPExchange
    func shutdown() async
}

/// The media type of UAF requests and responses (nevisFIDO's HTTP API).
let uafContentType = "application/fido+uaf;charset=UTF-8"

/// HTTPS to the server with AsyncHTTPClient on NIOSSL: the client's transport on Linux, and the command-line tools'
/// on every platform (an app's client on Apple platforms uses ``URLSessionTransport``). TLS only: the system trust
/// store, plus the certificates ``TransportSecurity/debug(trustedCertificatesPEM:)`` names. There is no flag to
/// accept an arbitrary certificate.
package final class HTTPTransport: ClientTransport {
    static let maximumResponseSize = 1 << 20
    private let client: HTTPClient
    private let timeout: TimeAmount
    private let trace: (@Sendable (HTTPTraceEvent) -> Void)?

    package init(configuration: Configuration, trace: (@Sendable (HTTPTraceEvent) -> Void)? = nil) throws {
        self.trace = trace
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        let anchors = try configuration.transportSecurity.configuredAnchors()
        if !anchors.isEmpty {
            tls.additionalTrustRoots = [.certificates(try anchors.map { try NIOSSLCertificate(bytes: Array($0), format: .der) })]
        }
        var clientConfiguration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(Int64(configuration.networkTimeoutInSeconds))))
        // A failed connection (refused, or a certificate the flavor does not trust) fails the request at once
        // instead of being retried with back-off until the network timeout: a trust failure never heals by waiting.
        clientConfiguration.connectionPool.retryConnectionEstablishment = false
        // One TLS stack on every platform: NIOSSL on NIOPosix. AsyncHTTPClient's own default on Apple platforms is
        // Network.framework, which ignores `additionalTrustRoots` (the debug flavor's development certificate) and
        // waits for connectivity on a certificate it does not trust instead of failing. NIOSSL checks the system
        // trust store there through Security.framework, with the additional roots as extra anchors.
        client = HTTPClient(eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton), configuration: clientConfiguration)
        timeout = .seconds(Int64(configuration.networkTimeoutInSeconds))
    }

    deinit {
        // Shut the client down even if the app never calls `shutdown()`; the callback keeps it alive until then.
        let client = self.client
        client.shutdown { _ in _ = client }
    }

    package func shutdown() async {
        try? await client.shutdown()
    }

    package func send(_ request: HTTPRequest) async throws(TransportFailure) -> HTTPExchange {
        try request.requireHTTPS()
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        outgoing.headers.add(name: "Accept", value: request.accept)
        if let body = request.body {
            outgoing.headers.add(name: "Content-Type", value: request.contentType)
            outgoing.body = .bytes(ByteBuffer(data: body))
        }
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        trace?(request.traceEvent(sent: false))
        do {
            let response = try await client.execute(outgoing, timeout: timeout)
            let bytes = try await response.body.collect(upTo: Self.maximumResponseSize)
            let exchange = HTTPExchange(
                status: Int(response.status.code), body: Data(buffer: bytes),
                headers: response.headers.map { ($0.name, $0.value) })
            trace?(request.traceEvent(sent: true, answer: exchange))
            return exchange
        } catch {
            trace?(request.traceEvent(sent: true))
            if let reason = Self.tlsFailure(error) { throw TransportFailure.handshake(reason) }
            throw TransportFailure.network(error)
        }
    }

    /// What a TLS failure means to a user, without the TLS library's internals; nil when `error` is not one.
    static func tlsFailure(_ error: any Error) -> String? {
        let text = String(describing: error)
        if text.contains("CERTIFICATE_VERIFY_FAILED") { return TransportFailure.untrustedCertificate }
        // NIOSSL's errors on every platform: the transport never runs on Network.framework (see `init`).
        let tls = error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError || text.contains("handshakeFailed")
        return tls ? TransportFailure.unacceptableTLS : nil
    }
}
