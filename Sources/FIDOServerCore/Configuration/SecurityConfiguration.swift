import Foundation
import Primitives

extension ServerConfiguration {
    /// Who may call protected endpoints (the registration request now; dispatch and dispatch targets later).
    public struct Authorization: Codable, Sendable, Equatable {
        /// Accept every caller on protected endpoints. Only for local development: the server logs a warning at
        /// start-up, and it must be set explicitly (it is never a fallback).
        public var developmentMode: Bool
        /// JWTs issued by the relying party's backend.
        public var jwt: JWT?
        /// A header set by a trusted reverse proxy (off unless configured).
        public var trustedProxy: TrustedProxy?
        /// Addresses or networks (`10.20.0.5`, `10.20.0.0/24`) of the bank's own services that may, without a
        /// credential, do what nevisAuth does in a nevisFIDO deployment: list a user's dispatch targets and dispatch an
        /// authentication to one (a push). Nothing else: every other endpoint still needs a credential, and these
        /// callers act for no user. Matched against the TCP peer, never a forwarded header; a network holding a trusted
        /// proxy (which carries other clients' requests) is refused. Empty by default.
        public var internalDispatchNetworks: [String]
        /// Client certificates (mutual TLS) of the relying party's backends, as an alternative to its JWTs.
        public var clientCertificates: ClientCertificates?

        public init(
            developmentMode: Bool = false, jwt: JWT? = nil, trustedProxy: TrustedProxy? = nil, internalDispatchNetworks: [String] = [],
            clientCertificates: ClientCertificates? = nil
        ) {
            self.developmentMode = developmentMode
            self.jwt = jwt
            self.trustedProxy = trustedProxy
            self.internalDispatchNetworks = internalDispatchNetworks
            self.clientCertificates = clientCertificates
        }

        /// Mutual TLS for the relying party's calls: the server asks every client for a certificate issued by one of
        /// `certificateAuthoritiesPath`'s authorities and names only them in the handshake, so a phone or a browser,
        /// which holds none, is not asked to choose one and connects as before. A certificate presented must chain to
        /// one of them, be valid now and allow client authentication, or the handshake fails. A valid one is then
        /// the request's credential when the request carries no other (`Authorization`, a session cookie, a device
        /// signature), and it acts as the one principal it maps to: as a relying-party JWT with `adminScope`
        /// (`admin`: any user), `operatorScope` (`operator`: the operator's endpoints) or `sub` (`username`: one user).
        /// A certificate that maps to no principal is refused (401), never taken as anonymous.
        public struct ClientCertificates: Codable, Sendable, Equatable {
            /// PEM certificates of the authorities that issue the relying party's client certificates (its private CA).
            public var certificateAuthoritiesPath: String
            public var principals: [Mapping]

            public init(certificateAuthoritiesPath: String, principals: [Mapping]) {
                self.certificateAuthoritiesPath = certificateAuthoritiesPath
                self.principals = principals
            }

            /// One client certificate's principal: the certificate is named by its subject or by its fingerprint.
            public struct Mapping: Codable, Sendable, Equatable {
                /// The principal's name in the audit trail (`client-certificate:<name>`).
                public var name: String
                /// The subject, as RFC 4514 writes it (most specific first: `CN=backend.bank.example,O=Example Bank`, what
                /// `openssl x509 -noout -subject -nameopt RFC2253` prints): any certificate the authorities issue to it.
                public var subject: String?
                /// The SHA-256 of the certificate's DER, in hex (colons allowed): this one certificate only.
                public var sha256: String?
                /// May act for any user (a JWT's `adminScope`).
                public var admin: Bool
                /// May use the operator's endpoints (a JWT's `operatorScope`).
                public var `operator`: Bool
                /// Acts for this one user (a JWT's subject).
                public var username: String?

                public init(
                    name: String, subject: String? = nil, sha256: String? = nil, admin: Bool = false, operator: Bool = false,
                    username: String? = nil
                ) {
                    self.name = name
                    self.subject = subject
                    self.sha256 = sha256
                    self.admin = admin
                    self.operator = `operator`
                    self.username = username
                }

                /// The fingerprint as compared: lower-case hex without colons.
                package var normalizedSHA256: String? { sha256.map { $0.replacingOccurrences(of: ":", with: "").lowercased() } }

