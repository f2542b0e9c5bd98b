import FIDOSimulation
import Foundation
import Primitives

/// What one `mauth load` run does: against which servers, with how many connections, which flow, for how long.
public struct LoadPlan: Sendable {
    /// The flow each virtual device repeats during the measured phase.
    public enum Flow: String, Sendable, Codable, CaseIterable {
        /// Authentication request plus signed response, by users registered beforehand (the population).
        case authentication
        /// Registration request plus signed registration response, each by a new user.
        case registration
        /// A passkey sign-in by username (nevisFIDO's FIDO2 API: authentication options, then the signed assertion), by
        /// users who registered a passkey beforehand (the population, registered over the same API): the passkey
        /// counterpart of ``authentication``, with the software passkey authenticator (P-256, `none` attestation).
        case passkey
        /// Two `GET /health/live` per flow: the HTTP/1.1 and TLS round trips of a login over the same connections, with
        /// none of its work. What this reaches is the ceiling the server's stack, the generator and the machine allow
        /// any two-request flow, so it says how much of a login's cost is its UAF work and how much the plumbing.
        case baseline
    }

    /// When the measured phase ends.
    public enum Stop: Sendable, Equatable {
        case duration(seconds: Double)
        case flows(Int)
    }

    /// The servers' base URLs (`https://host:port`); connection i talks to `targets[i % targets.count]`.
    public var targets: [URL]
    /// PEM certificates the load generator trusts, or nil for the system's roots.
    public var trustedCertificatesPEM: String?
    /// Concurrent connections, one virtual device loop on each (closed loop: a loop sends its next request when the
    /// previous answer arrived).
    public var connections: Int
    public var flow: Flow
    public var stop: Stop
    /// Users registered before an authentication run (each connection authenticates its share in turn).
    public var population: Int
    /// The origin the virtual passkeys sign for (in clientDataJSON); the servers' `fido2.origins` must list it.
    public var passkeyOrigin: String = "https://localhost"
    /// Whether the flow signs in users registered beforehand (the population).
    public var hasPopulation: Bool { flow == .authentication || flow == .passkey }
    /// A transaction text every authentication confirms (`text/plain`), or nil for plain logins.
    public var transactionText: String?
    /// Mints the bearer JWT that authorizes each registration, or nil to send none (a server in development mode).
    public var relyingParty: LocalRelyingParty?
    /// The facet id the virtual devices report; the servers must trust it.
    public var facetID: String
    /// Usernames are `prefix-N`; a fresh prefix per run keeps runs against one database apart.
    public var usernamePrefix: String
    /// Per-request timeout.
    public var requestTimeoutSeconds: Int64
    /// Send every accepted response a second time, to the next server (the same one if there is only one): it must
    /// be refused. Proves that a UAF request is consumed at most once across instances.
    public var replayCheck: Bool = false
    /// After a registration run, authenticate every user that was answered 1200 once more (on the first server that
    /// answers): proves that nothing the servers accepted was lost.
    public var verify: Bool = false
    /// Server processes on this machine whose CPU the measured phase reports per flow (`--server-pid`).
    public var serverPIDs: [Int32] = []
    /// The name of a database's processes on this machine whose CPU the measured phase reports per flow, all of them
    /// together (`--database-process`, `postgres` for PostgreSQL); nil: none.
    public var databaseProcess: String?
    /// The generator's process also runs the servers (embedded), so its CPU is theirs too.
    public var embeddedServers: Bool = false
    /// How the generator's threads are scheduled, for the report (``GeneratorScheduling``); nil: not stated.
    public var generatorScheduling: String?
    /// App Attest for every UAF registration and login a server asks to attest: each virtual device has its own key,
    /// attested by `authority` for `appID` (development environment) on its first answer and asserting afterwards.
    /// A server must trust the authority's root. Nil: the devices answer no ask (a server that requires one refuses).
    public var appAttest: AppAttest?
    public struct AppAttest: Sendable {
        public var authority: SoftwareAppAttestAuthority
        public var appID: String
        public init(authority: SoftwareAppAttestAuthority, appID: String = SoftwareAppAttestAuthority.virtualDeviceAppID) {
            self.authority = authority
            self.appID = appID
        }
    }
    /// Writes a batch of the population's keys straight into the servers' database, instead of registering each
    /// user over HTTP: a million users are ready in well under a minute, not in ten and more. Only for embedded servers,
    /// whose database the generator can reach (`mauth load --fill-database`).
    public var writeRegistrations: (@Sendable ([DirectRegistration]) async throws -> Void)?
    /// Runs once the population is written and before the measured phase: what a database that has been serving
    /// has done by then (PostgreSQL's vacuum and statistics), so that the logins do not share the machine with it.
    public var settleDatabase: (@Sendable () async throws -> Void)?
    /// The most users a run that writes its population to the database keeps in memory to sign in with. A larger
    /// population is written whole, and its logins go to every `population / signedInSample`-th user, spread evenly
    /// over it: ten million kept devices would take about 37 GB, a sample of 100,000 about 370 MB, and the logins
    /// still reach every part of the tables.
    public var signedInSample = 100_000

