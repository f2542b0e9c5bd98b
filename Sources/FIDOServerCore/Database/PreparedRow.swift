import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresKit
import PostgresNIO
import SQLKit

/// A result row of a prepared statement. PostgresNIO's older prepared-statement API (the one that takes a statement
/// text at run time) asks the server for binary results but labels the columns with the text format the server's
/// statement description reports; its newer, statically typed API corrects the label, this one does not. So each
/// cell is relabelled binary, which is what the bytes are, before it is decoded.
struct PreparedRow: SQLRow {
    let cells: [PostgresCell]

    init(_ row: PostgresRow) {
        cells = row.map { cell in
            var cell = cell
            cell.format = .binary
            return cell
        }
    }

    var allColumns: [String] { cells.map(\.columnName) }
    func contains(column: String) -> Bool { cells.contains { $0.columnName == column } }
    func decodeNil(column: String) throws -> Bool { try cell(column).bytes == nil }

    func decode<D: Decodable>(column: String, as: D.Type) throws -> D {
        let cell = try cell(column)
        guard let type = D.self as? any PostgresDecodable.Type else { throw PreparedRowError.unsupportedType(column, "\(D.self)") }
        return try Self.decode(cell, as: type)
    }

    private static func decode<T: PostgresDecodable, D>(_ cell: PostgresCell, as: T.Type) throws -> D {
        guard let value = try cell.decode(T.self, context: .default) as? D else {
            throw PreparedRowError.unsupportedType(cell.columnName, "\(D.self)")
        }
        return value
    }

    private func cell(_ column: String) throws -> PostgresCell {
        guard let cell = cells.first(where: { $0.columnName == column }) else { throw PreparedRowError.missingColumn(column) }
        return cell
    }
}
