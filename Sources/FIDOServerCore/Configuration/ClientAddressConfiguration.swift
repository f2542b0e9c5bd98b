extension ServerConfiguration {
    /// Who the client of a request is, for the rate limit and the logs. By default it is the TCP peer. Behind a
    /// TLS-terminating proxy every request comes from the proxy, so every client would share one budget: list the
    /// proxy's addresses, and the client's address is read from `header` (the proxy appends the peer it saw), but only
    /// on connections from those addresses. From anyone else the header is ignored, so a caller cannot pick the
    /// budget it is counted against.
    public struct ClientAddress: Codable, Sendable, Equatable {
        /// The header a trusted proxy appends the client's address to (a comma-separated list, the nearest hop last).
        public var header: String
        /// The proxies' addresses or networks (`10.0.0.7`, `10.1.0.0/16`, `fd00::/8`); empty means none is trusted.
        public var trustedProxies: [String]

        public init(header: String = "X-Forwarded-For", trustedProxies: [String] = []) {
            self.header = header
            self.trustedProxies = trustedProxies
        }

        package enum CodingKeys: String, CodingKey, CaseIterable { case header, trustedProxies }
        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = ClientAddress()
            self.init(
                header: try c.decodeIfPresent(String.self, forKey: .header) ?? d.header,
                trustedProxies: try c.decodeIfPresent([String].self, forKey: .trustedProxies) ?? d.trustedProxies)
        }

        func validate() throws {
            guard !header.isEmpty, header.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }) else {
                throw ConfigurationError.invalid("clientAddress.header must be a header name")
            }
            for proxy in trustedProxies where IPNetwork(proxy) == nil {
                throw ConfigurationError.invalid("clientAddress.trustedProxies: \(proxy) is not an IP address or network (address/prefix)")
            }
        }
    }
}
