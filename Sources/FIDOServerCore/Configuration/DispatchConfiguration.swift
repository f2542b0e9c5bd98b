import Foundation

extension ServerConfiguration {
    /// Out-of-band dispatch: dispatch tokens, their payloads and the dispatchers (server-api.md §E.3).
    public struct Dispatch: Codable, Sendable, Equatable {
        /// Seconds a dispatched token can be redeemed (server-api §(f).8 suggests 5 minutes).
        public var tokenLifetimeSeconds: Int
        /// The origin the payloads' `redeem_url` point at (`<origin>/nevisfido/token/redeem/<op>`); nil is this
        /// server's own `https://host:port`. Set it when clients reach the server through a proxy or a public name.
        public var redeemBaseURL: String?
        /// The app link the `link` and `link-png-qr-code` dispatchers hand out, `<linkBaseURL>?dispatchTokenResponse=…`:
        /// the universal link or custom scheme the app handles.
        public var linkBaseURL: String
        /// Pixels per QR module in the PNGs of the QR dispatchers.
        public var qrModuleSize: Int
        /// The accepted difference, in seconds, between a device-signed request's creation time and the server's
        /// clock; request ids are remembered for twice as long, so a replay is refused for as long as it could be
        /// accepted (server-api §C.3 suggests 5 minutes).
        public var deviceSignatureSkewSeconds: Int
        /// Accept a device signature that names no request (no `htm`, `htu` or `bodyHash`): the shape the Nevis SDKs
        /// send (`dispatchTargetId`, `requestId`, `creationTimeInEpochMillis` only), for a bank whose apps in the field
        /// use them. Off by default. The trade-off: such a signature is bound to its device and its request id only, so
        /// one captured on its way (a proxy's log, a compromised TLS terminator) authorizes any other device-signed
        /// call of that device, within the skew, if it arrives before the genuine request. A signature that carries
        /// any of the three members is still held to all of them.
        public var acceptUnboundDeviceSignatures: Bool
        /// The `firebase-cloud-messaging` dispatcher; nil turns push off (dispatching with it answers `dispatcherNotFound`).
        public var firebase: Firebase?

        /// Firebase Cloud Messaging HTTP v1 (server-api §E.3). A real project needs outbound HTTPS to
        /// `oauth2.googleapis.com` and `fcm.googleapis.com`.
        public struct Firebase: Codable, Sendable, Equatable {
            /// The service account's JSON key file (Firebase console, Project settings, Service accounts).
            public var serviceAccountPath: String
            /// Where `v1/projects/{project}/messages:send` lives.
            public var endpointBaseURL: String
            /// The OAuth 2.0 token endpoint; nil is the key file's `token_uri` (Google's by default).
            public var tokenURL: String?
            /// Whether an `UNREGISTERED` answer removes the target's push token (Nevis's `remove-unregistered-clients`).
            public var removeUnregisteredClients: Bool
            /// Sends with `validate_only`: FCM checks the message but delivers nothing.
            public var dryRun: Bool
            /// PEM certificates trusted besides the system's roots (a TLS-inspecting proxy, or a local stand-in).
            public var trustedCertificatesPath: String?

            public init(
                serviceAccountPath: String, endpointBaseURL: String = "https://fcm.googleapis.com", tokenURL: String? = nil,
                removeUnregisteredClients: Bool = true, dryRun: Bool = false, trustedCertificatesPath: String? = nil
            ) {
                self.serviceAccountPath = serviceAccountPath
                self.endpointBaseURL = endpointBaseURL
                self.tokenURL = tokenURL
                self.removeUnregisteredClients = removeUnregisteredClients
                self.dryRun = dryRun
                self.trustedCertificatesPath = trustedCertificatesPath
            }

