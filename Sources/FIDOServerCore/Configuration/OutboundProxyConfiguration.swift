import AsyncHTTPClient
import Foundation

extension ServerConfiguration {
    /// The HTTP proxy the server's own calls out go through: Firebase (FCM and its token endpoint), the Metadata
    /// Service's BLOB and the relying party's JWKS. An `https://` destination is tunnelled with `CONNECT`, so TLS and
    /// its certificate checks stay end to end: the proxy sees the host name, never the content.
    public struct OutboundProxy: Codable, Sendable, Equatable {
        /// `http://[user:password@]host:port`: the user and password (`${env:NAME}` keeps them out of the file)
        /// go to the proxy as Basic authorization.
        public var url: String
        /// Hosts reached without the proxy: `host` (it and its subdomains), `.domain` (the same), an IP address, or
        /// `*` (every host), as curl's `NO_PROXY` reads them. Compared without case.
        public var noProxy: [String]

        public init(url: String, noProxy: [String] = []) {
            self.url = url
            self.noProxy = noProxy
        }

        package enum CodingKeys: String, CodingKey, CaseIterable { case url, noProxy }

        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(url: try c.decode(String.self, forKey: .url), noProxy: try c.decodeIfPresent([String].self, forKey: .noProxy) ?? [])
        }

        /// The proxy as `HTTPS_PROXY` and `NO_PROXY` (or their lower-case forms) describe it, nil without one.
        static func fromEnvironment(_ environment: [String: String]) -> OutboundProxy? {
            guard let url = environment["MAUTH_OUTBOUND_PROXY"] ?? environment["HTTPS_PROXY"] ?? environment["https_proxy"], !url.isEmpty else {
                return nil
            }
            let exempt = environment["MAUTH_NO_PROXY"] ?? environment["NO_PROXY"] ?? environment["no_proxy"] ?? ""
            return OutboundProxy(
                url: url, noProxy: exempt.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        }

        /// The proxy's address and credentials.
        struct Endpoint {
            var host: String
            var port: Int
            var username: String?
            var password: String?
        }

        func endpoint() throws -> Endpoint {
            guard let components = URLComponents(string: url), components.scheme?.lowercased() == "http", let host = components.host,
                !host.isEmpty, components.path.isEmpty || components.path == "/", components.query == nil
            else {
                // The password may be in the URL: the message names the form, not the value.
                throw ConfigurationError.invalid(
                    "outboundProxy.url must be http://[user:password@]host:port (an HTTP proxy; https:// destinations are tunnelled through it)")
            }
            let port = components.port ?? 80
            guard (1...65535).contains(port) else {
                throw ConfigurationError.invalid("outboundProxy.url: the port must be 1...65535")
            }
            return Endpoint(
                host: host, port: port, username: components.user?.removingPercentEncoding, password: components.password?.removingPercentEncoding)
        }

        func validate() throws {
            _ = try endpoint()
            if let bad = noProxy.first(where: { $0.isEmpty || $0.contains(where: { $0 == "/" || $0.isWhitespace }) }) {
                throw ConfigurationError.invalid("outboundProxy.noProxy: \"\(bad)\" is not a host, a .domain or *")
            }
        }

        /// Whether `host` is reached without the proxy.
        func exempts(_ host: String) -> Bool {
            let host = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            return noProxy.contains { entry in
                let entry = entry.lowercased()
                if entry == "*" { return true }
                let domain = entry.hasPrefix(".") ? String(entry.dropFirst()) : entry
                return host == domain || host.hasSuffix("." + domain)
            }
        }

        /// The client setting for a call to `host`: nil when `host` is exempt.
        package func proxy(for host: String) -> HTTPClient.Configuration.Proxy? {
            guard !exempts(host), let endpoint = try? endpoint() else { return nil }
            let authorization = endpoint.username.map { HTTPClient.Authorization.basic(username: $0, password: endpoint.password ?? "") }
            return .server(host: endpoint.host, port: endpoint.port, authorization: authorization)
        }
    }
}
