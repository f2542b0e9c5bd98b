import Foundation
import Primitives
import SQLKit

/// Secrets every instance shares, by name, made once by whichever instance asks first: two instances starting together
/// may both offer one, and both read the one that was kept. Whoever can read the database reads them, as the signing
/// keys (see the production checklist).
public struct ServerSecretStore: Sendable {
    let database: StoreDatabase

    /// The secret called `name`, kept from now on if none was: `candidate` (random bytes the caller made) when this
    /// call made it.
    public func secret(named name: String, candidate: [UInt8], now: Date) async throws -> [UInt8] {
        let text = try await database.run { sql -> String? in
            try await sql.statement(
                """
                INSERT INTO server_secrets (name, secret, created_at) VALUES (\(bind: name), \(bind: Base64URL.encode(candidate)), \(bind: now.epochMillis))
                ON CONFLICT DO NOTHING
                """
            ).run()
            return try await sql.statement("SELECT secret FROM server_secrets WHERE name = \(bind: name)").first()?.decode(
                column: "secret", as: String.self)
        }
        guard let text, let bytes = Base64URL.decodeBytes(text), !bytes.isEmpty else {
            throw StoreError.malformedRow("server_secrets \(name) is missing or not base64url")
        }
        return bytes
    }
}
