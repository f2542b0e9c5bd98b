import Crypto
import Foundation
import Primitives
import SQLKit
import UAF
import WebAuthn

/// A column's value as the database holds it: the only three the durable tables use (TEXT, BIGINT, NULL).
package enum ColumnValue: Hashable, Sendable {
    case text(String), integer(Int64), null
}

/// One field of a record of the export format: the column it is kept in, its name in the file, and the shape its
/// value must have there. The file's value and the column's are converted here, both ways, and nowhere else.
package struct PortableField: Sendable {
    package enum Shape: Sendable, Equatable {
        /// Stored text, written as a JSON string: at most `maxBytes` UTF-8 bytes, no control characters (a PEM key
        /// may hold line breaks, `multiline`).
        case text(maxBytes: Int, multiline: Bool = false)
        /// Stored text that is base64url without padding (RFC 4648 §5), of at most `maxBytes` decoded bytes.
        case base64url(maxBytes: Int)
        /// A whole number in `range`.
        case integer(ClosedRange<Int64>)
        /// Stored 0 or 1, written `false` or `true`.
        case boolean
        /// Stored as milliseconds since 1970, written as UTC in RFC 3339 with milliseconds (`2026-11-28T16:23:15.123Z`).
        case time
        /// Stored as comma-joined text, written as an array of strings of letters, digits and `-`.
        case list(maxItems: Int)
        /// One of the listed strings.
        case oneOf([String])
    }

    package let column: String
    package let name: String
    package let shape: Shape
    package let optional: Bool

    init(_ column: String, _ name: String, _ shape: Shape, optional: Bool = false) {
        self.column = column
        self.name = name
        self.shape = shape
        self.optional = optional
    }

    /// Whether the column holds BIGINT (else TEXT).
    var isInteger: Bool {
        switch shape {
        case .integer, .boolean, .time: return true
        case .text, .base64url, .list, .oneOf: return false
        }
    }
}

