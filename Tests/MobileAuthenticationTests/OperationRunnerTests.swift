import Crypto
import Foundation
import MobileAuthenticationSimulator
import NevisProtocol
import Primitives
import SecureStorage
import UAF
import XCTest

@testable import MobileAuthentication
@testable import MobileAuthenticationCore

/// A relying party that answers in memory, verifying what the client sends with `UAF`'s verifiers: the operation
/// runner is tested without HTTP.
final class InMemoryRelyingParty: ClientTransport, @unchecked Sendable {
    /// `namingAMemberTwice`: the genuine answer, with its `statusCode` written a second time (same value).
    enum Fault { case network, status(Int), http(Int, [(String, String)]), namingAMemberTwice }
    private let lock = NSLock()
    let facetID: String
    private var challenges: [String: (username: String?, policy: Policy)] = [:]
    private var keys: [String: RegisteredKey] = [:]
    private var faults: [String: [Fault]] = [:]
    private(set) var requests: [HTTPRequest] = []
    let metadata = try! UAFMetadata(NevisAuthenticatorMetadata.statements)

    init(facetID: String) { self.facetID = facetID }

    /// The next requests to a path whose name contains `pathPart` fail this way, in order.
    func fail(_ pathPart: String, with faults: [Fault]) { lock.withLock { self.faults[pathPart] = faults } }
    var sent: [HTTPRequest] { lock.withLock { requests } }
    var registeredKeys: [RegisteredKey] { lock.withLock { Array(keys.values) } }

    func shutdown() async {}