                package enum CodingKeys: String, CodingKey, CaseIterable { case name, subject, sha256, admin, `operator`, username }
                public init(from decoder: any Decoder) throws {
                    try decoder.refuseUnknownKeys(CodingKeys.self)
                    let c = try decoder.container(keyedBy: CodingKeys.self)
                    self.init(
                        name: try c.decode(String.self, forKey: .name), subject: try c.decodeIfPresent(String.self, forKey: .subject),
                        sha256: try c.decodeIfPresent(String.self, forKey: .sha256),
                        admin: try c.decodeIfPresent(Bool.self, forKey: .admin) ?? false,
                        operator: try c.decodeIfPresent(Bool.self, forKey: .operator) ?? false,
                        username: try c.decodeIfPresent(String.self, forKey: .username))
                }
            }

            package enum CodingKeys: String, CodingKey, CaseIterable { case certificateAuthoritiesPath, principals }
            public init(from decoder: any Decoder) throws {
                try decoder.refuseUnknownKeys(CodingKeys.self)
                let c = try decoder.container(keyedBy: CodingKeys.self)
                self.init(
                    certificateAuthoritiesPath: try c.decode(String.self, forKey: .certificateAuthoritiesPath),
                    principals: try c.decode([Mapping].self, forKey: .principals))
            }

