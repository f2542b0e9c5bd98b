import NIOConcurrencyHelpers

/// Values remembered for their keys, at most `limit` of them; past that the memory starts over. What the server
/// remembers to spare repeated work on a hot path (the JSON text of a policy, the handles of a metric series), where
/// a forgotten value is simply made again.
final class BoundedMemory<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let entries = NIOLockedValueBox([Key: Value]())
    private let limit: Int
    init(limit: Int) { self.limit = limit }

    /// The value remembered for `key`, or the one `make` gives, then remembered. A failure is not remembered.
    func value(for key: Key, make: () throws -> Value) rethrows -> Value {
        if let value = entries.withLockedValue({ $0[key] }) { return value }
        let value = try make()
        remember(value, for: key)
        return value
    }

    /// Remembers `value` for `key` (made elsewhere: the other direction of a two-way memory).
    func remember(_ value: Value, for key: Key) {
        entries.withLockedValue { entries in
            if entries.count >= limit { entries.removeAll(keepingCapacity: true) }
            entries[key] = value
        }
    }
}