    func send(_ request: HTTPRequest) async throws(TransportFailure) -> HTTPExchange {
        let fault: Fault? = lock.withLock {
            requests.append(request)
            guard let key = faults.keys.first(where: { request.url.path.contains($0) }), var queue = faults[key], !queue.isEmpty else { return nil }
            let first = queue.removeFirst()
            faults[key] = queue
            return first
        }
        switch fault {
        case .network?: throw .network(URLError(.cannotConnectToHost))
        case .status(let code)?: return HTTPExchange(status: 200, body: try! JSONEncoder().encode(ServerResponse(statusCode: code)))
        case .http(let status, let headers)?:
            return HTTPExchange(
                status: status, body: Data(#"{"error":"rate_limited","message":"Too many requests from this client; retry later."}"#.utf8),
                headers: headers)
        case .namingAMemberTwice?:
            var body = (try? await answer(request)) ?? Data()
            body.removeLast()  // the closing brace
            return HTTPExchange(status: 200, body: body + Data(#","statusCode":1200}"#.utf8))
        case nil: break
        }
        if request.url.path.contains("dispatch/targets") {
            // The device's dispatch target after a registration: created, with fresh ids.
            return HTTPExchange(status: 201, body: Data(#"{"id":"\#(UUID().uuidString)","extId":"\#(UUID().uuidString)"}"#.utf8))
        }
        do { return HTTPExchange(status: 200, body: try await answer(request)) } catch {
            return HTTPExchange(
                status: 200,
                body: try! JSONEncoder().encode(ServerResponse(statusCode: (error as? UAFVerificationError)?.statusCode.rawValue ?? 1500)))
        }
    }

    private var configuration: RelyingPartyConfiguration { RelyingPartyConfiguration(appID: facetID, trustedFacetIDs: [facetID]) }

    private func answer(_ request: HTTPRequest) async throws -> Data {
        let path = request.url.path
        if path.contains("request/registration") || path.contains("request/authentication") {
            let get = try JSONDecoder().decode(GetUAFRequest.self, from: request.body ?? Data())
            struct Context: Decodable { var username: String? }
            let context = try JSONDecoder().decode(Context.self, from: Data(get.context?.utf8 ?? "{}".utf8))
            let challenge = Base64URL.encode(SecureRandom.bytes(32))
            let op = get.op ?? .authentication
            let header = OperationHeader(op: op, appID: facetID, serverData: challenge)
            let message: String
            if op == .registration {
                let policy = Policy(accepted: NevisAuthenticatorMetadata.statements.map { [MatchCriteria(aaid: [$0.aaid])] })
                lock.withLock { challenges[challenge] = (context.username, policy) }
                message = try UAFMessageCodec.encode([
                    RegistrationRequest(header: header, challenge: challenge, username: context.username ?? "", policy: policy)
                ])
            } else {
                let policy = Policy(accepted: NevisAuthenticatorMetadata.statements.map { [MatchCriteria(aaid: [$0.aaid])] })
                lock.withLock { challenges[challenge] = (context.username, policy) }
                message = try UAFMessageCodec.encode([AuthenticationRequest(header: header, challenge: challenge, policy: policy)])
            }
            return try JSONEncoder().encode(ReturnUAFRequest(statusCode: 1200, uafRequest: message, op: op, lifetimeMillis: 60_000))
        }
        let send = try JSONDecoder().decode(SendUAFResponse.self, from: request.body ?? Data())
        if path.contains("registration") {
            let response = try UAFMessageCodec.decode(RegistrationResponse.self, from: send.uafResponse)[0]
            guard let issued = lock.withLock({ challenges.removeValue(forKey: response.header.serverData ?? "") }) else {
                throw UAFVerificationError.challengeMismatch
            }
            let verified = try await RegistrationVerifier(configuration: configuration, metadata: metadata).verify(
                response,
                issued: IssuedRegistration(challenge: response.header.serverData ?? "", username: issued.username ?? "", policy: issued.policy),
                isRegistered: { aaid, keyID in self.lock.withLock { self.keys[aaid + keyID] != nil } })
            lock.withLock {
                for key in verified {
                    keys[key.aaid + key.keyID] = RegisteredKey(
                        aaid: key.aaid, keyID: key.keyID, username: issued.username ?? "", publicKey: key.publicKey,
                        publicKeyEncoding: key.publicKeyEncoding, signCounter: key.signCounter)
                }
            }
        } else {
            let response = try UAFMessageCodec.decode(AuthenticationResponse.self, from: send.uafResponse)[0]
            guard let issued = lock.withLock({ challenges.removeValue(forKey: response.header.serverData ?? "") }) else {
                throw UAFVerificationError.challengeMismatch
            }
            let verified = try await AuthenticationVerifier(configuration: configuration, metadata: metadata).verify(
                response, issued: IssuedAuthentication(challenge: response.header.serverData ?? "", policy: issued.policy),
                lookup: { aaid, keyID in self.lock.withLock { self.keys[aaid + keyID] } })
            lock.withLock { for item in verified { keys[item.aaid + item.keyID]?.signCounter = item.signCounter } }
        }
        return try JSONEncoder().encode(ServerResponse(statusCode: 1200))
    }
}

final class OperationRunnerTests: XCTestCase {
    var directory: URL!
    override func setUp() { directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-runner-\(UUID().uuidString)") }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    func makeClient(
        _ party: InMemoryRelyingParty? = nil, profile: DeviceProfile = .ios,
        configuration: Configuration? = nil
    ) async throws -> (any MobileAuthenticationClient, InMemoryRelyingParty, SimulatedPlatform) {
        let platform = SimulatedPlatform(storageDirectory: directory, deviceProfile: profile)
        let party = party ?? InMemoryRelyingParty(facetID: platform.applicationFacetId)
        let configuration =
            configuration
            ?? Configuration(
                baseUrl: URL(string: "https://rp.example")!, userInteractionTimeoutInSeconds: 5,
                facetId: platform.applicationFacetId)
        let client = try await MobileAuthenticationClientInitializer().configuration(configuration).platform(platform).transport(party).executeAsync()
        return (client, party, platform)
    }

    func register(
        _ client: any MobileAuthenticationClient, _ username: String, aaid: String = "F1D0#1001", serverUrl: URL? = nil
    ) async throws(OperationError) {
        let builder = client.operations.registration.username(username).deviceInformation(DeviceInformation(name: "unit"))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: aaid)).pinEnroller(ScriptedPinEnroller(pins: ["123456"]))
            .biometricUserVerifier(ScriptedOSVerifier())
        if let serverUrl { builder.serverUrl(serverUrl) }
        try await builder.executeAsync()
    }

    func storeGeneration(_ platform: SimulatedPlatform) async throws -> UInt64 {
        let store = try await SecureStore.open(
            at: StoreLocation(directory: platform.storageDirectory, name: "mobile-authentication"),
            fingerprint: platform.deviceFingerprint, protector: try platform.makeKeyProtector())
        return await store.generation
    }

    func testARegistrationIsVerifiedByTheRelyingPartyAndCommittedInOneWrite() async throws {
        let (client, party, platform) = try await makeClient()
        party.fail("dispatch/targets", with: [.network])
        let before = try await storeGeneration(platform)
        try await register(client, "alice")
        let after = try await storeGeneration(platform)
        XCTAssertEqual(after, before + 1, "key, PIN verifier, registration, account, device information and keys: one durable write")
        XCTAssertEqual(party.registeredKeys.map(\.aaid), ["F1D0#1001"])
        XCTAssertEqual(
            client.localData.deviceInformation?.idUsernamePairs.map(\.username), [],
            "the dispatch target could not be created: the registration stands, without a pair")
    }

    func testTheDispatchTargetTheServerCreatedIsASecondWriteAndNamesTheDevicePair() async throws {
        let (client, party, platform) = try await makeClient()
        let before = try await storeGeneration(platform)
        try await register(client, "alice")
        let after = try await storeGeneration(platform)
        XCTAssertEqual(after, before + 2, "the registration's write, then the dispatch target's once the server created it")
        XCTAssertEqual(party.registeredKeys.map(\.aaid), ["F1D0#1001"])
        XCTAssertEqual(client.localData.deviceInformation?.idUsernamePairs.map(\.username), ["alice"])
    }

    /// The client reads the server's envelopes with the wire's reader, as the server reads the client's: a body that
    /// names a member twice (which two readers may read differently) is refused, and nothing is signed or sent.
    func testAnAnswerThatNamesAMemberTwiceIsRefusedBeforeAnythingIsSigned() async throws {
        let (client, party, _) = try await makeClient()
        party.fail("request/registration", with: [.namingAMemberTwice])
        do {
            try await register(client, "alice")
            XCTFail("a registration request naming statusCode twice was taken")
        } catch {}
        XCTAssertFalse(party.sent.contains { $0.url.path.hasSuffix("uaf/1.1/registration") }, "a registration response was sent")
        XCTAssertTrue(party.registeredKeys.isEmpty)
    }

    func testARefusedRegistrationWritesNothing() async throws {
        let (client, party, platform) = try await makeClient()
        let before = try await storeGeneration(platform)
        party.fail("uaf/1.1/registration", with: [.status(1498)])
        do {
            try await register(client, "bob")
            XCTFail()
        } catch {
            XCTAssertEqual(error.fidoErrorCode, .protocolError)
            XCTAssertEqual((error.cause as? ServerStatusError)?.statusCode, 1498)
        }
        let after = try await storeGeneration(platform)
        XCTAssertEqual(after, before, "nothing was written")
        XCTAssertTrue(client.localData.accounts.isEmpty)
    }

    func testARefusedRegistrationDeletesItsHardwareKey() async throws {
        let (client, party, platform) = try await makeClient()
        platform.enableHardwareKeyStore()
        party.fail("uaf/1.1/registration", with: [.status(1498)])
        do {
            try await register(client, "hana", aaid: "F1D0#1003")
            XCTFail()
        } catch { XCTAssertEqual(error.fidoErrorCode, .protocolError) }
        XCTAssertEqual(platform.hardwareKeyCount, 0, "the key made for the refused registration is gone")
        try await register(client, "hana", aaid: "F1D0#1003")
        XCTAssertEqual(platform.hardwareKeyCount, 1)
        XCTAssertEqual(party.registeredKeys.first?.publicKeyEncoding, .eccX962DER)
    }

    func testAnUnreachableRequestIsRetriedByTheRetryPolicyButAResponseNever() async throws {
        let (client, party, _) = try await makeClient()
        try await register(client, "carol")
        party.fail("request/authentication", with: [.network, .network])
        _ = try await client.operations.authentication.username("carol").pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"]))
            .retryPolicyObtainingAuthorizationProvider(.constant(maxRetries: 2, delayInSeconds: 0)).executeAsync()
        XCTAssertEqual(party.sent.filter { $0.url.path.contains("request/authentication") }.count, 3)

        party.fail("request/authentication", with: [.network])
        let noRetry = await capture {
            _ = try await client.operations.authentication.username("carol").pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"]))
                .retryPolicyObtainingAuthorizationProvider(.noRetry).executeAsync()
        }
        guard case .NetworkError? = noRetry as? AuthenticationError else {
            return XCTFail("\(String(describing: noRetry)) \(party.sent.map(\.url.path))")
        }

        party.fail("uaf/1.1/authentication", with: [.network])
        let before = party.sent.count
        let response = await capture {
            _ = try await client.operations.authentication.username("carol").pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"]))
                .retryPolicyObtainingAuthorizationProvider(.constant(maxRetries: 3, delayInSeconds: 0)).executeAsync()
        }
        guard case .NetworkError? = response as? AuthenticationError else { return XCTFail("\(String(describing: response))") }
        XCTAssertEqual(party.sent.count - before, 2, "the request once and the response once: a response is never re-sent")
    }

    func testAnAccountOnAnotherServerUsesThatServer() async throws {
        let (client, party, _) = try await makeClient()
        try await register(client, "dave", serverUrl: URL(string: "https://other.example")!)
        XCTAssertEqual(Set(party.sent.map { $0.url.host }), ["other.example"])
        _ = try await client.operations.authentication.username("dave").pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"])).executeAsync()
        XCTAssertEqual(Set(party.sent.map { $0.url.host }), ["other.example"])
        do {
            try await register(client, "dave")
            XCTFail()
        } catch {
            guard case .UserAlreadyRegisteredInAnotherServer = error else { return XCTFail("\(error)") }
        }
    }

    /// The app's headers go with every exchange of an operation: the UAF ones, the dispatch target's creation and
    /// the Device Service's. The paths are listed, so an exchange that is not made cannot pass for one with headers.
    func testRequestHeadersReachEveryExchange() async throws {
        let (client, party, _) = try await makeClient()
        let headers = ["X-Tenant", "blue", "X-Trace", "7"]
        try await client.operations.registration.username("erin").deviceInformation(DeviceInformation(name: "unit"))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: "F1D0#1001")).pinEnroller(ScriptedPinEnroller(pins: ["123456"]))
            .requestHeaders(headers).executeAsync()
        _ = await client.operations.deviceInformationCheck.requestHeaders(headers).executeAsync()
        _ = await client.operations.pendingOutOfBandOperations.requestHeaders(headers).executeAsync()
        let paths = party.sent.map { $0.url.path }
        for expected in [
            "/uaf/1.1/request/registration", "/uaf/1.1/registration", "/token/dispatch/targets", "/devices/credentials/", "/devices/operations/",
        ] {
            XCTAssertTrue(paths.contains { $0.contains(expected) }, "no exchange with \(expected) in \(paths)")
        }
        for request in party.sent {
            XCTAssertTrue(
                request.headers.contains { $0 == ("X-Tenant", "blue") } && request.headers.contains { $0 == ("X-Trace", "7") },
                "\(request.method) \(request.url.path) went without the app's headers")
        }
    }

    func testTheAndroidProfileOffersItsOwnAuthenticators() async throws {
        let (client, party, _) = try await makeClient(profile: .android)
        XCTAssertEqual(client.localData.authenticators.map(\.aaid), ["F1D0#0001", "F1D0#0002", "F1D0#0003", "F1D0#0004", "F1D0#0005"])
        try await register(client, "frank", aaid: "F1D0#0003")
        XCTAssertEqual(party.registeredKeys.first?.publicKeyEncoding, .eccX962DER, "ECDSA by default")
    }

    func capture(_ body: () async throws -> Void) async -> (any Error)? {
        do {
            try await body()
            return nil
        } catch { return error }
    }
}

final class PlatformAndDescriptorTests: XCTestCase {
    func testEveryAuthenticatorOfBothProfilesHasItsDefaultMetadataAndSchemes() {
        for profile in DeviceProfile.allCases {
            let descriptors = AuthenticatorDescriptor.all(for: profile)
            XCTAssertEqual(descriptors.count, 5)
            for descriptor in descriptors {
                XCTAssertNotNil(NevisAuthenticatorMetadata.statements.first { $0.aaid == descriptor.aaid })
                XCTAssertEqual(descriptor.schemes.first, .ecdsaP256, "ECDSA P-256 DER first (seed 000 §4.3.2)")
                XCTAssertEqual(descriptor.schemes.contains(.rsaPKCS1), profile == .android)
            }
        }
    }

