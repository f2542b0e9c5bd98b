import Foundation

/// Lock-protected builder state shared by the builders.
package final class BuilderState<Fields: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var fields: Fields
    package init(_ fields: Fields) { self.fields = fields }
    package func update(_ body: (inout Fields) -> Void) { lock.withLock { body(&fields) } }
    package var value: Fields { lock.withLock { fields } }
}