/// One kind of record of the export format (`mauth admin export`): the table it comes from, the columns that
/// identify a record (its key) or must be unique among all, and its fields. The durable records only: what the
/// server keeps for minutes (ceremonies, sessions, status records, dispatch tokens, replay guards) and the audit
/// trail stay where they are.
package struct PortableKind: Sendable {
    package let name: String
    package let table: String
    /// The columns that identify a record, in the order the file lists records by.
    package let key: [String]
    /// Other columns (or sets of them) no two records may share.
    let unique: [[String]]
    package let fields: [PortableField]
    /// Whether it is a secret of the server's own (token-signing keys, shared secrets): exported only when asked.
    package let isServerKey: Bool
    /// Reads a row as the server does (its store's reader), and checks what makes the record usable: a key that
    /// cannot be read would never verify a login. Throws the reason.
    let check: @Sendable (any SQLRow) throws -> Void
    /// A value every record of one group holds alike, if the kind has one (a user's passkeys share her user handle).
    var shared: SharedValue? = nil

    /// Every record whose `group` column holds one value holds one value in `column` too; `words` names it in a
    /// report ("user handle").
    struct SharedValue: Sendable {
        let column: String
        let group: String
        let words: String
    }

    package func field(column: String) -> PortableField? { fields.first { $0.column == column } }

    /// The values a row holds in `columns`, in their order (a missing one as NULL): a key, or a unique set.
    static func values(of columns: [String], in row: [String: ColumnValue]) -> [ColumnValue] { columns.map { row[$0] ?? .null } }

    /// Every kind, in the order a file lists them.
    package static let all: [PortableKind] = [
        PortableKind(
            name: "user", table: "auth_cloud_users", key: ["user_id"], unique: [["username"]],
            fields: [
                .init("user_id", "userId", .text(maxBytes: 256)),
                .init("username", "username", .text(maxBytes: 256)),
                .init("created_at", "createdAt", .time),
                .init("updated_at", "updatedAt", .time),
                .init("created_by", "createdBy", .text(maxBytes: 64), optional: true),
            ], isServerKey: false, check: { _ = try AuthCloudUserStore.record($0) }),
        PortableKind(
            name: "registration", table: "registrations", key: ["aaid", "key_id"], unique: [],
            fields: [
                .init("aaid", "aaid", .text(maxBytes: 9)),
                .init("key_id", "keyId", .text(maxBytes: 1024)),
                .init("username", "username", .text(maxBytes: 256)),
                .init("public_key", "publicKey", .base64url(maxBytes: 8192)),
                .init("public_key_encoding", "publicKeyEncoding", .integer(0...0xFFFF)),
                .init("signature_algorithm", "signatureAlgorithm", .integer(0...0xFFFF)),
                .init("sign_counter", "signCounter", .integer(0...Int64(UInt32.max))),
                .init("registration_counter", "registrationCounter", .integer(0...Int64(UInt32.max))),
                .init("authenticator_version", "authenticatorVersion", .integer(0...0xFFFF)),
                .init("attestation_type", "attestationType", .integer(0...0xFFFF)),
                .init("created_at", "createdAt", .time),
                .init("device_id", "deviceId", .text(maxBytes: 128), optional: true),
                .init("app_attestation", "appAttestation", .text(maxBytes: 1024), optional: true),
                .init("app_attest_key_id", "appAttestKeyId", .base64url(maxBytes: 64), optional: true),
            ], isServerKey: false,
            check: { row in
                let record = try RegistrationStore.record(row)
                // The AAID as the server stores it (upper-case hex), so that a login's AAID finds the key.
                guard record.aaid == AAID.normalized(record.aaid), AAID.isValid(record.aaid) else {
                    throw StoreError.malformedRow("aaid \(record.aaid) is not four upper-case hex digits, #, four more")
                }
                guard UAFPublicKey(bytes: record.publicKey, encoding: record.publicKeyEncoding) != nil else {
                    throw StoreError.malformedRow("publicKey is no key of its publicKeyEncoding \(record.publicKeyEncoding.rawValue)")
                }
            }),
        PortableKind(
            name: "passkey", table: "passkeys", key: ["credential_id"], unique: [],
            fields: [
                .init("credential_id", "credentialId", .base64url(maxBytes: 1023)),
                .init("username", "username", .text(maxBytes: 256)),
                .init("user_handle", "userHandle", .base64url(maxBytes: 64)),
                .init("public_key", "publicKey", .base64url(maxBytes: 8192)),
                .init("sign_count", "signCount", .integer(0...Int64(UInt32.max))),
                .init("uv_initialized", "uvInitialized", .boolean),
                .init("backup_eligible", "backupEligible", .boolean),
                .init("backup_state", "backupState", .boolean),
                .init("transports", "transports", .list(maxItems: 16)),
                .init("aaguid", "aaguid", .text(maxBytes: 36)),
                .init("attestation_format", "attestationFormat", .text(maxBytes: 32)),
                .init("attestation_type", "attestationType", .text(maxBytes: 32)),
                .init("discoverable", "discoverable", .boolean, optional: true),
                .init("name", "name", .text(maxBytes: 256), optional: true),
                .init("created_at", "createdAt", .time),
                .init("last_used_at", "lastUsedAt", .time, optional: true),
                .init("trust", "trust", .oneOf(["trusted", "untrusted"]), optional: true),
            ], isServerKey: false,
            check: { row in
                let record = try PasskeyStore.record(row)
                do { _ = try COSEKey(bytes: record.publicKey) } catch {
                    throw StoreError.malformedRow("publicKey is no COSE key this server verifies: \(error)")
                }
            },
            // One user handle per user: a browser signing in without a username finds her by it.
            shared: .init(column: "user_handle", group: "username", words: "user handle")),
        PortableKind(
            name: "dispatchTarget", table: "dispatch_targets", key: ["id"], unique: [["ext_id"], ["username", "name"]],
            fields: [
                .init("id", "id", .text(maxBytes: 128)),
                .init("ext_id", "extId", .text(maxBytes: 128)),
                .init("username", "username", .text(maxBytes: 256)),
                .init("name", "name", .text(maxBytes: 256)),
                .init("device_id", "deviceId", .text(maxBytes: 128), optional: true),
                .init("dispatcher", "dispatcher", .text(maxBytes: 64)),
                .init("target", "target", .text(maxBytes: 4096), optional: true),
                .init("signature_key", "signatureKey", .text(maxBytes: 4096)),
                .init("encryption_key", "encryptionKey", .text(maxBytes: 4096), optional: true),
                .init("created_at", "createdAt", .time),
                .init("updated_at", "updatedAt", .time),
            ], isServerKey: false, check: { _ = try DispatchTargetStore.record($0) }),
        PortableKind(
            name: "appAttestKey", table: "app_attest_keys", key: ["key_id"], unique: [],
            fields: [
                .init("key_id", "keyId", .base64url(maxBytes: 64)),
                .init("app_id", "appId", .text(maxBytes: 256)),
                .init("environment", "environment", .oneOf(["production", "development"])),
                .init("public_key", "publicKey", .base64url(maxBytes: 256)),
                .init("counter", "counter", .integer(0...Int64(UInt32.max))),
                .init("receipt", "receipt", .base64url(maxBytes: 65_536)),
                .init("created_at", "createdAt", .time),
                .init("last_used_at", "lastUsedAt", .time),
            ], isServerKey: false, check: { _ = try AppAttestKeyStore.key($0) }),
        PortableKind(
            name: "accessKey", table: "access_keys", key: ["id"], unique: [["key_hash"]],
            fields: [
                .init("id", "id", .text(maxBytes: 128)),
                .init("name", "name", .text(maxBytes: 200)),
                .init("key_hash", "keyHash", .text(maxBytes: 128)),
                .init("created_at", "createdAt", .time),
                .init("revoked_at", "revokedAt", .time, optional: true),
            ], isServerKey: false, check: { _ = try AccessKeyStore.record($0) }),
        PortableKind(
            name: "signingKey", table: "signing_keys", key: ["kid"], unique: [],
            fields: [
                .init("kid", "kid", .text(maxBytes: 128)),
                .init("private_key_pem", "privateKeyPem", .text(maxBytes: 4096, multiline: true)),
                .init("created_at", "createdAt", .time),
                .init("activated_at", "activatedAt", .time, optional: true),
                .init("retired_at", "retiredAt", .time, optional: true),
            ], isServerKey: true,
            check: { row in
                let record = try SigningKeyStore.record(row)
                do { _ = try P256.Signing.PrivateKey(pemRepresentation: record.pem) } catch {
                    throw StoreError.malformedRow("privateKeyPem is no P-256 private key")
                }
            }),
        PortableKind(
            name: "serverSecret", table: "server_secrets", key: ["name"], unique: [],
            fields: [
                .init("name", "name", .text(maxBytes: 128)),
                .init("secret", "secret", .text(maxBytes: 4096)),
                .init("created_at", "createdAt", .time),
            ], isServerKey: true, check: { _ in }),
    ]

    package static func named(_ name: String) -> PortableKind? { all.first { $0.name == name } }
}

/// A record as a row: the values of a file's record, read by a store's reader as if the database had returned them.
struct PortableRow: SQLRow {
    let values: [String: ColumnValue]

    var allColumns: [String] { Array(values.keys) }
    func contains(column: String) -> Bool { values[column] != nil }
    func decodeNil(column: String) throws -> Bool { (values[column] ?? .null) == .null }

    func decode<D: Decodable>(column: String, as type: D.Type) throws -> D {
        let value = values[column] ?? .null
        let candidates: [Any]
        switch value {
        case .text(let text): candidates = [text, Optional(text) as Any]
        case .integer(let number): candidates = [number, Optional(number) as Any, Int(number), Optional(Int(number)) as Any]
        case .null: candidates = [String?.none as Any, Int64?.none as Any, Int?.none as Any]
        }
        for candidate in candidates { if let decoded = candidate as? D { return decoded } }
        throw StoreError.malformedRow("\(column) is not a \(D.self)")
    }
}