    func testAnRSAOnlyPolicyMakesTheAndroidPinChooseRSA() throws {
        let pin = try XCTUnwrap(AuthenticatorDescriptor.all(for: .android).first)
        let rsaOnly = Policy(accepted: [[MatchCriteria(aaid: ["F1D0#0001"], authenticationAlgorithms: [9])]])
        XCTAssertEqual(pin.scheme(satisfying: rsaOnly), .rsaPKCS1)
        XCTAssertEqual(pin.scheme(satisfying: Policy(accepted: [[MatchCriteria(aaid: ["F1D0#0001"])]])), .ecdsaP256)
        let ios = try XCTUnwrap(AuthenticatorDescriptor.all(for: .ios).first)
        XCTAssertNil(ios.scheme(satisfying: Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1001"], authenticationAlgorithms: [9])]])))
    }

    func testTheSimulatedSecureEnclaveEnforcesItsOwnAccessControl() async throws {
        let platform = SimulatedPlatform(
            storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("enclave-\(UUID().uuidString)"))
        platform.enableHardwareKeyStore()
        let enclave = try XCTUnwrap(platform.hardwareKeyStore)
        let bound = try enclave.createKey(
            tag: "bound", access: HardwareKeyAccess(userVerification: .biometry(currentSet: true, passcodeFallback: false), requiresDeviceLock: true))
        let loose = try enclave.createKey(
            tag: "loose", access: HardwareKeyAccess(userVerification: .biometry(currentSet: false, passcodeFallback: false), requiresDeviceLock: true)
        )
        let message: [UInt8] = Array("signed data".utf8)
        let signature = try await enclave.sign(tag: "bound", message: message)
        XCTAssertTrue(
            try P256.Signing.PublicKey(x963Representation: bound)
                .isValidSignature(P256.Signing.ECDSASignature(derRepresentation: signature), for: message))
        platform.changeBiometricSet()
        do {
            _ = try await enclave.sign(tag: "bound", message: message)
            XCTFail()
        } catch { guard case .keyGone = error else { return XCTFail("\(error)") } }
        _ = try await enclave.sign(tag: "loose", message: message)
        platform.setDeviceLock(false)
        platform.setDeviceLock(true)
        do {
            _ = try await enclave.sign(tag: "loose", message: message)
            XCTFail()
        } catch { guard case .keyGone = error else { return XCTFail("\(error)") } }
        XCTAssertEqual(loose.count, 65)
        enclave.deleteKey(tag: "bound")
        do {
            _ = try await enclave.sign(tag: "bound", message: message)
            XCTFail()
        } catch { guard case .keyGone = error else { return XCTFail("\(error)") } }
    }

    func testTheTracerPidOfProcStatusIsRead() {
        XCTAssertEqual(SoftwarePlatform.tracerPID(inProcessStatus: "Name:\tx\nTracerPid:\t0\nUid:\t1"), 0)
        XCTAssertEqual(SoftwarePlatform.tracerPID(inProcessStatus: "Name:\tx\nTracerPid:\t4242\n"), 4242)
        XCTAssertNil(SoftwarePlatform.tracerPID(inProcessStatus: "Name:\tx\n"))
    }

    func testASoftwarePlatformWithATracerRefusesToRun() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-status-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let status = directory.appendingPathComponent("status")
        try "Name:\tapp\nTracerPid:\t777\n".write(to: status, atomically: true, encoding: .utf8)
        let traced = SoftwarePlatform(
            storageDirectory: directory, applicationFacetId: "linux:test", storageKDFCost: 1024, deviceProfile: .ios,
            processStatusPath: status.path)
        XCTAssertThrowsError(try traced.checkIntegrity()) { error in
            guard case .deviceProtection(let reason) = error as? PlatformIntegrityError else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("777"))
        }
        let real = SoftwarePlatform(storageDirectory: directory, applicationFacetId: "linux:test")
        XCTAssertNoThrow(try real.checkIntegrity(), "this test process is not traced")
    }