            package enum CodingKeys: String, CodingKey, CaseIterable {
                case serviceAccountPath, endpointBaseURL, tokenURL, removeUnregisteredClients, dryRun, trustedCertificatesPath
            }
            public init(from decoder: any Decoder) throws {
                try decoder.refuseUnknownKeys(CodingKeys.self)
                let c = try decoder.container(keyedBy: CodingKeys.self)
                self.init(
                    serviceAccountPath: try c.decode(String.self, forKey: .serviceAccountPath),
                    endpointBaseURL: try c.decodeIfPresent(String.self, forKey: .endpointBaseURL) ?? "https://fcm.googleapis.com",
                    tokenURL: try c.decodeIfPresent(String.self, forKey: .tokenURL),
                    removeUnregisteredClients: try c.decodeIfPresent(Bool.self, forKey: .removeUnregisteredClients) ?? true,
                    dryRun: try c.decodeIfPresent(Bool.self, forKey: .dryRun) ?? false,
                    trustedCertificatesPath: try c.decodeIfPresent(String.self, forKey: .trustedCertificatesPath))
            }

            func validate() throws {
                // The access token and every payload travel to these URLs: https only.
                for (name, value) in [("endpointBaseURL", endpointBaseURL), ("tokenURL", tokenURL ?? "https://oauth2.googleapis.com/token")] {
                    guard let url = URL(string: value), url.scheme == "https", url.host != nil else {
                        throw ConfigurationError.invalid("dispatch.firebase.\(name) must be an https URL")
                    }
                }
                _ = try FirebaseServiceAccount.load(path: serviceAccountPath)
            }
        }

        public init(
            tokenLifetimeSeconds: Int = 300, redeemBaseURL: String? = nil, linkBaseURL: String = "mauth://oob",
            qrModuleSize: Int = 6, deviceSignatureSkewSeconds: Int = 300, acceptUnboundDeviceSignatures: Bool = false, firebase: Firebase? = nil
        ) {
            self.tokenLifetimeSeconds = tokenLifetimeSeconds
            self.redeemBaseURL = redeemBaseURL
            self.linkBaseURL = linkBaseURL
            self.qrModuleSize = qrModuleSize
            self.deviceSignatureSkewSeconds = deviceSignatureSkewSeconds
            self.acceptUnboundDeviceSignatures = acceptUnboundDeviceSignatures
            self.firebase = firebase
        }

        package enum CodingKeys: String, CodingKey, CaseIterable {
            case tokenLifetimeSeconds, redeemBaseURL, linkBaseURL, qrModuleSize, deviceSignatureSkewSeconds, acceptUnboundDeviceSignatures, firebase
        }
        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Dispatch()
            self.init(
                tokenLifetimeSeconds: try c.decodeIfPresent(Int.self, forKey: .tokenLifetimeSeconds) ?? d.tokenLifetimeSeconds,
                redeemBaseURL: try c.decodeIfPresent(String.self, forKey: .redeemBaseURL),
                linkBaseURL: try c.decodeIfPresent(String.self, forKey: .linkBaseURL) ?? d.linkBaseURL,
                qrModuleSize: try c.decodeIfPresent(Int.self, forKey: .qrModuleSize) ?? d.qrModuleSize,
                deviceSignatureSkewSeconds: try c.decodeIfPresent(Int.self, forKey: .deviceSignatureSkewSeconds) ?? d.deviceSignatureSkewSeconds,
                acceptUnboundDeviceSignatures: try c.decodeIfPresent(Bool.self, forKey: .acceptUnboundDeviceSignatures)
                    ?? d.acceptUnboundDeviceSignatures,
                firebase: try c.decodeIfPresent(Firebase.self, forKey: .firebase))
        }

        func validate() throws {
            guard (10...86_400).contains(tokenLifetimeSeconds) else {
                throw ConfigurationError.invalid("dispatch.tokenLifetimeSeconds must be 10...86400")
            }
            if let redeemBaseURL {
                // Devices send tokens to this URL: it must be https (the SDK refuses anything else, too).
                guard let url = URL(string: redeemBaseURL), url.scheme == "https", url.host != nil else {
                    throw ConfigurationError.invalid("dispatch.redeemBaseURL must be an https URL")
                }
            }
            guard URL(string: linkBaseURL)?.scheme != nil else { throw ConfigurationError.invalid("dispatch.linkBaseURL must be a URL") }
            guard (1...32).contains(qrModuleSize) else { throw ConfigurationError.invalid("dispatch.qrModuleSize must be 1...32") }
            guard (10...3600).contains(deviceSignatureSkewSeconds) else {
                throw ConfigurationError.invalid("dispatch.deviceSignatureSkewSeconds must be 10...3600")
            }
            try firebase?.validate()
        }
    }
}
