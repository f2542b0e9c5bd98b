import Foundation
import Primitives

/// The values a relying party verifies against, passed in by the caller (never global).
public struct RelyingPartyConfiguration: Sendable {
    /// The appID every FinalChallengeParams must carry.
    public var appID: String
    /// Trusted facet IDs for the supported version. A `*` after `android:apk-key-hash:` or `ios:bundle-id:`
    /// accepts any facet of that platform (development only, as in nevisFIDO).
    public var trustedFacetIDs: [String]
    /// Protocol versions accepted.
    public var supportedVersions: Set<Version>
    /// Algorithms the server accepts at all (intersected with what each authenticator's metadata lists).
    public var acceptedAlgorithms: Set<SignatureAlgorithm>
    /// What to do when a sign counter does not increase.
    public var counterPolicy: CounterPolicy
    /// Which authenticators may send a sign counter of 0, which means "no counter" (uaf-spec §2.4).
    public var zeroCounters: ZeroCounterRule = .any
    /// Extension ids this relying party understands: an extension marked `fail_if_unknown` with another id, in
    /// the header or on an assertion, refuses the response (uaf-spec §1.1).
    public var understoodExtensions: Set<String> = []
    /// Shortest authenticator nonce accepted (uaf-spec §5: at least 8 bytes).
    public var minimumNonceLength: Int
    /// The TLS channel the server itself terminates, or nil when it cannot know what the client saw (behind a
    /// TLS-terminating proxy): then channel binding is not checked.
    public var channelBinding: ExpectedChannelBinding?

    public enum CounterPolicy: Sendable {
        /// Reject a non-increasing, non-zero counter (clone detection).
        case reject
        /// Accept it (some software authenticators do not keep counters).
        case ignore
    }

    /// Which authenticators may omit the sign counter. Without a counter a cloned key goes unnoticed, so an
    /// operator whose authenticators all count can require it of every one except those listed.
    public enum ZeroCounterRule: Sendable, Hashable {
        /// Any authenticator (the spec's reading of 0).
        case any
        /// Only these AAIDs (compared case-insensitively); every other authenticator must count.
        case onlyFor(Set<String>)

        func allows(aaid: String) -> Bool {
            switch self {
            case .any: return true
            case .onlyFor(let aaids): return aaids.contains { AAID.equal($0, aaid) }
            }
        }
    }

    public init(
        appID: String, trustedFacetIDs: [String], supportedVersions: Set<Version> = [.uaf11],
        acceptedAlgorithms: Set<SignatureAlgorithm> = SignatureSuite.supportedAlgorithms,
        counterPolicy: CounterPolicy = .reject, minimumNonceLength: Int = 8, channelBinding: ExpectedChannelBinding? = nil
    ) {
        self.appID = appID
        self.trustedFacetIDs = trustedFacetIDs
        self.supportedVersions = supportedVersions
        self.acceptedAlgorithms = acceptedAlgorithms
        self.counterPolicy = counterPolicy
        self.minimumNonceLength = minimumNonceLength
        self.channelBinding = channelBinding
    }

    func isTrusted(facetID: String) -> Bool {
        trustedFacetIDs.contains { trusted in
            if trusted == facetID { return true }
            for platform in ["android:apk-key-hash:", "ios:bundle-id:"] where trusted == platform + "*" {
                return facetID.hasPrefix(platform) && facetID.count > platform.count
            }
            return false
        }
    }
}

/// What the server observed of its own TLS channel (RFC 5929), for the ChannelBinding check (uaf-spec §1.6).
///
/// Checked: `serverEndPoint` (tls-server-end-point: the hash of the server's certificate) and
/// `tlsServerCertificate` (the certificate itself); a client that sends either must send the right value, or the
/// response is refused with 1490. Absent fields are accepted: UAF makes them optional and many clients cannot read
/// them. Not checked: `tlsUnique` (undefined for TLS 1.3, which our server prefers) and `cid_pubkey` (token
/// binding, which no current platform offers).
///
/// After the server's certificate is replaced, a client that connected before may still report the old one:
/// `previous` lists the certificates accepted for a while beside the current one. Both fields a client reports
/// must describe the same certificate.
public struct ExpectedChannelBinding: Sendable, Hashable {
    /// base64url of the certificate's hash (the hash of its signature algorithm; SHA-256 for MD5 or SHA-1).
    public var serverEndPoint: String
    /// base64url of the certificate's DER.
    public var tlsServerCertificate: String
    /// Certificates the server presented until recently, each accepted as this one is.
    public var previous: [ExpectedChannelBinding]

    public init(serverEndPoint: String, tlsServerCertificate: String, previous: [ExpectedChannelBinding] = []) {
        self.serverEndPoint = serverEndPoint
        self.tlsServerCertificate = tlsServerCertificate
        self.previous = previous
    }

    func check(_ binding: ChannelBinding?) throws(UAFVerificationError) {
        guard let binding else { return }
        guard describes(binding) || previous.contains(where: { $0.describes(binding) }) else {
            throw UAFVerificationError.channelBindingMismatch
        }
    }

