import Foundation

/// An operation built by a builder and started with ``execute()``.
public protocol Operation: Sendable {
    /// Starts the operation; the result is delivered to the builder's callbacks.
    func execute()
}

/// An operation that talks to the server.
public protocol HttpOperation: Operation {
    /// Alternating header names and values, as decoded from a flat array by the cross-platform bridges.
    typealias RequestHeaders = [String]
    /// Adds headers to every request of the operation.
    @discardableResult func requestHeaders(_ headers: RequestHeaders) -> Self
}

extension Array where Element == String {
    /// Pairs a flat name/value list; a trailing name without value is ignored.
    var headerPairs: [(String, String)] {
        stride(from: 0, to: count - 1, by: 2).map { (self[$0], self[$0 + 1]) }
    }
}

/// The callback form shared by the operations: runs `body` in a task and hands its outcome to the builder's
/// callbacks on the client's callback queue.
func deliver<Value: Sendable, Failure: Error>(
    on callbacks: CallbackQueue, _ body: @escaping @Sendable () async throws(Failure) -> Value,
    onSuccess: (@Sendable (Value) -> Void)?, onError: (@Sendable (Failure) -> Void)?
) {
    Task {
        do throws(Failure) {
            let value = try await body()
            if let onSuccess { callbacks.run { onSuccess(value) } }
        } catch {
            if let onError { callbacks.run { onError(error) } }
        }
    }
}

/// The callback form of the operations without a result.
func deliver<Failure: Error>(
    on callbacks: CallbackQueue, _ body: @escaping @Sendable () async throws(Failure) -> Void,
    onSuccess: (@Sendable () -> Void)?, onError: (@Sendable (Failure) -> Void)?
) {
    Task {
        do throws(Failure) {
            try await body()
            if let onSuccess { callbacks.run(onSuccess) }
        } catch {
            if let onError { callbacks.run { onError(error) } }
        }
    }
}

/// The callback form of the operations whose result carries its own errors (`onResult`).
func deliver<Value: Sendable>(on callbacks: CallbackQueue, _ body: @escaping @Sendable () async -> Value, onResult: (@Sendable (Value) -> Void)?) {
    Task {
        let value = await body()
        if let onResult { callbacks.run { onResult(value) } }
    }
}
