import Dispatch
import Foundation
import MobileAuthenticationSimulator
import XCTest

@testable import MobileAuthentication
@testable import MobileAuthenticationCore

final class CallbackQueueTests: XCTestCase {
    var directory: URL!
    override func setUp() { directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-callbacks-\(UUID().uuidString)") }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    private func makeClient(queue: DispatchQueue?, interactionTimeout: Int = 5) async throws -> (any MobileAuthenticationClient, InMemoryRelyingParty)
    {
        let made = try await makeInMemoryClient(in: directory, callbackQueue: queue, interactionTimeout: interactionTimeout)
        return (made.client, made.party)
    }

    func testEveryInteractionAndResultCallbackRunsOnTheConfiguredQueue() async throws {
        let witness = CallWitness(label: "app.callbacks")
        let (client, _) = try await makeClient(queue: witness.queue)
        let registered = expectation(description: "registered")
        client.operations.registration.username("alice").deviceInformation(DeviceInformation(name: "unit"))
            .authenticatorSelector(WitnessedSelector(witness, choose: "F1D0#1001"))
            .pinEnroller(WitnessedPinEnroller(witness, pins: ["12", "123456"]))
            .onSuccess {
                witness.note("registration.onSuccess")
                registered.fulfill()
            }
            .onError { error in
                witness.note("registration.onError \(error)")
                registered.fulfill()
            }
            .execute()
        await fulfillment(of: [registered], timeout: 20)

        let authenticated = expectation(description: "authenticated")
        client.operations.authentication.username("alice")
            .authenticatorSelector(WitnessedSelector(witness, choose: "F1D0#1001"))
            .pinUserVerifier(WitnessedPinVerifier(witness, pins: ["654321", "123456"]))
            .onSuccess { _ in
                witness.note("authentication.onSuccess")
                authenticated.fulfill()
            }
            .onError { error in
                witness.note("authentication.onError \(error)")
                authenticated.fulfill()
            }
            .execute()
        await fulfillment(of: [authenticated], timeout: 20)

        // The invalid PIN and the wrong PIN each ask again: every question is on the queue, not only the first.
        XCTAssertEqual(
            witness.names,
            [
                "selectAuthenticator", "enrollPin", "enrollPin", "valid", "registration.onSuccess",
                "selectAuthenticator", "verifyPin", "verifyPin", "valid", "authentication.onSuccess",
            ])
        XCTAssertEqual(witness.offQueue, [])
    }

    func testAFailureIsDeliveredOnTheConfiguredQueue() async throws {
        let witness = CallWitness(label: "app.failures")
        let (client, party) = try await makeClient(queue: witness.queue)
        party.fail("uaf/1.1/registration", with: [.status(1498)])
        let failed = expectation(description: "failed")
        client.operations.registration.username("bob").deviceInformation(DeviceInformation(name: "unit"))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: "F1D0#1001")).pinEnroller(ScriptedPinEnroller(pins: ["123456"]))
            .onSuccess {
                witness.note("onSuccess")
                failed.fulfill()
            }
            .onError { _ in
                witness.note("onError")
                failed.fulfill()
            }
            .execute()
        await fulfillment(of: [failed], timeout: 20)
        XCTAssertEqual(witness.names, ["onError"])
        XCTAssertEqual(witness.offQueue, [])
    }

    func testTheInitializerDeliversTheClientOnItsQueue() async throws {
        let witness = CallWitness(label: "app.initializer")
        let platform = SimulatedPlatform(storageDirectory: directory, deviceProfile: .ios)
        let created = expectation(description: "created")
        MobileAuthenticationClientInitializer().configuration(Configuration(baseUrl: URL(string: "https://rp.example")!))
            .platform(platform).callbackQueue(witness.queue)
            .onSuccess { _ in
                witness.note("onSuccess")
                created.fulfill()
            }
            .onError { _ in
                witness.note("onError")
                created.fulfill()
            }
            .execute()
        await fulfillment(of: [created], timeout: 20)
        XCTAssertEqual(witness.names, ["onSuccess"])
        XCTAssertEqual(witness.offQueue, [])
    }

    /// A busy queue (the main queue during a long layout) must not show a question whose operation already ended.
    func testAQuestionThatTimedOutWhileQueuedIsNeverShown() async throws {
        let witness = CallWitness(label: "app.busy")
        let (client, _) = try await makeClient(queue: witness.queue, interactionTimeout: 1)
        witness.queue.suspend()
        do {
            try await client.operations.registration.username("carol").deviceInformation(DeviceInformation(name: "unit"))
                .authenticatorSelector(WitnessedSelector(witness, choose: "F1D0#1001")).pinEnroller(ScriptedPinEnroller(pins: ["123456"]))
                .executeAsync()
            XCTFail("the question could not be answered in time")
        } catch {
            XCTAssertEqual(error.fidoErrorCode, .userNotResponsive)
        }
        witness.queue.resume()
        witness.queue.sync {}
        XCTAssertEqual(witness.names, [], "the selector was called after its operation had timed out")
    }

    /// A client made without `callbackQueue(_:)` asks the app on the main thread on Apple platforms and on the SDK's
    /// task elsewhere (a tool on Linux has no main run loop that would drain the main queue).
    func testWithoutAQueueTheAppIsAskedOnMainOnApplePlatformsAndOnTheSDKsTaskElsewhere() async throws {
        let platform = SimulatedPlatform(storageDirectory: directory, deviceProfile: .ios)
        let party = InMemoryRelyingParty(facetID: platform.applicationFacetId)
        let configuration = Configuration(
            baseUrl: URL(string: "https://rp.example")!, userInteractionTimeoutInSeconds: 5, facetId: platform.applicationFacetId)
        let client = try await MobileAuthenticationClientInitializer().configuration(configuration).platform(platform).transport(party).executeAsync()
        let witness = ThreadWitness()
        try await client.operations.registration.username("alice").deviceInformation(DeviceInformation(name: "unit"))
            .authenticatorSelector(ThreadNotingSelector(witness)).pinEnroller(ScriptedPinEnroller(pins: ["123456"]))
            .executeAsync()
        #if canImport(Darwin)
        XCTAssertEqual(witness.onMain, [true])
        #else
        XCTAssertEqual(witness.onMain, [false])
        #endif
        await client.shutdown()
    }
}

