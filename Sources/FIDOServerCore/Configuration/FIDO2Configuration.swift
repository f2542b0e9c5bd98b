import FIDOAttestation
import Foundation

extension ServerConfiguration {
    /// Passkeys (FIDO2 / WebAuthn) beside UAF: nevisFIDO's FIDO2 API under `/nevisfido/fido2/`. Off unless the
    /// `fido2` section is present; then `rpId` and `origins` are required and everything else has a default a bank
    /// can keep.
    public struct FIDO2: Codable, Sendable, Equatable {
        /// The relying party ID: a domain (no scheme, no port) that every origin is, or ends with after a dot.
        /// Passkeys are bound to it for ever: changing it orphans every passkey registered under the old one.
        public var rpId: String
        /// The name browsers show while a passkey is created (`rp.name`); the RP ID when absent.
        public var rpName: String?
        /// The origins (`scheme://host[:port]`) whose pages may use the passkeys, and native apps' origins
        /// (`android:apk-key-hash:…`). Only `https://` origins, but `http://localhost` under development mode.
        public var origins: [String]
        /// Origins of other domains that share this RP ID (WebAuthn §5.11): accepted like `origins` and served at
        /// `/.well-known/webauthn`, which browsers fetch from `https://<rpId>`.
        public var relatedOrigins: [String]
        /// The least user verification a ceremony gets (`required`, `preferred`, `discouraged`): a request may
        /// ask for more, never for less.
        public var userVerification: String
        /// Whether a passkey must be discoverable (`required`, the default, so that sign-in without a username
        /// works), `preferred` or `discouraged`: what registration options ask for when the request says nothing.
        public var residentKey: String
        /// The algorithms a new passkey may use, in the order offered (`ES256`, `EdDSA`, `ES384`, `ES512`, `RS256`, `RS384`,
        /// `RS512`, and the post-quantum `ML-DSA-65`, `ML-DSA-87`, offered only when listed).
        public var algorithms: [String]
        /// How long a ceremony's challenge lives, in seconds (the browser's `timeout`).
        public var timeoutSeconds: Int
        /// What a registration's attestation must show: `passkeys` (any authenticator the Metadata Service does not
        /// refuse, attested or not), `conformance` (`none` and self accepted, a presented chain only when it reaches a
        /// trusted root, with metadata for the model it names: what the FIDO2 conformance tool expects) or
        /// `enterprise` (attestation that chains to a trusted root, from the AAGUIDs in `allowedAAGUIDs` when it is set).
        public var attestationPolicy: String
        /// Under `enterprise`: the authenticator models (AAGUIDs, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`) allowed.
        public var allowedAAGUIDs: [String]?
        /// PEM roots that attestation chains may end at, besides the Metadata Service's roots for each model.
        public var attestationRootsPath: String?
        /// Certificate revocation lists for attestation chains (PEM `X509 CRL` blocks, or one DER list), read at
        /// start: a chain with a certificate its issuer's list revokes is refused under every policy. Distribution
        /// points named in certificates are not fetched.
        public var attestationRevocationListsPath: String?
        /// What sign-in options list in `allowCredentials` for a username typed by a caller without credentials for
        /// her (a caller with them always gets her list):
        /// - `list` (the default, as every peer does): her credentials, so the browser offers only her passkeys and
        ///   a security key that is not discoverable works; a username without passkeys gets an empty list, which
        ///   tells that caller she has none (WebAuthn §14.6.2).
        /// - `listWithDecoys`: the same, but a username without passkeys (unknown, or without any) gets one or two
        ///   decoy credential IDs of the usual shape, the same on every call and every instance (a keyed hash of the
        ///   username under a secret the instances share), from the same statements: the answer does not tell.
        /// - `authorizedCallers`: nothing to anyone without credentials for her (discoverable passkeys only).
        public var allowCredentials: String
        static let allowCredentialsModes = ["list", "listWithDecoys", "authorizedCallers"]
        /// The bank's apps that share the site's passkeys: the server serves the files that associate them with the
        /// domain (`/.well-known/apple-app-site-association`, `/.well-known/assetlinks.json`), and accepts each
        /// Android app's origin (`android:apk-key-hash:<digest>`) without listing it in `origins`. An iOS app's
        /// origin is `https://<rpId>`, which `origins` lists.
        public var apps: Apps?
        /// WebAuthn Level 3 `hints` (`security-key`, `client-device`, `hybrid`), most preferred first, that both
        /// ceremonies' options carry when the request names none: the browser shows that kind of authenticator first
        /// (a bank whose staff use issued keys sets `["security-key"]`). Empty by default. A hint is a preference for
        /// the browser's UI, never a check: the attestation policy decides what is accepted.
        public var hints: [String]
        /// The attestation conveyance registration options carry when the request names none (`none`, `indirect`,
        /// `direct`, `enterprise`); the policy's when absent (`none` under `passkeys`, `direct` otherwise). `enterprise`
        /// policy, which requires trusted attestation, does not take `none` or `indirect`: they strip the chain it demands.
        /// `enterprise` asks for enterprise attestation: an identifying chain that browsers give only to an RP ID the
        /// authenticator or the managed browser is configured to give it to.
        public var attestationConveyance: String?

