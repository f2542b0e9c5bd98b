import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresKit
import PostgresNIO
import SQLKit

/// Why a prepared statement's row could not be read.
enum PreparedRowError: Error, Equatable, CustomStringConvertible {
    case missingColumn(String)
    case unsupportedType(String, String)
    var description: String {
        switch self {
        case .missingColumn(let column): return "no column \(column) in the result"
        case .unsupportedType(let column, let type): return "column \(column) cannot be read as \(type)"
        }
    }
}
