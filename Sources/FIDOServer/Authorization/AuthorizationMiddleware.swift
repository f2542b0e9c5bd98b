import FIDOServerCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOSSL
import NevisProtocol

/// Establishes who is calling a protected route, or answers 401 itself. It accepts, in this order:
/// 1. `Authorization: Bearer <jwt>`: a token this server issued (its key id names our key; the session it names
///    must be live) or a relying-party token (verified against the configured keys);
/// 2. the session cookie from a prior UAF authentication;
/// 3. a `Device-Signature` (``DeviceSignatureVerifier``): the user of the dispatch target that signed it;
/// 4. a client certificate the TLS handshake verified (`authorization.clientCertificates`): the principal it maps to;
/// 5. the trusted proxy's header, only from the configured peer addresses;
/// 6. without any of them, a peer in `authorization.internalDispatchNetworks` (the bank's own services, as nevisAuth).
/// A credential that is present but invalid is refused outright, never skipped in favour of the next one, so a
/// forged token cannot fall through to a weaker check. Whether the principal may act for the username in the
/// body is the handler's decision (403), since only it has read the body.
///
/// With `required: false` (the open endpoints whose limits depend on who calls, ``Authorizer/presentedPrincipal(for:peerIP:signed:cookie:)``)
/// a request without credentials goes on anonymously; one with an invalid credential is still refused.
struct AuthorizationMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let authorizer: Authorizer
    var required = true
    /// Hears every refused credential (the audit trail records it as a decision).
    var onRefusal: @Sendable (String) -> Void = { _ in }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        var request = request
        var signed: SignedRequest?
        if let signature = request.headers[Authorizer.deviceSignatureHeader] {
            // The signature names the body by its hash, so the body is read here; the handler reads the buffered copy.
            guard let body = try? await request.collectBody(upTo: Wire.maximumBodySize) else {
                return ErrorBody.response(.contentTooLarge, error: "too_large", message: "The body is larger than \(Wire.maximumBodySize) bytes.")
            }
            signed = context.signedRequest(request, signature: signature, body: Array(body.readableBytesView))
        }
        // Without client certificates configured, no closure holding the channel is made for each request.
        let channel = context.channel
        let certificate: @Sendable () async -> [UInt8]?
        if authorizer.clientCertificates == nil { certificate = { nil } } else { certificate = { await Self.peerCertificate(of: channel) } }
        do {
            context.principal =
                required
                ? try await authorizer.principal(for: request, peerIP: context.peerIP, signed: signed, certificate: certificate)
                : try await authorizer.presentedPrincipal(for: request, peerIP: context.peerIP, signed: signed, certificate: certificate)
        } catch {
            onRefusal("\(request.method) \(request.uri.path.prefix(160)): \(error.detail)")
            return error.response
        }
        RequestCaller.current?.principal = context.principal
        return try await next(request, context)
    }

    /// The DER of the certificate the client presented in the connection's TLS handshake (which verified it), nil
    /// when it presented none or the connection has no TLS (in-process tests). Read on the connection's event loop,
    /// the only place the TLS handler may be asked.
    static func peerCertificate(of channel: any Channel) async -> [UInt8]? {
        try? await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self).peerCertificate?.toDERBytes()
        }.get()
    }
}

/// The credential checks behind `AuthorizationMiddleware`.
struct Authorizer: Sendable {
    let configuration: ServerConfiguration.Authorization
    let relyingParty: RelyingPartyTokenVerifier?
    let issuer: TokenIssuer
    let sessions: SessionStore
    let cookieName: String
    let deviceSignatures: DeviceSignatureVerifier
    /// `authorization.internalDispatchNetworks`, parsed once.
    var internalNetworks: [IPNetwork] = []
    /// `authorization.clientCertificates`: the principals of the relying party's client certificates.
    var clientCertificates: ClientCertificatePrincipals?
    let clock: @Sendable () -> Date
    let logger: Logger

    /// The token of an `Authorization: Bearer <token>` value (the scheme in any case), or nil for another scheme.
    static func bearerToken(_ authorization: String) -> String? {
        guard authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else { return nil }
        return String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
    }

    func principal(
        for request: Request, peerIP: String?, signed: SignedRequest?, certificate: @Sendable () async -> [UInt8]? = { nil }
    ) async throws(AuthorizationFailure) -> Principal {
        if let principal = try await presentedPrincipal(for: request, peerIP: peerIP, signed: signed, cookie: true, certificate: certificate) {
            return principal
        }
        if configuration.developmentMode { return Principal(source: .development, subject: nil, isAdmin: false) }
        throw .unauthenticated("no credentials")
    }