        /// CTAP 2.1's credential protection, asked for in registration options (`credentialProtectionPolicy`,
        /// `enforceCredentialProtectionPolicy`, nevisFIDO's extension inputs); nil asks for nothing.
        public var credentialProtection: CredentialProtection?
        /// WebAuthn's `largeBlob` at registration (`preferred` or `required`): the passkey gets storage the page can
        /// write and read through the browser; nil asks for nothing. The server never sees or stores the blob.
        public var largeBlob: String?
        /// Whether registration options ask for WebAuthn's `prf` extension (`prf: {}`), so the page learns whether the
        /// passkey can derive secrets; the page brings its own salts at sign-in, and the outputs stay in the browser.
        public var prf: Bool

        /// A file of passkey providers' names by AAGUID, in the format of the community list
        /// passkeydeveloper/passkey-authenticator-aaguids (`{"<aaguid>": {"name": …}}`), read at start: its entries
        /// add to or replace the list bundled with the server. The user's list of her passkeys shows the names.
        public var providerNamesPath: String?
        /// Whether a user may remove her last way to sign in (her last passkey when she holds no UAF key) herself.
        /// `false` by default: she would lock herself out, and getting back in is the bank's support's work. An
        /// operator's removal (`mauth admin`) is never refused.
        public var allowRemovingLastCredential: Bool

        /// ``credentialProtection``.
        public struct CredentialProtection: Codable, Sendable, Equatable {
            /// `userVerificationOptional`, `userVerificationOptionalWithCredentialIDList` or `userVerificationRequired`.
            public var policy: String
            /// Whether a registration whose authenticator does not report applying at least `policy` is refused
            /// (nevisFIDO's `enforceCredentialProtectionPolicy`, which the options also pass to the browser). Synced
            /// passkeys report no credential protection, so enforcing turns them away: for security keys.
            public var enforce: Bool
            public init(policy: String, enforce: Bool = false) {
                self.policy = policy
                self.enforce = enforce
            }
            enum CodingKeys: String, CodingKey, CaseIterable { case policy, enforce }
            public init(from decoder: any Decoder) throws {
                try decoder.refuseUnknownKeys(CodingKeys.self)
                let c = try decoder.container(keyedBy: CodingKeys.self)
                self.init(policy: try c.decode(String.self, forKey: .policy), enforce: try c.decodeIfPresent(Bool.self, forKey: .enforce) ?? false)
            }
            /// The policies in the order of the `credProtect` levels they are (1, 2, 3).
            package static let policies = ["userVerificationOptional", "userVerificationOptionalWithCredentialIDList", "userVerificationRequired"]
            /// `policy`'s `credProtect` level.
            package var level: Int { (Self.policies.firstIndex(of: policy) ?? 0) + 1 }
        }