    public init(
        targets: [URL], trustedCertificatesPEM: String? = nil, connections: Int = 32, flow: Flow = .authentication,
        stop: Stop = .duration(seconds: 10), population: Int = 1000, transactionText: String? = nil,
        relyingParty: LocalRelyingParty? = nil, facetID: String = SoftwareAuthenticator.virtualDeviceFacetID,
        usernamePrefix: String = "load-" + String(UUID().uuidString.prefix(8)).lowercased(), requestTimeoutSeconds: Int64 = 30
    ) {
        self.targets = targets
        self.trustedCertificatesPEM = trustedCertificatesPEM
        self.connections = connections
        self.flow = flow
        self.stop = stop
        self.population = population
        self.transactionText = transactionText
        self.relyingParty = relyingParty
        self.facetID = facetID
        self.usernamePrefix = usernamePrefix
        self.requestTimeoutSeconds = requestTimeoutSeconds
    }

    /// One user's key as the server stores it after a registration by the virtual device (``LoadPlan/writeRegistrations``):
    /// the software authenticator's AAID, its key id (base64url) and its public key (X9.62 DER, ECDSA P-256).
    public struct DirectRegistration: Sendable {
        public var username: String
        public var aaid: String
        public var keyID: String
        public var publicKeyDER: [UInt8]

        init(username: String, aaid: String, keyID: String, publicKeyDER: [UInt8]) {
            self.username = username
            self.aaid = aaid
            self.keyID = keyID
            self.publicKeyDER = publicKeyDER
        }

        init(user: VirtualUser) {
            self.init(
                username: user.username, aaid: user.authenticator.aaid, keyID: Base64URL.encode(user.authenticator.keyID),
                publicKeyDER: Array(user.authenticator.key.publicKey.derRepresentation))
        }
    }

    /// A plan that cannot run is refused before any request is sent.
    public enum PlanError: Error, Equatable, CustomStringConvertible {
        case invalid(String)
        public var description: String {
            switch self {
            case .invalid(let detail): "invalid load plan: \(detail)"
            }
        }
    }

    public func validate() throws {
        guard !targets.isEmpty else { throw PlanError.invalid("no server URL") }
        for target in targets where target.scheme != "https" || target.host == nil {
            throw PlanError.invalid("\(target.absoluteString) is not an https:// URL")
        }
        guard (1...4096).contains(connections) else { throw PlanError.invalid("connections must be 1...4096") }
        switch stop {
        case .duration(let seconds): guard seconds > 0, seconds <= 86_400 else { throw PlanError.invalid("duration must be in (0, 86400] s") }
        case .flows(let count): guard count > 0 else { throw PlanError.invalid("flows must be positive") }
        }
        if hasPopulation {
            guard population >= connections else {
                throw PlanError.invalid(
                    "the population (\(population)) must be at least the connections (\(connections)): one user is never signed for on two connections at once, since its counter must rise"
                )
            }
        }
        guard population <= 10_000_000 else { throw PlanError.invalid("population must be at most 10,000,000") }
        guard !usernamePrefix.isEmpty, usernamePrefix.count <= 64 else { throw PlanError.invalid("the username prefix must be 1...64 characters") }
    }
}
