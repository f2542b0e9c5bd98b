import DevelopmentStandIns
import FIDOServer
import FIDOSimulation
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import SecureStorage
import TestSupport
import UAF
import XCTest

/// The set-up of the end-to-end classes that drive the server as its relying party does: a fresh ``Environment``
/// (with the FCM stand-in where ``withPush`` says so) and a ``RelyingPartyBackend`` for it, both shut down after
/// each test.
class BackendTestCase: XCTestCase {
    var environment: Environment!
    var backend: RelyingPartyBackend!

    /// Whether the environment runs the local FCM stand-in.
    class var withPush: Bool { false }

    override func setUp() async throws {
        environment = try await Environment(withPush: Self.withPush)
        backend = try RelyingPartyBackend(environment.server)
    }

    override func tearDown() async throws {
        try await backend.shutdown()
        try await environment.shutdown()
    }
}

/// A real server on loopback (TLS, SQLite file) and a virtual device with its own storage directory.
final class Environment {
    let server: RunningFIDOServer
    let directory: URL
    let platform: SimulatedPlatform
    private(set) var clients: [any MobileAuthenticationClient] = []

    /// The server's clock: tests move it forward to expire tokens.
    let clock = SettableClock()

    /// The local Firebase stand-in push goes to, when the environment was made `withPush`.
    private(set) var firebase: FirebaseStandIn?

    init(
        profile: DeviceProfile = .ios, metadataJSON: String? = nil, withPush: Bool = false, acceptedVersions: [String]? = nil,
        limits: ServerConfiguration.Limits? = nil, configure: (inout ServerConfiguration, URL) throws -> Void = { _, _ in }
    ) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let jwks = directory.appendingPathComponent("relying-party-jwks.json").path
        try EndToEndRelyingParty.shared.writeJWKS(to: jwks)
        var configuration = ServerConfiguration(
            facets: [SoftwareAuthenticator.virtualDeviceFacetID],
            database: .sqlite(path: directory.appendingPathComponent("server.sqlite").path))
        configuration.authorization.jwt = .init(
            jwksPath: jwks, issuer: EndToEndRelyingParty.shared.issuer,
            audience: EndToEndRelyingParty.shared.audience, adminScope: "mauth:admin")
        if let metadataJSON { configuration.metadataJSON = metadataJSON }
        if let acceptedVersions { configuration.acceptedVersions = acceptedVersions }
        if let limits { configuration.limits = limits }
        if withPush {
            let firebase = try await FirebaseStandIn.start(directory: directory.appendingPathComponent("firebase"))
            configuration.dispatch.firebase = firebase.configuration
            self.firebase = firebase
        }
        try configure(&configuration, directory)
        let clock = self.clock
        server = try await FIDOServerApplication.start(configuration: configuration, dependencies: ServerDependencies(clock: { clock.now }))
        platform = SimulatedPlatform(
            storageDirectory: directory.appendingPathComponent("device"),
            applicationFacetId: SoftwareAuthenticator.virtualDeviceFacetID,
            deviceProfile: profile)
    }

    var configuration: Configuration {
        Configuration(baseUrl: server.baseURL, userInteractionTimeoutInSeconds: 5, facetId: platform.applicationFacetId)
            .withTransportSecurity(.debug(trustedCertificatesPEM: [server.certificatePEM]))
    }

    /// The device's client reopened on `base` with a Device Service path the server does not serve: the server, to
    /// the client, has no Device Service.
    func clientWithoutDeviceService(base: URL) async throws -> any MobileAuthenticationClient {
        let elsewhere = Configuration(
            baseUrl: base, deviceResourcePath: "/no-device-service/", userInteractionTimeoutInSeconds: 5,
            facetId: platform.applicationFacetId
        )
        .withTransportSecurity(.debug(trustedCertificatesPEM: [server.certificatePEM]))
        return try await client(configuration: elsewhere)
    }

    func client(
        configuration: Configuration? = nil, platform: SimulatedPlatform? = nil,
        _ customize: (MobileAuthenticationClientInitializer) -> Void = { _ in }
    ) async throws -> any MobileAuthenticationClient {
        let initializer = MobileAuthenticationClientInitializer()
            .configuration(configuration ?? self.configuration).platform(platform ?? self.platform)
        customize(initializer)
        let client = try await initializer.executeAsync()
        clients.append(client)
        return client
    }

    func shutdown() async throws {
        for client in clients { await client.shutdown() }
        try await server.stop()
        try await firebase?.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// The shared PostgreSQL server's URL (`TestPostgres`): a test that needs it is skipped locally without one and
/// fails under CI, where `.ci/run` provides it.
func postgresURL() throws -> String {
    if let url = TestPostgres.url { return url }
    if TestPostgres.required { XCTFail(TestPostgres.requiredReason) }
    throw XCTSkip(TestPostgres.missingReason)
}

/// A clock that tests move forward.
final class SettableClock: @unchecked Sendable {
    private let lock = NSLock()
    private var offset: TimeInterval = 0
    func advance(_ seconds: TimeInterval) { lock.withLock { offset += seconds } }
    var now: Date { lock.withLock { Date().addingTimeInterval(offset) } }
}

/// The relying party every end-to-end server trusts; tests mint its JWTs to authorize registrations.
enum EndToEndRelyingParty {
    static let shared = LocalRelyingParty(issuer: "https://rp.e2e.example", audience: "mauth-e2e")
}

/// A relying-party JWT for `username`, as an SDK authorization provider.
func relyingPartyAuthorization(_ username: String) async throws -> JwtAuthorizationProvider {
    JwtAuthorizationProvider(jwt: try await EndToEndRelyingParty.shared.token(for: username))
}

extension MobileAuthenticationClient {
    /// A registration of `username` authorized by the relying party, with the device information and a selector
    /// that picks `aaid` (nil cancels): the caller adds the authenticator's enroller or verifier.
    func authorizedRegistration(_ username: String, choose aaid: String?) async throws -> Registration {
        operations.registration
            .username(username)
            .authorizationProvider(try await relyingPartyAuthorization(username))
            .deviceInformation(DeviceInformation(name: "e2e device"))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: aaid))
    }

    func register(_ username: String, pins: [String?] = ["123456"], choose aaid: String? = AuthenticatorAaid.Pin.rawValue) async throws {
        try await authorizedRegistration(username, choose: aaid).pinEnroller(ScriptedPinEnroller(pins: pins)).executeAsync()
    }

    @discardableResult
    func authenticate(_ username: String?, verifier: ScriptedPinUserVerifier) async throws(AuthenticationError) -> (any AuthorizationProvider)? {
        let builder = operations.authentication
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
            .pinUserVerifier(verifier)
        if let username { builder.username(username) }
        return try await builder.executeAsync()
    }
}