    /// Whether every field the client reported names this certificate (absent fields name any).
    private func describes(_ binding: ChannelBinding) -> Bool {
        if let endPoint = binding.serverEndPoint, endPoint != serverEndPoint { return false }
        if let certificate = binding.tlsServerCertificate, certificate != tlsServerCertificate { return false }
        return true
    }
}

/// Checks shared by registration and authentication (uaf-spec §5, "Both operations").
enum CommonChecks {
    /// Steps 1 and 3: version, operation and FinalChallengeParams; also that there is an assertion at all.
    /// Returns the FinalChallengeHash every assertion must carry (step 6).
    static func checkHeaderAndFinalChallenge(
        header: OperationHeader, expectedOp: UAFOperation, fcParams: String, assertionCount: Int,
        issuedChallenge: String, configuration: RelyingPartyConfiguration
    ) throws(UAFVerificationError) -> [UInt8] {
        // Step 1. The element's upv must be one this server speaks.
        guard configuration.supportedVersions.contains(header.upv) else { throw UAFVerificationError.unsupportedVersion(header.upv) }
        guard header.op == expectedOp else { throw UAFVerificationError.operationMismatch }
        if let appID = header.appID, appID.utf8.count > OperationHeader.maximumAppIDLength {
            throw UAFVerificationError.malformedHeader("appID is longer than \(OperationHeader.maximumAppIDLength) characters")
        }
        try checkExtensions(header.exts, configuration: configuration)
        // Step 3. Decode fcParams and check each member. An empty challenge is malformed content (1498), as the
        // conformance tool expects, not a challenge this server issued and lost (1491).
        guard let params = FinalChallengeParams.decode(fcParams: fcParams), !params.challenge.isEmpty else {
            throw UAFVerificationError.malformedFinalChallengeParams
        }
        // An exact match is deliberate: appIDs are URLs and any normalisation would open look-alike attacks.
        guard params.appID == configuration.appID else { throw UAFVerificationError.appIDMismatch(params.appID) }
        guard configuration.isTrusted(facetID: params.facetID) else { throw UAFVerificationError.untrustedFacetID(params.facetID) }
        // Step 3, channel binding: what the client saw of the TLS channel must be what this server presented.
        try configuration.channelBinding?.check(params.channelBinding)
        // Step 3, challenge: this exact issued value (the caller has already consumed it once-only).
        guard params.challenge == issuedChallenge else { throw UAFVerificationError.challengeMismatch }
        guard assertionCount > 0 else { throw UAFVerificationError.noAssertions }
        return FinalChallengeParams.hash(fcParams: fcParams)
    }

    /// An extension marked `fail_if_unknown` must be understood, or the message is refused (uaf-spec §1.1): the
    /// sender said that ignoring it would change what the message means.
    static func checkExtensions(_ extensions: [Extension]?, configuration: RelyingPartyConfiguration) throws(UAFVerificationError) {
        for ext in extensions ?? [] where ext.failIfUnknown && !configuration.understoodExtensions.contains(ext.id) {
            throw UAFVerificationError.unknownRequiredExtension(ext.id)
        }
    }

    /// Steps 5 and 6 for one assertion: AAID metadata, algorithm, version, and the final challenge hash.
    static func checkAuthenticator(
        aaid: String, algorithm: SignatureAlgorithm, version: UInt16, finalChallengeHash: [UInt8],
        expectedHash: [UInt8], metadata: UAFMetadata, configuration: RelyingPartyConfiguration
    ) throws(UAFVerificationError) -> UAFMetadata.Entry {
        // Step 5. AAID known in metadata.
        guard let entry = metadata.entry(for: aaid) else { throw UAFVerificationError.unknownAAID(aaid) }
        let statement = entry.statement
        // Step 5. The algorithm must be listed in the metadata and accepted by this server.
        guard entry.algorithms.contains(algorithm), configuration.acceptedAlgorithms.contains(algorithm),
            SignatureSuite.supportedAlgorithms.contains(algorithm)
        else {
            throw UAFVerificationError.algorithmNotAllowed(algorithm)
        }
        // Step 5. authenticatorVersion >= metadata.authenticatorVersion.
        guard version >= statement.authenticatorVersion else {
            throw UAFVerificationError.authenticatorVersionTooLow(found: version, minimum: statement.authenticatorVersion)
        }
        // Step 6. FinalChallengeHash == SHA-256(fcParams as received).
        guard finalChallengeHash == expectedHash else { throw UAFVerificationError.finalChallengeHashMismatch }
        return entry
    }

    /// Step 4: only UAFV1TLV is understood; a base64url-decodable assertion is required.
    static func assertionBytes(scheme: String, assertion: String) throws(UAFVerificationError) -> [UInt8] {
        guard scheme == AssertionScheme.uafV1TLV else { throw UAFVerificationError.unsupportedAssertionScheme(scheme) }
        guard let bytes = Base64URL.decode(assertion) else {
            throw UAFVerificationError.malformedAssertion(TLVError(.invalidValue(tag: .regAssertion, detail: "not base64url")))
        }
        return Array(bytes)
    }
}
