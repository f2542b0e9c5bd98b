import Foundation

extension ServerConfiguration {
    /// Where the FIDO Metadata Service BLOB comes from (MDS3 §3.2: a JWT whose payload lists metadata entries with
    /// their statements and status reports, signed by a key whose `x5c` chain leads to the service's root). Its UAF
    /// statements join the local ones (`metadataPath`, `metadataJSON` or the Nevis default; a local statement wins
    /// for the same AAID), and its status reports refuse revoked and compromised authenticators (1493).
    public struct MetadataService: Codable, Sendable, Equatable {
        /// A file path, or an `https://` URL, of the BLOB.
        public var blob: String
        /// A PEM file of the root certificate(s) the BLOB's signing chain must lead to (FIDO's MDS3 root for the
        /// public service). Required: a BLOB is never trusted for its own certificates.
        public var rootCertificatesPath: String
        /// Refuse a BLOB whose `nextUpdate` day is over, and refuse to start without a current BLOB: at start the
        /// server then does not start, on a reload the BLOB in force stays. Off by default: a late BLOB still carries
        /// every revocation it had, and without any BLOB the server starts on its local metadata and says so on
        /// `/health/ready`.
        public var requireCurrent: Bool
        /// How often, in seconds, a URL is fetched again (also on SIGHUP, and hourly once `nextUpdate` has come
        /// without a newer BLOB). A file is re-read when it changes and on SIGHUP.
        public var refreshSeconds: Int
        /// PEM certificates trusted for the HTTPS download besides the system's roots (a proxy, a local mirror).
        /// The BLOB's own signature is checked against `rootCertificatesPath` whatever the transport.
        public var trustedCertificatesPath: String?
        /// A file where the last BLOB installed from the URL is kept (written whole, then renamed over the old one):
        /// at start it is installed first, verified like any BLOB, so an outage of the service at start costs nothing
        /// but freshness. None by default.
        public var cachePath: String?
        /// Certificate revocation lists (PEM `X509 CRL` blocks, or one DER list) checked against every certificate of
        /// the BLOB's signing chain, read at start: a BLOB signed by a revoked certificate is refused like one under
        /// another root. The chain's distribution points are not fetched. None by default.
        public var revocationListsPath: String?

        public init(
            blob: String, rootCertificatesPath: String, requireCurrent: Bool = false, refreshSeconds: Int = 86400,
            trustedCertificatesPath: String? = nil, cachePath: String? = nil, revocationListsPath: String? = nil
        ) {
            self.blob = blob
            self.rootCertificatesPath = rootCertificatesPath
            self.requireCurrent = requireCurrent
            self.refreshSeconds = refreshSeconds
            self.trustedCertificatesPath = trustedCertificatesPath
            self.cachePath = cachePath
            self.revocationListsPath = revocationListsPath
        }

        /// The BLOB's URL when `blob` names one.
        public var url: URL? { blob.hasPrefix("https://") ? URL(string: blob) : nil }

        package enum CodingKeys: String, CodingKey, CaseIterable {
            case blob, rootCertificatesPath, requireCurrent, refreshSeconds, trustedCertificatesPath, cachePath, revocationListsPath
        }
        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let blob = try c.decode(String.self, forKey: .blob)
            let root = try c.decode(String.self, forKey: .rootCertificatesPath)
            let d = MetadataService(blob: blob, rootCertificatesPath: root)
            self.init(
                blob: blob, rootCertificatesPath: root,
                requireCurrent: try c.decodeIfPresent(Bool.self, forKey: .requireCurrent) ?? d.requireCurrent,
                refreshSeconds: try c.decodeIfPresent(Int.self, forKey: .refreshSeconds) ?? d.refreshSeconds,
                trustedCertificatesPath: try c.decodeIfPresent(String.self, forKey: .trustedCertificatesPath),
                cachePath: try c.decodeIfPresent(String.self, forKey: .cachePath),
                revocationListsPath: try c.decodeIfPresent(String.self, forKey: .revocationListsPath))
        }

        func validate() throws {
            // A plain-HTTP URL would let anyone on the path withhold a revocation by serving an older BLOB's bytes late.
            if blob.contains("://"), url == nil {
                throw ConfigurationError.invalid("metadataService.blob must be a file path or an https:// URL, not \(blob)")
            }
            if cachePath != nil, url == nil {
                throw ConfigurationError.invalid("metadataService.cachePath needs an https:// blob (a file is its own cache)")
            }
            guard (60...7 * 86400).contains(refreshSeconds) else {
                throw ConfigurationError.invalid("metadataService.refreshSeconds must be 60...604800")
            }
        }
    }
}
