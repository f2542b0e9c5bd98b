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

        public init(tokenLifetimeSeconds: Int = 300, redeemBaseURL: String? = nil, linkBaseURL: String = "mauth://oob",
                    qrModuleSize: Int = 6, deviceSignatureSkewSeconds: Int = 300) {
            self.tokenLifetimeSeconds = tokenLifetimeSeconds; self.redeemBaseURL = redeemBaseURL; self.linkBaseURL = linkBaseURL
            self.qrModuleSize = qrModuleSize; self.deviceSignatureSkewSeconds = deviceSignatureSkewSeconds
        }

        enum CodingKeys: String, CodingKey { case tokenLifetimeSeconds, redeemBaseURL, linkBaseURL, qrModuleSize, deviceSignatureSkewSeconds }
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Dispatch()
            self.init(tokenLifetimeSeconds: try c.decodeIfPresent(Int.self, forKey: .tokenLifetimeSeconds) ?? d.tokenLifetimeSeconds,
                      redeemBaseURL: try c.decodeIfPresent(String.self, forKey: .redeemBaseURL),
                      linkBaseURL: try c.decodeIfPresent(String.self, forKey: .linkBaseURL) ?? d.linkBaseURL,
                      qrModuleSize: try c.decodeIfPresent(Int.self, forKey: .qrModuleSize) ?? d.qrModuleSize,
                      deviceSignatureSkewSeconds: try c.decodeIfPresent(Int.self, forKey: .deviceSignatureSkewSeconds) ?? d.deviceSignatureSkewSeconds)
        }

        func validate() throws {
            guard (10...86_400).contains(tokenLifetimeSeconds) else { throw ConfigurationError.invalid("dispatch.tokenLifetimeSeconds must be 10...86400") }
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
        }
    }
}
