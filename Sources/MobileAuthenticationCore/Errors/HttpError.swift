import AsyncHTTPClient
import Foundation
import NIOCore
import Primitives

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One failed HTTP request of an operation, for diagnostics: what was asked, and what came back, if anything. The
/// Nevis SDK's newer platforms hang it on every network-type error (`httpError`, with `server`); here every error
/// type answers ``MobileAuthenticationClientError/httpError`` and ``MobileAuthenticationClientError/server``.
///
/// An error is easily logged, so it holds no secret: the response body and headers pass the HTTP trace's redaction
/// (tokens, sessions and cookies become `[redacted]`), and the request's own headers, which carry the app's
/// authorization, are not kept at all.
public struct HttpError: Error, Sendable, CustomStringConvertible {
    /// The response's headers.
    public struct ResponseHeaders: Sendable, Equatable {
        /// By lower-cased name, each name's values in the order received.
        public let values: [String: [String]]
        public init(values: [String: [String]]) { self.values = values }
    }

    public let method: String
    public let requestUrl: URL
    /// The HTTP status of the answer; nil when none arrived (refused, timed out, an untrusted server).
    public let statusCode: Int?
    public let headers: ResponseHeaders
    /// The answer's body as text (redacted, at most ``maximumBodyLength`` characters); nil without an answer.
    public let body: String?
    /// Why no answer arrived, when none did.
    public let underlying: (any Error)?
    /// The server the request went to, when the operation knows it.
    public let server: Server?

    /// How much of an answer's body is kept: enough for a server's error message, not a whole page.
    public static let maximumBodyLength = 2048

    package init(
        method: String, requestUrl: URL, statusCode: Int?, headers: ResponseHeaders, body: String?, underlying: (any Error)?, server: Server?
    ) {
        self.method = method
        self.requestUrl = requestUrl
        self.statusCode = statusCode
        self.headers = headers
        self.body = body.map { String($0.prefix(Self.maximumBodyLength)) }
        self.underlying = underlying
        self.server = server
    }

    public var description: String {
        let outcome = statusCode.map { "HTTP \($0)" } ?? underlying.map { Self.reason($0, url: requestUrl) } ?? "no answer"
        return "\(method) \(requestUrl.absoluteString): \(outcome)"
    }

    /// Why no answer came, in words a person can act on: the socket layer's own text reads "connection reset (error
    /// set): Connection refused) (errno: 111)".
    package static func reason(_ error: any Error, url: URL) -> String {
        let place = url.host.map { host in url.port.map { "\(host):\($0)" } ?? host } ?? "the server"
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout, .deadlineExceeded, .readTimeout, .writeTimeout: return "\(place) did not answer in time"
            case .remoteConnectionClosed: return "\(place) closed the connection before it answered"
            default: return "\(error)"
            }
        }
        if let error = error as? URLError {
            // URLSession's codes (the transport on Apple platforms), in the same words as the socket layer's.
            switch error.code {
            case .cannotConnectToHost: return SystemErrorText.connectionReason(errno: ECONNREFUSED, place: place)
            case .timedOut: return SystemErrorText.connectionReason(errno: ETIMEDOUT, place: place)
            case .networkConnectionLost: return "\(place) closed the connection before it answered"
            case .notConnectedToInternet: return "the device is offline"
            case .cannotFindHost, .dnsLookupFailed: return "no server is known as \(url.host ?? "the server")"
            case .internationalRoamingOff, .dataNotAllowed, .callIsActive: return "the device may not use mobile data now"
            default: return "\(place): \(error.localizedDescription)"
            }
        }
        guard let io = error as? IOError else { return "\(error)" }
        return SystemErrorText.connectionReason(errno: io.errnoCode, place: place)
    }
}

/// A cause that carries the request it is about: ``HttpError`` itself, the server's status on an answer, the Device
/// Service's failure. The error types read ``MobileAuthenticationClientError/httpError`` through it.
package protocol HttpErrorCarrying: Error {
    var carriedHttpError: HttpError? { get }
}

extension HttpError: HttpErrorCarrying {
    package var carriedHttpError: HttpError? { self }
}
