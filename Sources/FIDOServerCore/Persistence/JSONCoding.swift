import Foundation
import Primitives
import SQLKit
import UAF
import WireJSON

/// JSON columns: the one place values become column text and back.
enum JSONCoding {
    /// A request's Policy, the largest column a request writes: every registration request names every authenticator
    /// of the metadata, so most requests store the very same policy, and encoding and decoding it was about a tenth
    /// of the server's CPU under registration load. The text of a policy (and the policy of a text) is remembered for
    /// the policies seen last; the encoding is deterministic (sorted keys), so a remembered text is exactly what
    /// encoding would give.
    ///
    /// A step-up request's policy names its user's keys, so it differs per user; its response, a few milliseconds
    /// later, reads back the very text its request wrote. So encoding a policy also remembers the policy its text
    /// stands for, and the memory holds about a second of requests: the response's decoding is then a look-up
    /// (encoding and decoding the policy column were about 2 % of the server's CPU under step-up login load).
    static func string(_ policy: Policy) throws -> String {
        try policyTexts.value(for: policy) {
            let text = try encoded(policy)
            policies.remember(policy, for: text)
            return text
        }
    }
    static func value(_ type: Policy.Type, _ text: String) throws -> Policy { try policies.value(for: text) { try decoded(Policy.self, text) } }

    /// Policies remembered each way; past that many the memory starts over. About a second of step-up requests at
    /// the rates measured (a few thousand a second), at most a few MiB.
    static let policyMemory = 4096
    private static let policyTexts = BoundedMemory<Policy, String>(limit: policyMemory)
    private static let policies = BoundedMemory<String, Policy>(limit: policyMemory)

    static func string<T: Encodable>(_ value: T) throws -> String { try encoded(value) }
    static func value<T: Decodable>(_ type: T.Type, _ text: String) throws -> T { try decoded(type, text) }

    private static func encoded<T: Encodable>(_ value: T) throws -> String {
        try WireJSONEncoder().encodeToString(value)
    }
    private static func decoded<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        do { return try WireJSONDecoder().decode(T.self, from: text) } catch {
            throw StoreError.malformedRow("JSON column of \(T.self)")
        }
    }
}
