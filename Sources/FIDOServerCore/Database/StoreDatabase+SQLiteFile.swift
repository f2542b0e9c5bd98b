import EmbeddedSQLite
import Foundation
import Primitives

/// What the server checks of an SQLite file before it writes anything beside it, and SQLite's refusals in words.
extension StoreDatabase {
    /// Refuses an existing file that is not an SQLite database, or whose schema cannot be read, before anything is
    /// written: the server writes its development certificate beside the database file, and SQLite itself says only
    /// "file is not a database" (error 26), and only once it reads. Reads the first 16 bytes, then (for a file that
    /// says it is SQLite) the schema on a read-only connection; a missing or empty file is a new database.
    public static func checkExistingFile(_ configuration: ServerConfiguration.Database) throws {
        guard case .sqlite(let path) = configuration, let handle = FileHandle(forReadingAtPath: path) else { return }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        if header.isEmpty { return }
        guard header == Data("SQLite format 3\0".utf8) else {
            throw ServerConfiguration.ConfigurationError.invalid(
                "database \(path): not an SQLite database (another kind of file): name the server's database file, or a new path")
        }
        do {
            try SQLiteEngine.checkReadable(path: path)
        } catch let error as SQLiteEngineError {
            // The header says SQLite, so "not a database" (26) here means its first page is damaged.
            let reason =
                [11, 26].contains(error.code & 0xFF)
                ? "the database file is damaged (it starts as SQLite, but its schema cannot be read): restore it from a backup"
                : sqliteReason(error)
            throw ServerConfiguration.ConfigurationError.invalid("database \(path): \(reason)")
        }
    }

    /// SQLite's result codes an operator can act on, in words.
    static func sqliteReason(_ error: SQLiteEngineError) -> String {
        switch error.code & 0xFF {
        case 26: return "not an SQLite database (another kind of file, or encrypted)"
        case 11: return "the database file is damaged (SQLite: \(error.message))"
        case 14: return "cannot be opened: check that its folder exists and may be written by this user"
        case 8: return "the database is read-only for this user"
        case 13: return "the disk is full"
        case 5, 6: return "the database is locked by another program (another server on the same file?)"
        case 23: return "permission denied"
        default: return "SQLite error \(error.code): \(error.message)"
        }
    }

    /// Creates the directory a file of `path` goes in, if it is missing (the SQLite file and what is kept beside it).
    package static func createDirectory(containing path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        guard !directory.isEmpty else { return }
        do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
            throw ServerConfiguration.ConfigurationError.invalid(
                "database \(path): cannot make its folder \(directory): \(SystemErrorText.reason(error))")
        }
    }
}
