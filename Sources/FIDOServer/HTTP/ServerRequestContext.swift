import FIDOServerCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NevisProtocol

/// The request context of every route: the peer address (for rate limits and the trusted-proxy rule) and the
/// principal that `AuthorizationMiddleware` established on protected routes.
public struct ServerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The connection, for what its TLS handshake established (the client certificate, `AuthorizationMiddleware`).
    let channel: any Channel
    public var principal: Principal?
    /// The path the client sent when the server answers it under another (``AppPathResponder``'s `/_app` alias):
    /// a device signature names the path the device used.
    public var receivedPath: String?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
        principal = nil
    }

    /// The peer's IP address as text, or nil (e.g. in-process tests).
    var peerIP: String? { remoteAddress?.ipAddress }

    /// A device signature with what it must name: `request`'s method, the path the client sent, and `body` (nil when
    /// the JWS is itself the body).
    func signedRequest(_ request: Request, signature: String?, body: [UInt8]?) -> SignedRequest {
        SignedRequest(signature: signature, method: request.method.rawValue, path: receivedPath ?? request.uri.path, body: body)
    }
}

extension ServerRequestContext {
    func requirePrincipal() throws -> Principal {
        guard let principal else { throw AuthorizationFailure.unauthenticated("no principal on a protected route") }
        return principal
    }
}
