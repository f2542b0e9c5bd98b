#if os(Linux)
import Foundation

// The subset of DeviceCheck that `AppleAppAttestService` calls, with Apple's names and signatures (the async forms
// Swift gives its completion-handler methods). What it answers is scripted per test through `script`.

public struct DCError: Error, Hashable {
    public enum Code: Int, Sendable {
        case unknownSystemFailure = 0
        case featureUnsupported = 1
        case invalidInput = 2
        case invalidKey = 3
        case serverUnavailable = 4
    }
    public let code: Code
    public init(_ code: Code) { self.code = code }
}

public final class DCAppAttestService: @unchecked Sendable {
    public static let shared = DCAppAttestService()

    /// What the scripted service does: whether it is supported, the error each call throws (nil: it answers), and the
    /// calls it received.
    public struct Script: Sendable {
        public var isSupported = true
        public var failure: DCError?
        public var calls: [String] = []
        public init() {}
    }
    private let lock = NSLock()
    private var _script = Script()
    public var script: Script {
        get { lock.withLock { _script } }
        set { lock.withLock { _script = newValue } }
    }

    public var isSupported: Bool { script.isSupported }

    private func answer<T>(_ call: String, _ value: T) throws -> T {
        try lock.withLock {
            _script.calls.append(call)
            if let failure = _script.failure { throw failure }
            return value
        }
    }

    public func generateKey() async throws -> String { try answer("generateKey", Data(repeating: 7, count: 32).base64EncodedString()) }
    public func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        try answer("attestKey \(keyId) \(clientDataHash.count)", Data("attestation".utf8))
    }
    public func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        try answer("generateAssertion \(keyId) \(clientDataHash.count)", Data("assertion".utf8))
    }
}
#endif