        /// The hints WebAuthn Level 3 defines (§5.8.7), the values ``hints`` and a request's `hints` may hold.
        package static let knownHints = ["security-key", "client-device", "hybrid"]
        static let conveyances = ["none", "indirect", "direct", "enterprise"]

        /// The apps of ``apps``, each platform's list possibly empty.
        public struct Apps: Codable, Sendable, Equatable {
            public var apple: [AppleApp]
            public var android: [AndroidApp]

            public init(apple: [AppleApp] = [], android: [AndroidApp] = []) {
                self.apple = apple
                self.android = android
            }

            enum CodingKeys: String, CodingKey, CaseIterable { case apple, android }

            public init(from decoder: any Decoder) throws {
                try decoder.refuseUnknownKeys(CodingKeys.self)
                let c = try decoder.container(keyedBy: CodingKeys.self)
                self.init(
                    apple: try c.decodeIfPresent([AppleApp].self, forKey: .apple) ?? [],
                    android: try c.decodeIfPresent([AndroidApp].self, forKey: .android) ?? [])
            }

            /// The origin each Android app's passkeys carry: `android:apk-key-hash:` and the signing certificate's
            /// SHA-256, base64url without padding (what Credential Manager writes in the client data).
            public var androidOrigins: [String] { android.flatMap { app in app.certificateSha256Digests.map { "android:apk-key-hash:\($0)" } } }

            func validate() throws {
                guard !apple.isEmpty || !android.isEmpty else { throw ConfigurationError.invalid("fido2.apps names no app: leave it out instead") }
                for (index, app) in apple.enumerated() { try app.validate(at: "fido2.apps.apple[\(index)]") }
                for (index, app) in android.enumerated() { try app.validate(at: "fido2.apps.android[\(index)]") }
                guard Set(apple.map(\.appID)).count == apple.count else { throw ConfigurationError.invalid("fido2.apps.apple names an app twice") }
                guard Set(android.map(\.packageName)).count == android.count else {
                    throw ConfigurationError.invalid("fido2.apps.android names a package twice")
                }
            }
        }

        /// Every origin a ceremony may come from: `origins`, `relatedOrigins` and the Android apps' origins.
        public var acceptedOrigins: Set<String> { Set(origins + relatedOrigins + (apps?.androidOrigins ?? [])) }

        public init(
            rpId: String, rpName: String? = nil, origins: [String], relatedOrigins: [String] = [], userVerification: String = "required",
            residentKey: String = "required", algorithms: [String] = ["ES256", "EdDSA"], timeoutSeconds: Int = 300,
            attestationPolicy: String = "passkeys", allowedAAGUIDs: [String]? = nil, attestationRootsPath: String? = nil,
            allowCredentials: String = "list", attestationRevocationListsPath: String? = nil, apps: Apps? = nil, hints: [String] = [],
            attestationConveyance: String? = nil, credentialProtection: CredentialProtection? = nil, largeBlob: String? = nil, prf: Bool = false,
            providerNamesPath: String? = nil, allowRemovingLastCredential: Bool = false
        ) {
            self.providerNamesPath = providerNamesPath
            self.allowRemovingLastCredential = allowRemovingLastCredential
            self.credentialProtection = credentialProtection
            self.largeBlob = largeBlob
            self.prf = prf
            self.apps = apps
            self.hints = hints
            self.attestationConveyance = attestationConveyance
            self.rpId = rpId
            self.rpName = rpName
            self.origins = origins
            self.relatedOrigins = relatedOrigins
            self.userVerification = userVerification
            self.residentKey = residentKey
            self.algorithms = algorithms
            self.timeoutSeconds = timeoutSeconds
            self.attestationPolicy = attestationPolicy
            self.allowedAAGUIDs = allowedAAGUIDs
            self.attestationRootsPath = attestationRootsPath
            self.allowCredentials = allowCredentials
            self.attestationRevocationListsPath = attestationRevocationListsPath
        }