            func validate() throws {
                let setting = "authorization.clientCertificates"
                guard !certificateAuthoritiesPath.isEmpty else {
                    throw ConfigurationError.invalid("\(setting).certificateAuthoritiesPath must not be empty")
                }
                guard !principals.isEmpty else { throw ConfigurationError.invalid("\(setting).principals must name at least one certificate") }
                var names = Set<String>()
                var matches = Set<String>()
                for mapping in principals {
                    let name = mapping.name
                    guard (1...64).contains(name.utf8.count),
                        name.unicodeScalars.allSatisfy({
                            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0))
                        })
                    else {
                        throw ConfigurationError.invalid(
                            "\(setting).principals: name \(UntrustedText.quoted(name)) must be 1...64 letters, digits, . _ or -")
                    }
                    guard names.insert(name).inserted else { throw ConfigurationError.invalid("\(setting).principals: \(name) is named twice") }
                    switch (mapping.subject, mapping.normalizedSHA256) {
                    case (let subject?, nil):
                        guard !subject.isEmpty, !Text.hasControlCharacters(subject) else {
                            throw ConfigurationError.invalid("\(setting).principals \(name): subject must be a distinguished name")
                        }
                        guard matches.insert("subject " + subject).inserted else {
                            throw ConfigurationError.invalid("\(setting).principals \(name): another principal has the subject \(subject)")
                        }
                    case (nil, let fingerprint?):
                        guard fingerprint.count == 64, fingerprint.allSatisfy(\.isHexDigit) else {
                            throw ConfigurationError.invalid("\(setting).principals \(name): sha256 must be 32 bytes in hex")
                        }
                        guard matches.insert("sha256 " + fingerprint).inserted else {
                            throw ConfigurationError.invalid("\(setting).principals \(name): another principal has this sha256")
                        }
                    default:
                        throw ConfigurationError.invalid("\(setting).principals \(name): give exactly one of subject and sha256")
                    }
                    // A certificate that may do nothing is a mistake, not a credential: say so at start.
                    guard mapping.admin || mapping.operator || mapping.username != nil else {
                        throw ConfigurationError.invalid("\(setting).principals \(name): give admin, operator or username")
                    }
                    if let username = mapping.username {
                        guard !mapping.admin else {
                            throw ConfigurationError.invalid(
                                "\(setting).principals \(name): username and admin exclude each other (admin acts for every user)")
                        }
                        guard (1...256).contains(username.utf8.count), !Text.hasControlCharacters(username) else {
                            throw ConfigurationError.invalid(
                                "\(setting).principals \(name): username must be 1...256 bytes without control characters")
                        }
                    }
                }
            }
        }

        public struct JWT: Codable, Sendable, Equatable {
            /// A JWKS file (RFC 7517) with the relying party's public keys (EC P-256 for ES256, RSA for RS256).
            public var jwksPath: String?
            /// PEM public keys (or certificates); EC P-256 keys verify ES256, RSA keys RS256.
            public var publicKeyPaths: [String]
            /// An `https://` URL of the relying party's JWKS, fetched at start (the server does not start without
            /// it), every `jwksRefreshSeconds`, and when a token names a key id the server does not know (at most
            /// every 30 seconds), so the relying party rotates its keys without a failure. Its keys join the others.
            public var jwksURL: String?
            /// How often the JWKS at `jwksURL` is fetched again, in seconds (60...86400).
            public var jwksRefreshSeconds: Int
            /// PEM certificates trusted for the JWKS download besides the system's roots (a proxy, a test host).
            public var jwksTrustedCertificatesPath: String?
            /// Required `iss`.
            public var issuer: String
            /// Required `aud` (one of the token's audiences).
            public var audience: String
            /// The claim that names the user; it must equal the context's username.
            public var subjectClaim: String
            /// A scope (in `scope`, space-separated, or `scp`) that lets the token act for any username.
            public var adminScope: String?
            /// The scope of the operator's endpoints (`/nevisfido/admin/…`: a user's data, removing it, erasing a user,
            /// the audit trail). Unset, `adminScope` reaches them too; set it so that a backend that acts for users
            /// cannot also erase them or read the trail, and an operator's token acts for no user.
            public var operatorScope: String?
            /// Leeway for `exp` and `nbf`, in seconds (0...300).
            public var clockSkewSeconds: Int

            public init(
                jwksPath: String? = nil, publicKeyPaths: [String] = [], issuer: String, audience: String,
                subjectClaim: String = "sub", adminScope: String? = nil, operatorScope: String? = nil, clockSkewSeconds: Int = 60,
                jwksURL: String? = nil, jwksRefreshSeconds: Int = 300, jwksTrustedCertificatesPath: String? = nil
            ) {
                self.jwksPath = jwksPath
                self.publicKeyPaths = publicKeyPaths
                self.issuer = issuer
                self.audience = audience
                self.subjectClaim = subjectClaim
                self.adminScope = adminScope
                self.operatorScope = operatorScope
                self.clockSkewSeconds = clockSkewSeconds
                self.jwksURL = jwksURL
                self.jwksRefreshSeconds = jwksRefreshSeconds
                self.jwksTrustedCertificatesPath = jwksTrustedCertificatesPath
            }

            package enum CodingKeys: String, CodingKey, CaseIterable {
                case jwksPath, publicKeyPaths, issuer, audience, subjectClaim, adminScope, operatorScope, clockSkewSeconds, jwksURL,
                    jwksRefreshSeconds
                case jwksTrustedCertificatesPath
            }
            public init(from decoder: any Decoder) throws {
                try decoder.refuseUnknownKeys(CodingKeys.self)
                let c = try decoder.container(keyedBy: CodingKeys.self)
                self.init(
                    jwksPath: try c.decodeIfPresent(String.self, forKey: .jwksPath),
                    publicKeyPaths: try c.decodeIfPresent([String].self, forKey: .publicKeyPaths) ?? [],
                    issuer: try c.decode(String.self, forKey: .issuer), audience: try c.decode(String.self, forKey: .audience),
                    subjectClaim: try c.decodeIfPresent(String.self, forKey: .subjectClaim) ?? "sub",
                    adminScope: try c.decodeIfPresent(String.self, forKey: .adminScope),
                    operatorScope: try c.decodeIfPresent(String.self, forKey: .operatorScope),
                    clockSkewSeconds: try c.decodeIfPresent(Int.self, forKey: .clockSkewSeconds) ?? 60,
                    jwksURL: try c.decodeIfPresent(String.self, forKey: .jwksURL),
                    jwksRefreshSeconds: try c.decodeIfPresent(Int.self, forKey: .jwksRefreshSeconds) ?? 300,
                    jwksTrustedCertificatesPath: try c.decodeIfPresent(String.self, forKey: .jwksTrustedCertificatesPath))
            }
        }

        public struct TrustedProxy: Codable, Sendable, Equatable {
            /// The header carrying the authenticated username, e.g. `X-Authenticated-User`.
            public var header: String
            /// Peer IP addresses the header is honoured from; from anyone else it is ignored.
            public var addresses: [String]
            public init(header: String, addresses: [String]) {
                self.header = header
                self.addresses = addresses
            }
            package enum CodingKeys: String, CodingKey, CaseIterable { case header, addresses }
            public init(from decoder: any Decoder) throws {
                try decoder.refuseUnknownKeys(CodingKeys.self)
                let c = try decoder.container(keyedBy: CodingKeys.self)
                self.init(header: try c.decode(String.self, forKey: .header), addresses: try c.decode([String].self, forKey: .addresses))
            }
        }

        package enum CodingKeys: String, CodingKey, CaseIterable {
            case developmentMode, jwt, trustedProxy, internalDispatchNetworks, clientCertificates
        }
        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                developmentMode: try c.decodeIfPresent(Bool.self, forKey: .developmentMode) ?? false,
                jwt: try c.decodeIfPresent(JWT.self, forKey: .jwt),
                trustedProxy: try c.decodeIfPresent(TrustedProxy.self, forKey: .trustedProxy),
                internalDispatchNetworks: try c.decodeIfPresent([String].self, forKey: .internalDispatchNetworks) ?? [],
                clientCertificates: try c.decodeIfPresent(ClientCertificates.self, forKey: .clientCertificates))
        }

        func validate() throws {
            try clientCertificates?.validate()
            if let jwt {
                guard jwt.jwksPath != nil || !jwt.publicKeyPaths.isEmpty || jwt.jwksURL != nil else {
                    throw ConfigurationError.invalid("authorization.jwt needs jwksPath, jwksURL or publicKeyPaths")
                }
                // Keys fetched over plain HTTP could be replaced by anyone on the path: they would mint any user's token.
                if let url = jwt.jwksURL, !url.hasPrefix("https://") || URL(string: url)?.host == nil {
                    throw ConfigurationError.invalid("authorization.jwt.jwksURL must be an https:// URL, not \(url)")
                }
                guard (60...86_400).contains(jwt.jwksRefreshSeconds) else {
                    throw ConfigurationError.invalid("authorization.jwt.jwksRefreshSeconds must be 60...86400")
                }
                if let operatorScope = jwt.operatorScope, operatorScope.isEmpty || operatorScope == jwt.adminScope {
                    throw ConfigurationError.invalid("authorization.jwt.operatorScope must be a scope of its own, not empty and not adminScope")
                }
                guard !jwt.issuer.isEmpty, !jwt.audience.isEmpty, !jwt.subjectClaim.isEmpty else {
                    throw ConfigurationError.invalid("authorization.jwt.issuer, audience and subjectClaim must not be empty")
                }
                guard (0...300).contains(jwt.clockSkewSeconds) else {
                    throw ConfigurationError.invalid("authorization.jwt.clockSkewSeconds must be 0...300")
                }
            }
            if let proxy = trustedProxy {
                guard !proxy.header.isEmpty, !proxy.addresses.isEmpty else {
                    throw ConfigurationError.invalid("authorization.trustedProxy needs a header and at least one address")
                }
            }
            for network in internalDispatchNetworks where IPNetwork(network) == nil {
                throw ConfigurationError.invalid(
                    "authorization.internalDispatchNetworks: \(network) is not an IP address or network (address/prefix)")
            }
        }

        /// Refuses an internal network that holds a proxy: every request through a proxy comes from its address, so
        /// the outside world would dispatch without a credential. `proxies` are the trusted proxies' addresses.
        func checkInternalNetworks(against proxies: [String]) throws {
            for network in internalDispatchNetworks.compactMap(IPNetwork.init) {
                if let proxy = proxies.first(where: { IPNetwork($0).map { network.contains($0) || $0.contains(network) } ?? false }) {
                    throw ConfigurationError.invalid(
                        "authorization.internalDispatchNetworks: \(network.address)/\(network.prefixLength) holds the proxy \(proxy), whose connections carry other clients' requests"
                    )
                }
            }
        }
    }

    /// What a successful authentication hands out.
    public struct Tokens: Codable, Sendable, Equatable {
        /// A PEM P-256 private key that signs issued JWTs. Without it, a key is generated once and kept in the
        /// database (shared by every instance); see the production checklist.
        public var signingKeyPath: String?
        /// `iss` of issued JWTs; defaults to the server's base URL.
        public var issuer: String?
        /// `aud` of issued JWTs, if the relying party wants one.
        public var audience: String?
        /// Lifetime of the issued JWT, in seconds.
        public var tokenLifetimeSeconds: Int
        /// Lifetime of the session (cookie and the session behind the JWT), in seconds.
        public var sessionLifetimeSeconds: Int
        /// Name of the session cookie.
        public var cookieName: String
        /// How recent the authentication behind a session must be, in seconds, for the session to add an
        /// authenticator (a registration request or registration dispatch): a session left open on a shared or
        /// stolen device must not enrol the thief's key.
        public var recentAuthenticationSeconds: Int

        public init(
            signingKeyPath: String? = nil, issuer: String? = nil, audience: String? = nil, tokenLifetimeSeconds: Int = 300,
            sessionLifetimeSeconds: Int = 3600, cookieName: String = "mauth_session", recentAuthenticationSeconds: Int = 300
        ) {
            self.signingKeyPath = signingKeyPath
            self.issuer = issuer
            self.audience = audience
            self.tokenLifetimeSeconds = tokenLifetimeSeconds
            self.sessionLifetimeSeconds = sessionLifetimeSeconds
            self.cookieName = cookieName
            self.recentAuthenticationSeconds = recentAuthenticationSeconds
        }

        package enum CodingKeys: String, CodingKey, CaseIterable {
            case signingKeyPath, issuer, audience, tokenLifetimeSeconds, sessionLifetimeSeconds, cookieName, recentAuthenticationSeconds
        }
        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Tokens()
            self.init(
                signingKeyPath: try c.decodeIfPresent(String.self, forKey: .signingKeyPath),
                issuer: try c.decodeIfPresent(String.self, forKey: .issuer), audience: try c.decodeIfPresent(String.self, forKey: .audience),
                tokenLifetimeSeconds: try c.decodeIfPresent(Int.self, forKey: .tokenLifetimeSeconds) ?? d.tokenLifetimeSeconds,
                sessionLifetimeSeconds: try c.decodeIfPresent(Int.self, forKey: .sessionLifetimeSeconds) ?? d.sessionLifetimeSeconds,
                cookieName: try c.decodeIfPresent(String.self, forKey: .cookieName) ?? d.cookieName,
                recentAuthenticationSeconds: try c.decodeIfPresent(Int.self, forKey: .recentAuthenticationSeconds) ?? d.recentAuthenticationSeconds)
        }

        func validate() throws {
            guard (10...86_400).contains(tokenLifetimeSeconds) else {
                throw ConfigurationError.invalid("tokens.tokenLifetimeSeconds must be 10...86400")
            }
            guard (10...86_400).contains(recentAuthenticationSeconds) else {
                throw ConfigurationError.invalid("tokens.recentAuthenticationSeconds must be 10...86400")
            }
            guard (60...2_592_000).contains(sessionLifetimeSeconds) else {
                throw ConfigurationError.invalid("tokens.sessionLifetimeSeconds must be 60...2592000")
            }
            // A cookie name is an RFC 6265 token: no separators, so it cannot inject attributes.
            let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
            guard !cookieName.isEmpty, cookieName.unicodeScalars.allSatisfy(allowed.contains) else {
                throw ConfigurationError.invalid("tokens.cookieName must be letters, digits, '_', '-' or '.'")
            }
        }
    }

    /// Limits that protect the server from abuse: what one anonymous caller can make it hold, store and compute.
    public struct Limits: Codable, Sendable, Equatable {
        /// Requests per minute one client may make to any route but `/health/…` and `/metrics` (0 turns it off). A
        /// client is its address (``ServerConfiguration/ClientAddress`` says which), IPv6 grouped by ``ipv6PrefixLength``.
        public var requestsPerMinutePerAddress: Int
        /// IPv6 clients share one budget per prefix of this many bits (one subscriber usually has a /64 or more).
        public var ipv6PrefixLength: Int
        /// Unanswered, unexpired UAF requests one username may have at once.
        public var outstandingRequestsPerUsername: Int
        /// Seconds an idle connection is kept open.
        public var idleTimeoutSeconds: Int
        /// Seconds a caller has to send a whole request, from its first byte to the end of its body; then the
        /// connection is closed.
        public var requestDeadlineSeconds: Int
        /// Connections open at once. At the cap a newcomer takes the place of the longest-idle connection of the
        /// address that holds the most; when none is idle it is closed on arrival (the server keeps serving the ones
        /// it has). Lowered at start-up to stay below the process's descriptor limit.
        public var maximumConnections: Int
        /// Connections one client address (IPv6: its prefix) holds at once; past it its newcomer takes the place of
        /// its own longest-idle connection, or is closed on arrival. A trusted proxy is held to the global cap only.
        public var maximumConnectionsPerAddress: Int
        /// Seconds a new connection has, from its accept, to finish its TLS handshake; then it is closed.
        public var handshakeDeadlineSeconds: Int
        /// How long status records are kept after their last change, in seconds.
        public var statusRetentionSeconds: Int
        /// The longest `context` (UTF-8 bytes) a caller without credentials may send to an open endpoint
        /// (`request/authentication`, `dispatch/authentication`): what the server stores for such a caller stays small.
        public var anonymousContextBytes: Int
        /// QR codes drawn at once, off the threads that serve requests; 0 means half the cores (at least one).
        public var qrRenderingsAtOnce: Int
        /// QR codes that may wait for a turn; past that a dispatch that needs one is answered 503 at once.
        public var qrRenderingsWaiting: Int
        /// Dispatches to one dispatch target (push, or a payload encrypted to it) within a minute; more are answered
        /// 429. Each push lands on a person's phone, and each dispatch is an operation the device lists as pending.
        public var dispatchesPerTargetPerMinute: Int
        /// Passkeys one user may hold. Registration options and results past it are refused (409) until she removes
        /// one; with the stored key and credential ID bounded (4,096 and 1,023 bytes),
        /// it bounds what one user makes the server store and read on every sign-in options request.
        public var passkeysPerUser: Int

        public init(
            requestsPerMinutePerAddress: Int = 1200, ipv6PrefixLength: Int = 64, outstandingRequestsPerUsername: Int = 10,
            idleTimeoutSeconds: Int = 30, requestDeadlineSeconds: Int = 15, maximumConnections: Int = 4096,
            statusRetentionSeconds: Int = 600, anonymousContextBytes: Int = 4096,
            qrRenderingsAtOnce: Int = 0, qrRenderingsWaiting: Int = 64, dispatchesPerTargetPerMinute: Int = 10,
            maximumConnectionsPerAddress: Int = 64, handshakeDeadlineSeconds: Int = 10, passkeysPerUser: Int = 32
        ) {
            self.requestsPerMinutePerAddress = requestsPerMinutePerAddress
            self.ipv6PrefixLength = ipv6PrefixLength
            self.outstandingRequestsPerUsername = outstandingRequestsPerUsername
            self.idleTimeoutSeconds = idleTimeoutSeconds
            self.requestDeadlineSeconds = requestDeadlineSeconds
            self.maximumConnections = maximumConnections
            self.statusRetentionSeconds = statusRetentionSeconds
            self.maximumConnectionsPerAddress = maximumConnectionsPerAddress
            self.handshakeDeadlineSeconds = handshakeDeadlineSeconds
            self.anonymousContextBytes = anonymousContextBytes
            self.qrRenderingsAtOnce = qrRenderingsAtOnce
            self.qrRenderingsWaiting = qrRenderingsWaiting
            self.dispatchesPerTargetPerMinute = dispatchesPerTargetPerMinute
            self.passkeysPerUser = passkeysPerUser
        }

        package enum CodingKeys: String, CodingKey, CaseIterable {
            case requestsPerMinutePerAddress, ipv6PrefixLength, outstandingRequestsPerUsername, idleTimeoutSeconds, requestDeadlineSeconds
            case maximumConnections, statusRetentionSeconds, anonymousContextBytes, qrRenderingsAtOnce, qrRenderingsWaiting
            case dispatchesPerTargetPerMinute, maximumConnectionsPerAddress, handshakeDeadlineSeconds, passkeysPerUser
        }
        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Limits()
            self.init(
                requestsPerMinutePerAddress: try c.decodeIfPresent(Int.self, forKey: .requestsPerMinutePerAddress) ?? d.requestsPerMinutePerAddress,
                ipv6PrefixLength: try c.decodeIfPresent(Int.self, forKey: .ipv6PrefixLength) ?? d.ipv6PrefixLength,
                outstandingRequestsPerUsername: try c.decodeIfPresent(Int.self, forKey: .outstandingRequestsPerUsername)
                    ?? d.outstandingRequestsPerUsername,
                idleTimeoutSeconds: try c.decodeIfPresent(Int.self, forKey: .idleTimeoutSeconds) ?? d.idleTimeoutSeconds,
                requestDeadlineSeconds: try c.decodeIfPresent(Int.self, forKey: .requestDeadlineSeconds) ?? d.requestDeadlineSeconds,
                maximumConnections: try c.decodeIfPresent(Int.self, forKey: .maximumConnections) ?? d.maximumConnections,
                statusRetentionSeconds: try c.decodeIfPresent(Int.self, forKey: .statusRetentionSeconds) ?? d.statusRetentionSeconds,
                anonymousContextBytes: try c.decodeIfPresent(Int.self, forKey: .anonymousContextBytes) ?? d.anonymousContextBytes,
                qrRenderingsAtOnce: try c.decodeIfPresent(Int.self, forKey: .qrRenderingsAtOnce) ?? d.qrRenderingsAtOnce,
                qrRenderingsWaiting: try c.decodeIfPresent(Int.self, forKey: .qrRenderingsWaiting) ?? d.qrRenderingsWaiting,
                dispatchesPerTargetPerMinute: try c.decodeIfPresent(Int.self, forKey: .dispatchesPerTargetPerMinute)
                    ?? d.dispatchesPerTargetPerMinute,
                maximumConnectionsPerAddress: try c.decodeIfPresent(Int.self, forKey: .maximumConnectionsPerAddress)
                    ?? d.maximumConnectionsPerAddress,
                handshakeDeadlineSeconds: try c.decodeIfPresent(Int.self, forKey: .handshakeDeadlineSeconds) ?? d.handshakeDeadlineSeconds,
                passkeysPerUser: try c.decodeIfPresent(Int.self, forKey: .passkeysPerUser) ?? d.passkeysPerUser)
        }

        func validate() throws {
            guard requestsPerMinutePerAddress >= 0 else { throw ConfigurationError.invalid("limits.requestsPerMinutePerAddress must be ≥ 0") }
            guard (16...128).contains(ipv6PrefixLength) else { throw ConfigurationError.invalid("limits.ipv6PrefixLength must be 16...128") }
            guard (1...1000).contains(outstandingRequestsPerUsername) else {
                throw ConfigurationError.invalid("limits.outstandingRequestsPerUsername must be 1...1000")
            }
            guard (1...3600).contains(idleTimeoutSeconds) else { throw ConfigurationError.invalid("limits.idleTimeoutSeconds must be 1...3600") }
            guard (1...300).contains(requestDeadlineSeconds) else {
                throw ConfigurationError.invalid("limits.requestDeadlineSeconds must be 1...300")
            }
            guard (1...1_000_000).contains(maximumConnections) else {
                throw ConfigurationError.invalid("limits.maximumConnections must be 1...1000000")
            }
            guard (1...1_000_000).contains(maximumConnectionsPerAddress) else {
                throw ConfigurationError.invalid("limits.maximumConnectionsPerAddress must be 1...1000000")
            }
            guard (1...300).contains(handshakeDeadlineSeconds) else {
                throw ConfigurationError.invalid("limits.handshakeDeadlineSeconds must be 1...300")
            }
            guard (1...1000).contains(passkeysPerUser) else { throw ConfigurationError.invalid("limits.passkeysPerUser must be 1...1000") }
            guard (60...604_800).contains(statusRetentionSeconds) else {
                throw ConfigurationError.invalid("limits.statusRetentionSeconds must be 60...604800")
            }
            guard (512...65_536).contains(anonymousContextBytes) else {
                throw ConfigurationError.invalid("limits.anonymousContextBytes must be 512...65536")
            }
            guard (0...256).contains(qrRenderingsAtOnce) else { throw ConfigurationError.invalid("limits.qrRenderingsAtOnce must be 0...256") }
            guard (0...10_000).contains(qrRenderingsWaiting) else { throw ConfigurationError.invalid("limits.qrRenderingsWaiting must be 0...10000") }
            guard (1...1000).contains(dispatchesPerTargetPerMinute) else {
                throw ConfigurationError.invalid("limits.dispatchesPerTargetPerMinute must be 1...1000")
            }
        }
    }
}
