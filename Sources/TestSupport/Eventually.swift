/// Waits until `condition` holds, checking it every `every`, for at most `within`; answers whether it came to hold.
/// What a test orders events by when the code under test gives no signal of its own: a deadline on an observable
/// state, never a fixed pause that guesses how long the machine takes. For what must not happen, the deadline is the
/// window it is watched for: `XCTAssertFalse(try await eventually(within: .milliseconds(300)) { closed.isSet })`.
public func eventually(
    within limit: Duration = .seconds(10), every pause: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: pause)
    }
    return try await condition()
}