    func testRetryPolicyDelays() {
        XCTAssertNil(RetryPolicy.noRetry.delay(beforeRetry: 1))
        XCTAssertEqual(RetryPolicy.constant(maxRetries: 2, delayInSeconds: 1).delay(beforeRetry: 2), 1)
        XCTAssertNil(RetryPolicy.constant(maxRetries: 2, delayInSeconds: 1).delay(beforeRetry: 3))
        let exponential = RetryPolicy.exponential(maxRetries: 4, initialDelayInSeconds: 1, multiplier: 2, maximumDelayInSeconds: 5)
        XCTAssertEqual((1...4).map { exponential.delay(beforeRetry: $0) }, [1, 2, 4, 5])
    }

    func testATrustedFacetListIsRememberedForFiveMinutesOnly() {
        let cache = TrustedFacetsCache()
        let now = Date()
        XCTAssertFalse(cache.isTrusted(appID: "https://rp.example/facets", now: now))
        cache.remember(appID: "https://rp.example/facets", now: now)
        XCTAssertTrue(cache.isTrusted(appID: "https://rp.example/facets", now: now.addingTimeInterval(299)))
        XCTAssertFalse(cache.isTrusted(appID: "https://rp.example/facets", now: now.addingTimeInterval(300)))
        XCTAssertFalse(cache.isTrusted(appID: "https://other.example/facets", now: now))
    }

    func testTheSDKsVersionIsTheProductVersionWithItsProtocolAndPlatform() {
        let version = MetaData.mobileAuthenticationVersion
        XCTAssertEqual([version.major, version.minor, version.patch], [ProductVersion.major, ProductVersion.minor, ProductVersion.patch])
        #if os(Linux)
        XCTAssertEqual(version.descriptionWithBuild, "\(ProductVersion.text) (FIDO UAF 1.1, Linux)")
        #else
        XCTAssertEqual(version.descriptionWithBuild, "\(ProductVersion.text) (FIDO UAF 1.1, Apple)")
        #endif
    }

    func testTheDefaultFacetNamesTheRunningProgram() {
        #if canImport(Darwin)
        XCTAssertEqual(
            MetaData.applicationFacetId, Bundle.main.bundleIdentifier.map { "ios:bundle-id:\($0)" } ?? "linux:\(ProcessInfo.processInfo.processName)")
        #else
        XCTAssertEqual(MetaData.applicationFacetId, "linux:\(ProcessInfo.processInfo.processName)")
        #endif
    }
}