    /// The principal of the credential the request presents, nil when it presents none; an invalid one is refused.
    /// On an open endpoint (`cookie: false`) the session cookie is not looked at: a browser sends it on its own, and a
    /// stale one must not turn a login into a 401. Development mode makes nobody a principal here: an open endpoint's
    /// anonymous limits hold in development too.
    /// `signed` is the request's `Device-Signature` with what it must name, nil when it has none; `certificate` reads
    /// the client certificate of the connection, asked only when client certificates are configured and the request
    /// carries no other credential.
    func presentedPrincipal(
        for request: Request, peerIP: String?, signed: SignedRequest?, cookie: Bool = false,
        certificate: @Sendable () async -> [UInt8]? = { nil }
    ) async throws(AuthorizationFailure) -> Principal? {
        if let authorization = request.headers[.authorization] {
            guard let token = Self.bearerToken(authorization) else { throw .unauthenticated("Authorization header is not a bearer token") }
            // Refused before any part of it is decoded: the header of an unverified token is a stranger's JSON, and
            // HTTP allows 80 KB of it. Ours are under 1 KB; a relying party's RS256 token with its claims a few.
            guard token.utf8.count <= TokenHeader.maximumTokenBytes else {
                throw .unauthenticated("the bearer token is longer than \(TokenHeader.maximumTokenBytes) bytes")
            }
            if await issuer.isOurs(token, now: clock()) { return try await sessionPrincipal(jwt: token) }
            guard let relyingParty else { throw .unauthenticated("no relying-party JWT keys are configured") }
            return try await relyingParty.principal(token: token, now: clock())
        }
        if cookie, let token = Self.cookie(named: cookieName, in: request.headers[values: .cookie]) {
            guard let session = try await liveSession({ try await sessions.session(token: token, now: $0) }) else {
                throw .unauthenticated("session cookie is unknown, expired or revoked")
            }
            return Principal(source: .session(id: session.id), subject: session.username, isAdmin: false, authenticatedAt: session.createdAt)
        }
        if let signed {
            do {
                let (target, _) = try await deviceSignatures.verify(signed, targetID: nil, as: DeviceSignature.Claims.self)
                return Principal(source: .deviceSignature(DeviceScope(signer: target)), subject: target.username, isAdmin: false)
            } catch let refusal as DeviceSignatureRefusal {
                throw .unauthenticated("device signature: \(refusal.detail)")
            } catch {
                throw .unauthenticated("device signature: \(error)")
            }
        }
        // A certificate is the connection's credential: the request's own (above) decides when it has one. A verified
        // certificate that maps to no principal is refused, never read as no credential.
        if let clientCertificates, let der = await certificate() { return try clientCertificates.principal(certificateDER: der) }
        if let proxy = configuration.trustedProxy, let name = HTTPField.Name(proxy.header), let value = request.headers[name] {
            // The header is believed only from the proxy itself; from anyone else it is a forgery attempt.
            guard let peerIP, proxy.addresses.contains(peerIP) else {
                throw .unauthenticated("\(proxy.header) from untrusted peer \(peerIP ?? "unknown")")
            }
            guard !value.isEmpty else { throw .unauthenticated("\(proxy.header) is empty") }
            return Principal(source: .trustedProxy, subject: value, isAdmin: false)
        }
        // The bank's own services, by the TCP peer (a forwarded header is the client's word), only when they present
        // no credential: a presented one is checked as any other.
        if let peerIP, !internalNetworks.isEmpty, let peer = IPNetwork(peerIP), internalNetworks.contains(where: { $0.contains(peer) }) {
            return Principal(source: .internalNetwork(address: peer.address), subject: nil, isAdmin: false)
        }
        return nil
    }

    static let deviceSignatureHeader = HTTPField.Name(DeviceSignature.headerName)!

    private func sessionPrincipal(jwt: String) async throws(AuthorizationFailure) -> Principal {
        let claims = try await issuer.verify(jwt, now: clock())
        guard let session = try await liveSession({ try await sessions.session(id: claims.sid, now: $0) }), session.username == claims.sub else {
            throw .unauthenticated("the token's session is expired or revoked")
        }
        if claims.token_use == IssuedTokenClaims.Use.registration.rawValue {
            return Principal(source: .registration(sessionId: session.id, deviceId: claims.device_id), subject: session.username, isAdmin: false)
        }
        return Principal(source: .session(id: session.id), subject: session.username, isAdmin: false, authenticatedAt: session.createdAt)
    }

    /// A session lookup at the server's current time. A storage failure refuses the credential (fail closed).
    private func liveSession(_ lookup: (Date) async throws -> SessionRecord?) async throws(AuthorizationFailure) -> SessionRecord? {
        do { return try await lookup(clock()) } catch { throw .unauthenticated("session lookup failed: \(error)") }
    }

    static func cookie(named name: String, in headers: [String]) -> String? {
        for header in headers {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }
}