extension CallbackQueueTests {
    /// The Apple default, run here: the main queue is served while the test waits, as a UI app's run loop serves it.
    func testTheMainQueueReceivesQuestionsAndResults() async throws {
        let (client, _) = try await makeClient(queue: .main)
        let threads = ThreadWitness()
        let registered = expectation(description: "registered")
        client.operations.registration.username("dave").deviceInformation(DeviceInformation(name: "unit"))
            .authenticatorSelector(ThreadNotingSelector(threads)).pinEnroller(ScriptedPinEnroller(pins: ["123456"]))
            .onSuccess {
                threads.note()
                registered.fulfill()
            }
            .onError { _ in
                threads.note()
                registered.fulfill()
            }
            .execute()
        await fulfillment(of: [registered], timeout: 20)
        XCTAssertEqual(threads.onMain, [true, true])
    }
}

private final class ThreadWitness: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [Bool] = []
    func note() {
        let main = Thread.isMainThread
        lock.withLock { seen.append(main) }
    }
    var onMain: [Bool] { lock.withLock { seen } }
}

private final class ThreadNotingSelector: AuthenticatorSelector, @unchecked Sendable {
    let threads: ThreadWitness
    init(_ threads: ThreadWitness) { self.threads = threads }
    func selectAuthenticator(context: any AuthenticatorSelectionContext, handler: any AuthenticatorSelectionHandler) {
        threads.note()
        handler.aaid("F1D0#1001")
    }
}
