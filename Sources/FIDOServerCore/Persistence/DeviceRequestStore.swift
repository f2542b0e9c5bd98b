import Foundation
import SQLKit

/// Request ids of device-signed requests, remembered per dispatch target to refuse replays (server-api §C.3).
public struct DeviceRequestStore: Sendable {
    let database: StoreDatabase

    /// Records the request id; false when it was already used (a replay).
    public func remember(dispatchTargetId: String, requestId: String, until: Date) async throws -> Bool {
        try await database.run { sql in
            try await sql.statement(
                """
                INSERT INTO device_requests (dispatch_target_id, request_id, expires_at)
                VALUES (\(bind: dispatchTargetId), \(bind: requestId), \(bind: until.epochMillis))
                ON CONFLICT DO NOTHING RETURNING request_id
                """
            ).first() != nil
        }
    }

    /// Removes request ids that expired before `date`, `batch` per statement; returns how many.
    public func purge(expiredBefore date: Date, batch: Int = StoreDatabase.purgeBatch) async throws -> Int {
        try await database.deleteExpired(from: "device_requests", before: date.epochMillis, batch: batch)
    }
}
