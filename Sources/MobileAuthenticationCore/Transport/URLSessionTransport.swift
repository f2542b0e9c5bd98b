import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// HTTPS to the server with URLSession: the client's transport on Apple platforms, where only URLSession brings up
/// VPN On Demand, follows the system's HTTP proxy (and its PAC file), speaks HTTP/2 and applies App Transport
/// Security (Apple's TN3151: BSD sockets, which NIO uses, do none of these). It keeps ``HTTPTransport``'s contract:
///
/// - HTTPS only; plain HTTP is refused before anything is sent.
/// - Trust: the system's roots; in the debug flavor also the certificates of
///   ``TransportSecurity/debug(trustedCertificatesPEM:)`` (evaluated by `ServerTrust` on Apple platforms); the release
///   flavor refuses a configuration that names any (``TransportSecurity/additionalAnchors(in:)``).
/// - One deadline of `networkTimeoutInSeconds` per exchange; a redirect is answered, not followed; an answer over
///   1 MiB is refused; no cookie, cache or credential is kept between requests (the SDK carries its own).
/// - A cancelled task cancels its request at once.
///
/// On Linux (Foundation's URLSession on libcurl) it compiles and runs the same contract, but trusts only the system's
/// roots: libcurl there offers no trust hook, so the debug roots and `ServerTrust` are Apple's only.
package final class URLSessionTransport: ClientTransport {
    static let maximumResponseSize = HTTPTransport.maximumResponseSize
    private let session: URLSession
    private let exchanges: Exchanges
    private let trace: (@Sendable (HTTPTraceEvent) -> Void)?

    package init(
        configuration: Configuration, flavor: SDKFlavor = .current, trace: (@Sendable (HTTPTraceEvent) -> Void)? = nil
    )
        throws(TransportFailure)
    {
        let anchors = try configuration.transportSecurity.additionalAnchors(in: flavor)
        #if !canImport(Security)
        // libcurl's URLSession has no trust hook: roots it cannot add are refused, not dropped.
        guard anchors.isEmpty else {
            throw .insecure("URLSession on this platform trusts only the system's roots: it cannot add TransportSecurity.debug's")
        }
        #endif
        self.trace = trace
        let settings = URLSessionConfiguration.ephemeral
        // The SDK carries the server's session itself (the authorization provider); nothing is kept behind its back.
        settings.httpCookieStorage = nil
        settings.httpShouldSetCookies = false
        settings.urlCredentialStorage = nil
        settings.urlCache = nil
        settings.requestCachePolicy = .reloadIgnoringLocalCacheData
        settings.timeoutIntervalForRequest = TimeInterval(configuration.networkTimeoutInSeconds)
        settings.timeoutIntervalForResource = TimeInterval(configuration.networkTimeoutInSeconds)
        #if canImport(Darwin)
        // Offline fails at once (the retry policy decides about waiting), as the NIO transport does; libcurl's
        // URLSession never waits.
        settings.waitsForConnectivity = false
        settings.tlsMinimumSupportedProtocolVersion = .TLSv12
        #endif
        exchanges = Exchanges(anchors: anchors, limit: Self.maximumResponseSize)
        session = URLSession(configuration: settings, delegate: exchanges, delegateQueue: nil)
    }

    deinit {
        // A session keeps its delegate until it is invalidated.
        session.invalidateAndCancel()
    }

    package func shutdown() async {
        session.invalidateAndCancel()
    }

    package func send(_ request: HTTPRequest) async throws(TransportFailure) -> HTTPExchange {
        try request.requireHTTPS()
        var outgoing = URLRequest(url: request.url)
        outgoing.httpMethod = request.method.rawValue
        outgoing.setValue(request.accept, forHTTPHeaderField: "Accept")
        if let body = request.body {
            outgoing.setValue(request.contentType, forHTTPHeaderField: "Content-Type")
            outgoing.httpBody = body
        }
        for (name, value) in request.headers { outgoing.addValue(value, forHTTPHeaderField: name) }
        trace?(request.traceEvent(sent: false))
        let result = await exchanges.run(session.dataTask(with: outgoing))
        trace?(request.traceEvent(sent: true, answer: try? result.get()))
        return try result.get()
    }

    /// What a URLSession error means for the contract: a TLS refusal is ``TransportFailure/insecure(_:)`` (never
    /// retried), anything else a network failure.
    static func failure(_ error: any Error) -> TransportFailure {
        guard let error = error as? URLError else { return .network(error) }
        switch error.code {
        case .serverCertificateUntrusted, .serverCertificateHasUnknownRoot, .serverCertificateHasBadDate, .serverCertificateNotYetValid:
            return .handshake(TransportFailure.untrustedCertificate)
        case .secureConnectionFailed, .clientCertificateRejected, .clientCertificateRequired:
            return .handshake(TransportFailure.unacceptableTLS)
        case .appTransportSecurityRequiresSecureConnection:
            return .insecure("App Transport Security refused the connection (see the app's NSAppTransportSecurity)")
        default:
            #if canImport(FoundationNetworking)
            // Foundation on libcurl reports every TLS failure as code -1 (unknown) with libcurl's text
            // ("SSL certificate problem: unable to get local issuer certificate", "SSL connect error").
            let text = error.localizedDescription
            if error.code == .unknown, text.hasPrefix("SSL") {
                return .handshake(text.contains("certificate") ? TransportFailure.untrustedCertificate : TransportFailure.unacceptableTLS)
            }
            #endif
            return .network(error)
        }
    }

    /// The session's delegate: one entry per running task (its answer so far, its continuation), the redirect and
    /// size rules, and on Apple platforms the server trust decision.
    final class Exchanges: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        private struct Running {
            var continuation: CheckedContinuation<Result<HTTPExchange, TransportFailure>, Never>
            var response: HTTPURLResponse?
            var body = Data()
            /// Set when the SDK ended the task itself: the reason the caller gets instead of URLSession's "cancelled".
            var refusal: TransportFailure?
        }
        private let lock = NSLock()
        private var running: [Int: Running] = [:]
        /// DER certificates trusted beside the system's roots (the debug flavor's), empty for the system's alone.
        let anchors: [Data]
        let limit: Int

        init(anchors: [Data], limit: Int) {
            self.anchors = anchors
            self.limit = limit
        }

        func run(_ task: URLSessionDataTask) async -> Result<HTTPExchange, TransportFailure> {
            let box = TaskBox(task)
            return await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    lock.withLock { running[task.taskIdentifier] = Running(continuation: continuation) }
                    task.resume()
                    // A cancellation that came before the entry existed finds the task here.
                    if Task.isCancelled { task.cancel() }
                }
            } onCancel: {
                box.task.cancel()
            }
        }

        /// Ends `task`'s entry with `result` (once: later calls find no entry).
        private func finish(_ task: URLSessionTask, _ result: (Running) -> Result<HTTPExchange, TransportFailure>) {
            let entry = lock.withLock { running.removeValue(forKey: task.taskIdentifier) }
            guard let entry else { return }
            entry.continuation.resume(returning: result(entry))
        }

        private func refuse(_ task: URLSessionTask, _ failure: TransportFailure) {
            lock.withLock { running[task.taskIdentifier]?.refusal = failure }
            task.cancel()
        }

        func urlSession(
            _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
            completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
        ) {
            guard let http = response as? HTTPURLResponse else {
                refuse(dataTask, .network(URLError(.badServerResponse)))
                return completionHandler(.cancel)
            }
            // A declared length over the limit is refused before its body is read.
            if http.expectedContentLength > Int64(limit) {
                refuse(dataTask, .network(ResponseTooLarge(limit: limit)))
                return completionHandler(.cancel)
            }
            lock.withLock { running[dataTask.taskIdentifier]?.response = http }
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            let over = lock.withLock { () -> Bool in
                guard var entry = running[dataTask.taskIdentifier] else { return false }
                guard entry.body.count + data.count <= limit else { return true }
                entry.body.append(data)
                running[dataTask.taskIdentifier] = entry
                return false
            }
            if over { refuse(dataTask, .network(ResponseTooLarge(limit: limit))) }
        }

        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest,
            completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            // The redirect is the answer: the SDK never follows one (its requests are signed for one URL, and a
            // redirect could lead a body to another host).
            completionHandler(nil)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            finish(task) { entry in
                if let refusal = entry.refusal { return .failure(refusal) }
                if let error { return .failure(URLSessionTransport.failure(error)) }
                guard let response = entry.response else { return .failure(.network(URLError(.badServerResponse))) }
                let headers = response.allHeaderFields.compactMap { name, value -> (String, String)? in
                    guard let name = name as? String else { return nil }
                    return (name, "\(value)")
                }
                return .success(HTTPExchange(status: response.statusCode, body: entry.body, headers: headers))
            }
        }

        #if canImport(Security)
        func urlSession(
            _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            // Only the server's trust is answered here: the SDK sends no client certificate and no password.
            guard challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
                let trust = challenge.protectionSpace.serverTrust
            else { return completionHandler(.performDefaultHandling, nil) }
            switch ServerTrust.decide(trust, addingAnchors: anchors) {
            case .systemDefault: completionHandler(.performDefaultHandling, nil)
            case .trusted: completionHandler(.useCredential, URLCredential(trust: trust))
            case .refused(let reason):
                refuse(task, .handshake(reason))
                completionHandler(.cancelAuthenticationChallenge, nil)
            }
        }
        #endif
    }

    /// The task a cancellation handler cancels (`URLSessionDataTask` is thread-safe but not marked `Sendable` everywhere).
    private final class TaskBox: @unchecked Sendable {
        let task: URLSessionDataTask
        init(_ task: URLSessionDataTask) { self.task = task }
    }
}

/// An answer longer than the transport accepts (1 MiB): a server of the API never sends one.
package struct ResponseTooLarge: Error, CustomStringConvertible {
    package let limit: Int
    package var description: String { "the answer is longer than \(limit) bytes" }
}