        package enum CodingKeys: String, CodingKey, CaseIterable {
            case rpId, rpName, origins, relatedOrigins, userVerification, residentKey, algorithms, timeoutSeconds
            case attestationPolicy, allowedAAGUIDs, attestationRootsPath, allowCredentials, attestationRevocationListsPath, apps
            case hints, attestationConveyance, credentialProtection, largeBlob, prf, providerNamesPath, allowRemovingLastCredential
            /// Before `allowCredentials`: `true` is `list`, `false` is `authorizedCallers`.
            case allowCredentialsForAnyCaller
        }

        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = FIDO2(rpId: "", origins: [])
            self.init(
                rpId: try c.decode(String.self, forKey: .rpId), rpName: try c.decodeIfPresent(String.self, forKey: .rpName),
                origins: try c.decode([String].self, forKey: .origins),
                relatedOrigins: try c.decodeIfPresent([String].self, forKey: .relatedOrigins) ?? d.relatedOrigins,
                userVerification: try c.decodeIfPresent(String.self, forKey: .userVerification) ?? d.userVerification,
                residentKey: try c.decodeIfPresent(String.self, forKey: .residentKey) ?? d.residentKey,
                algorithms: try c.decodeIfPresent([String].self, forKey: .algorithms) ?? d.algorithms,
                timeoutSeconds: try c.decodeIfPresent(Int.self, forKey: .timeoutSeconds) ?? d.timeoutSeconds,
                attestationPolicy: try c.decodeIfPresent(String.self, forKey: .attestationPolicy) ?? d.attestationPolicy,
                allowedAAGUIDs: try c.decodeIfPresent([String].self, forKey: .allowedAAGUIDs),
                attestationRootsPath: try c.decodeIfPresent(String.self, forKey: .attestationRootsPath),
                allowCredentials: try Self.allowCredentials(c) ?? d.allowCredentials,
                attestationRevocationListsPath: try c.decodeIfPresent(String.self, forKey: .attestationRevocationListsPath),
                apps: try c.decodeIfPresent(Apps.self, forKey: .apps), hints: try c.decodeIfPresent([String].self, forKey: .hints) ?? [],
                attestationConveyance: try c.decodeIfPresent(String.self, forKey: .attestationConveyance),
                credentialProtection: try c.decodeIfPresent(CredentialProtection.self, forKey: .credentialProtection),
                largeBlob: try c.decodeIfPresent(String.self, forKey: .largeBlob), prf: try c.decodeIfPresent(Bool.self, forKey: .prf) ?? false,
                providerNamesPath: try c.decodeIfPresent(String.self, forKey: .providerNamesPath),
                allowRemovingLastCredential: try c.decodeIfPresent(Bool.self, forKey: .allowRemovingLastCredential) ?? false)
        }

