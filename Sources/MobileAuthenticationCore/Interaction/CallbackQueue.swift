import Dispatch

/// Where the SDK calls the app's code: the operations' result callbacks (`onSuccess`, `onError`, `onResult`, …) and
/// the methods of the interaction objects (selectors, enrollers, verifiers, policies). One queue for both, so an app
/// that updates its UI in them needs no hop of its own, as with the Nevis SDK.
package struct CallbackQueue: Sendable {
    /// `nil`: the SDK's own executor, at once and on whatever thread its task runs.
    package let queue: DispatchQueue?

    package init(_ queue: DispatchQueue?) { self.queue = queue }

    /// The main queue on Apple platforms, where UIKit and SwiftUI expect to be called. Elsewhere the SDK's own
    /// executor: a command-line tool or a server on Linux has no main run loop that would drain the main queue.
    package static var platformDefault: DispatchQueue? {
        #if canImport(Darwin)
        return .main
        #else
        return nil
        #endif
    }

    /// Runs `body` on the queue (asynchronously), or now when there is none.
    package func run(_ body: @escaping @Sendable () -> Void) {
        guard let queue else { return body() }
        queue.async(execute: body)
    }
}