func fidoCode(_ error: any Error) -> FidoErrorCode? {
    (error as? any MobileAuthenticationClientError)?.fidoErrorCode
}

/// Direct access to the SDK's storage file, to simulate what happens to a device behind the SDK's back.
enum SecureStorageAccess {
    static func open(_ platform: SimulatedPlatform) async throws -> SecureStore {
        try await SecureStore.open(
            at: StoreLocation(directory: platform.storageDirectory, name: "mobile-authentication"),
            fingerprint: platform.deviceFingerprint, protector: try platform.makeKeyProtector())
    }
}

extension SecureStore {
    func removeKeys() throws {
        for key in try keys() where key.hasPrefix("key/") { try remove(key) }
        try write()
    }
}

/// Runs `body` and returns the error it threw (nil if none), erasing typed throws.
func captureError(_ body: () async throws -> Void) async -> (any Error)? {
    do {
        try await body()
        return nil
    } catch { return error }
}

/// The Device Service operations of `client` fail with `OperationNotSupportedByBackend`.
func assertNoDeviceService(_ client: any MobileAuthenticationClient, file: StaticString = #filePath, line: UInt = #line) async throws {
    let pending = await client.operations.pendingOutOfBandOperations.executeAsync()
    guard case .OperationNotSupportedByBackend? = pending.errors.first else { return XCTFail("\(pending.errors)", file: file, line: line) }
    let check = await client.operations.deviceInformationCheck.executeAsync()
    guard case .OperationNotSupportedByBackend? = check.errors.first else { return XCTFail("\(check.errors)", file: file, line: line) }
}