        /// Every setting under its current name (never the earlier `allowCredentialsForAnyCaller`).
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(rpId, forKey: .rpId)
            try c.encodeIfPresent(rpName, forKey: .rpName)
            try c.encode(origins, forKey: .origins)
            try c.encode(relatedOrigins, forKey: .relatedOrigins)
            try c.encode(userVerification, forKey: .userVerification)
            try c.encode(residentKey, forKey: .residentKey)
            try c.encode(algorithms, forKey: .algorithms)
            try c.encode(timeoutSeconds, forKey: .timeoutSeconds)
            try c.encode(attestationPolicy, forKey: .attestationPolicy)
            try c.encodeIfPresent(allowedAAGUIDs, forKey: .allowedAAGUIDs)
            try c.encodeIfPresent(attestationRootsPath, forKey: .attestationRootsPath)
            try c.encode(allowCredentials, forKey: .allowCredentials)
            try c.encodeIfPresent(attestationRevocationListsPath, forKey: .attestationRevocationListsPath)
            try c.encodeIfPresent(apps, forKey: .apps)
            try c.encode(hints, forKey: .hints)
            try c.encodeIfPresent(attestationConveyance, forKey: .attestationConveyance)
            try c.encodeIfPresent(credentialProtection, forKey: .credentialProtection)
            try c.encodeIfPresent(largeBlob, forKey: .largeBlob)
            try c.encode(prf, forKey: .prf)
            try c.encodeIfPresent(providerNamesPath, forKey: .providerNamesPath)
            try c.encode(allowRemovingLastCredential, forKey: .allowRemovingLastCredential)
        }

        /// `allowCredentials`, or what the earlier `allowCredentialsForAnyCaller` said; both at once are refused.
        static func allowCredentials(_ c: KeyedDecodingContainer<CodingKeys>) throws -> String? {
            let mode = try c.decodeIfPresent(String.self, forKey: .allowCredentials)
            guard let legacy = try c.decodeIfPresent(Bool.self, forKey: .allowCredentialsForAnyCaller) else { return mode }
            guard mode == nil else {
                throw ConfigurationError.invalid("fido2: give allowCredentials only; allowCredentialsForAnyCaller is its earlier name")
            }
            return legacy ? "list" : "authorizedCallers"
        }

        /// Why `hints` cannot be used (an unknown value, one named twice), or nil.
        package static func hintProblem(_ hints: [String]) -> String? {
            if let unknown = hints.first(where: { !knownHints.contains($0) }) {
                return "\(unknown.prefix(40)) is not one of security-key, client-device, hybrid"
            }
            return Set(hints).count == hints.count ? nil : "a hint is named twice"
        }

        /// The algorithm names this server accepts, with their COSE identifiers.
        package static let algorithmIdentifiers: [String: Int64] = [
            "ES256": -7, "EdDSA": -8, "ES384": -35, "ES512": -36, "RS256": -257, "RS384": -258, "RS512": -259, "ML-DSA-65": -49,
            "ML-DSA-87": -50,
        ]
        /// Algorithms nevisFIDO names that this server will not offer, and why.
        static let refusedAlgorithms = [
            "RS1": "RS1 (RSA with SHA-1) is not offered: SHA-1 collisions are practical, so its signatures can be forged; use RS256",
            "ML-DSA-44": "ML-DSA-44 is not offered: swift-crypto cannot verify it; ML-DSA-65 and ML-DSA-87 are",
        ]
        static let requirements = ["required", "preferred", "discouraged"]
        static let attestationPolicies = ["passkeys", "conformance", "enterprise"]

        func validate(developmentMode: Bool) throws {
            func invalid(_ detail: String) -> ConfigurationError { .invalid("fido2.\(detail)") }
            guard Self.isDomain(rpId) else {
                throw invalid("rpId \"\(rpId.prefix(80))\" must be a domain name (letters, digits, dots and hyphens; no scheme or port)")
            }
            guard !origins.isEmpty else { throw invalid("origins must list at least one origin (https://\(rpId))") }
            for origin in origins {
                if origin.hasPrefix("android:apk-key-hash:") {
                    guard origin.utf8.count > "android:apk-key-hash:".utf8.count + 20 else {
                        throw invalid("origins: \"\(origin.prefix(80))\" has no key hash")
                    }
                    continue
                }
                guard let host = Self.host(of: origin, developmentMode: developmentMode) else {
                    throw invalid(
                        "origins: \"\(origin.prefix(80))\" is not an origin (https://host[:port], nothing after it\(developmentMode ? "; http://localhost allowed in development mode" : ""))"
                    )
                }
                // The RP ID must be the origin's host or a registrable suffix of it (WebAuthn §5.1.3), or browsers
                // refuse every ceremony from that page.
                guard host == rpId || host.hasSuffix("." + rpId) else {
                    throw invalid("origins: \(origin) is not on \(rpId) or a subdomain of it; list other domains under relatedOrigins")
                }
            }
            for origin in relatedOrigins where Self.host(of: origin, developmentMode: false) == nil {
                throw invalid("relatedOrigins: \"\(origin.prefix(80))\" is not an https:// origin")
            }
            guard Self.requirements.contains(userVerification) else { throw invalid("userVerification must be required, preferred or discouraged") }
            guard Self.requirements.contains(residentKey) else { throw invalid("residentKey must be required, preferred or discouraged") }
            if let refused = algorithms.lazy.compactMap({ Self.refusedAlgorithms[$0] }).first { throw invalid("algorithms: \(refused)") }
            guard !algorithms.isEmpty, Set(algorithms).count == algorithms.count, algorithms.allSatisfy({ Self.algorithmIdentifiers[$0] != nil })
            else {
                throw invalid(
                    "algorithms must list each of ES256, EdDSA, ES384, ES512, RS256, RS384, RS512, ML-DSA-65, ML-DSA-87 at most once, at least one")
            }
            guard (10...3600).contains(timeoutSeconds) else { throw invalid("timeoutSeconds must be 10...3600") }
            guard Self.attestationPolicies.contains(attestationPolicy) else {
                throw invalid("attestationPolicy must be passkeys, conformance or enterprise")
            }
            if let allowed = allowedAAGUIDs {
                guard attestationPolicy == "enterprise" else { throw invalid("allowedAAGUIDs needs attestationPolicy enterprise") }
                if let bad = allowed.first(where: { AAGUID.bytes($0) == nil }) {
                    throw invalid("allowedAAGUIDs: \"\(bad.prefix(80))\" is not an AAGUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)")
                }
            }
            if let rpName, rpName.isEmpty || rpName.utf8.count > 256 { throw invalid("rpName must be 1...256 bytes") }
            guard Self.allowCredentialsModes.contains(allowCredentials) else {
                throw invalid("allowCredentials must be list, listWithDecoys or authorizedCallers, not \(allowCredentials.prefix(40))")
            }
            try apps?.validate()
            if let problem = Self.hintProblem(hints) { throw invalid("hints: \(problem)") }
            if let protection = credentialProtection, !CredentialProtection.policies.contains(protection.policy) {
                throw invalid(
                    "credentialProtection.policy must be \(CredentialProtection.policies.joined(separator: ", ")), not \(protection.policy.prefix(60))"
                )
            }
            if let largeBlob, !["preferred", "required"].contains(largeBlob) {
                throw invalid("largeBlob must be preferred or required, not \(largeBlob.prefix(40))")
            }
            if let conveyance = attestationConveyance {
                guard Self.conveyances.contains(conveyance) else {
                    throw invalid("attestationConveyance must be none, indirect, direct or enterprise, not \(conveyance.prefix(40))")
                }
                if attestationPolicy == "enterprise", conveyance == "none" || conveyance == "indirect" {
                    throw invalid(
                        "attestationConveyance \(conveyance) would strip the attestation chain attestationPolicy \(attestationPolicy) requires: use direct or enterprise"
                    )
                }
            }
        }

        static func isDomain(_ text: String) -> Bool {
            let labels = text.split(separator: ".", omittingEmptySubsequences: false)
            return !text.isEmpty && text.utf8.count <= 253
                && labels.allSatisfy { label in
                    !label.isEmpty && label.utf8.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                        && label.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }
                }
        }

        /// The host of an origin `https://host[:port]` (lower case, nothing after the port), or nil. `http://` only for
        /// `localhost` and only under development mode (browsers treat it as a secure context).
        static func host(of origin: String, developmentMode: Bool) -> String? {
            let rest: Substring
            if origin.hasPrefix("https://") {
                rest = origin.dropFirst(8)
            } else if developmentMode, origin.hasPrefix("http://") {
                rest = origin.dropFirst(7)
            } else {
                return nil
            }
            let parts = rest.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let host = String(parts[0])
            if parts.count == 2 {
                guard let port = Int(parts[1]), (1...65535).contains(port), String(port) == parts[1] else { return nil }
            }
            guard isDomain(host) else { return nil }
            if origin.hasPrefix("http://"), host != "localhost" { return nil }
            return host
        }
    }
}
