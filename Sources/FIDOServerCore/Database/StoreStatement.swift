import SQLKit

/// A store's statement, written as SQLKit's `SQLQueryString` is (`"… \(bind: value) … \(unsafeRaw: text) …"`, or
/// another statement interpolated), and serialized to the same text and values in every dialect; a test holds the two
/// equal.
///
/// Why not `SQLQueryString` on the request path: it keeps each value in a fragment boxed on the heap (an allocation
/// per value), and reserves room for as many fragments as its literal has characters, 1 to 10 KB a statement, too
/// large for the allocator's per-thread cache. Here a statement is one array of its parts, each value and nested
/// statement stored in place, with room for exactly its parts: one allocation whatever its number of values.
package struct StoreStatement: SQLExpression, ExpressibleByStringInterpolation, StringInterpolationProtocol, Sendable {
    private enum Part: Sendable {
        case text(String)
        case value(any Encodable & Sendable)
        case statement(StoreStatement)
    }

    private var parts: [Part]

    package init(stringLiteral text: String) { parts = [.text(text)] }

    package init(stringInterpolation: StoreStatement) { self = stringInterpolation }

    package init(literalCapacity: Int, interpolationCount: Int) {
        parts = []
        // A literal piece before, between and after the interpolations.
        parts.reserveCapacity(2 * interpolationCount + 1)
    }

    package mutating func appendLiteral(_ literal: String) {
        if !literal.isEmpty { parts.append(.text(literal)) }
    }

    /// A value, bound (`SQLBind`).
    package mutating func appendInterpolation(bind value: any Encodable & Sendable) { parts.append(.value(value)) }

    /// Values, bound and separated by commas (`SQLList` of `SQLBind`s).
    package mutating func appendInterpolation(binds values: [any Encodable & Sendable]) {
        for (index, value) in values.enumerated() {
            if index > 0 { parts.append(.text(", ")) }
            parts.append(.value(value))
        }
    }

    /// Text written as it is (`SQLRaw`): column lists and other texts of our own, never a caller's.
    package mutating func appendInterpolation(unsafeRaw raw: String) { parts.append(.text(raw)) }

    /// Another statement, its values among this one's in place.
    package mutating func appendInterpolation(_ statement: StoreStatement) { parts.append(.statement(statement)) }

    package func serialize(to serializer: inout SQLSerializer) {
        for part in parts {
            switch part {
            case .text(let text): serializer.write(text)
            case .value(let value): serializer.write(bind: value)
            case .statement(let statement): statement.serialize(to: &serializer)
            }
        }
    }
}

extension StoreStatement {
    /// The two statements' texts one after the other, with their values.
    package static func + (lhs: StoreStatement, rhs: StoreStatement) -> StoreStatement {
        var joined = lhs
        joined.appendInterpolation(rhs)
        return joined
    }

    package static func += (lhs: inout StoreStatement, rhs: StoreStatement) { lhs.appendInterpolation(rhs) }
}

extension Array where Element == StoreStatement {
    /// The statements one after the other, `separator` between them (a list of rows, of conditions).
    package func joined(separator: String) -> StoreStatement {
        var joined = StoreStatement(literalCapacity: 0, interpolationCount: count)
        for (index, statement) in enumerated() {
            if index > 0 { joined.appendLiteral(separator) }
            joined.appendInterpolation(statement)
        }
        return joined
    }
}

/// Runs a ``StoreStatement`` as SQLKit's `SQLRawBuilder` runs an `SQLQueryString` (`run()`, `first()`, `all()`), without
/// wrapping it in one.
package final class StoreStatementBuilder: SQLQueryBuilder, SQLQueryFetcher {
    private let statement: StoreStatement
    package let database: any SQLDatabase
    package var query: any SQLExpression { statement }

    init(_ statement: StoreStatement, on database: any SQLDatabase) {
        self.statement = statement
        self.database = database
    }
}

extension SQLDatabase {
    /// Runs a store's statement (``StoreStatement``), as `raw(_:)` runs an `SQLQueryString`.
    func statement(_ statement: StoreStatement) -> StoreStatementBuilder { StoreStatementBuilder(statement, on: self) }
}
