import Foundation
import Logging
import Primitives

/// One security decision as the audit trail keeps it: when, which request, from where, who, what, and the outcome.
/// Written to the `mauth.audit` log stream and (`AuditTrail`) to the database.
public struct AuditEvent: Sendable, Equatable, Encodable {
    public var at: Date
    /// The request's `X-Request-Id` (the caller's, or one the server made).
    public var requestID: String?
    /// The client's address: the peer, or behind a trusted proxy the client it names (`clientAddress`).
    public var clientAddress: String?
    /// Who presented a credential (``Principal/auditName``); nil for a caller without one.
    public var principal: String?
    public var operation: String
    /// The user the decision concerns, if any.
    public var username: String?
    /// The outcome: a UAF status code (1200, 1401, 1491…) or an HTTP status (401, 403…).
    public var statusCode: Int
    public var detail: String
    /// The request's trace (W3C trace ID, 32 hex digits) when tracing is on (`observability.tracing`): the audit
    /// line names the trace that shows what the request did. Only in the line, not in the database's trail.
    public var traceID: String?

    /// The longest detail kept, in characters; a username or principal is cut at ``usernameLimit``.
    public static let detailLimit = 1000
    public static let usernameLimit = 256

    /// Every text field is escaped here (`UntrustedText.escaped(_:limit:)`), whoever wrote it: a detail or a
    /// username can carry a caller's text, and neither the log line, the database row nor an operator's terminal
    /// may receive a newline, an escape sequence or a bidirectional override from it.
    public init(
        at: Date, requestID: String?, clientAddress: String?, principal: String?, operation: String, username: String?,
        statusCode: Int, detail: String, traceID: String? = nil
    ) {
        self.traceID = traceID.map { UntrustedText.escaped($0, limit: 32) }
        self.at = at
        self.requestID = requestID.map { UntrustedText.escaped($0, limit: 128) }
        self.clientAddress = clientAddress.map { UntrustedText.escaped($0, limit: 64) }
        self.principal = principal.map { UntrustedText.escaped($0, limit: Self.usernameLimit) }
        self.operation = UntrustedText.escaped(operation, limit: 64)
        self.username = username.map { UntrustedText.escaped($0, limit: Self.usernameLimit) }
        self.statusCode = statusCode
        self.detail = UntrustedText.escaped(detail, limit: Self.detailLimit)
    }

    /// The line's text in the `mauth.audit` stream: `operation for "username": code detail`, from the escaped fields.
    /// The username is the caller's word until a decision checked it, so it is quoted: `alice code=1200` in a text
    /// line must read as one value, not as a field the server wrote.
    public var message: String {
        "\(operation)\(username.map { " for \(UntrustedText.quoted($0, limit: Self.usernameLimit))" } ?? ""): \(statusCode) \(detail)"
    }

    enum CodingKeys: String, CodingKey {
        case time, requestID = "request_id", client, principal, operation, username, code, detail, traceID = "trace_id"
    }

    /// The JSON form of `mauth admin audit` and the admin endpoint: `time` in RFC 3339 with milliseconds (UTC).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Self.timestamp(at), forKey: .time)
        try c.encodeIfPresent(requestID, forKey: .requestID)
        try c.encodeIfPresent(clientAddress, forKey: .client)
        try c.encodeIfPresent(principal, forKey: .principal)
        try c.encode(operation, forKey: .operation)
        try c.encodeIfPresent(username, forKey: .username)
        try c.encode(statusCode, forKey: .code)
        try c.encode(detail, forKey: .detail)
        try c.encodeIfPresent(traceID, forKey: .traceID)
    }

    /// The event's fields as the `mauth.audit` stream's metadata: ``logMetadata``, with `code` a number, as
    /// `mauth admin audit --json` writes it, so a JSON audit file and the database's events read the same.
    public var logMetadataValues: Logger.Metadata {
        var metadata = logMetadata.mapValues { Logger.MetadataValue.string($0) }
        metadata["code"] = .stringConvertible(statusCode)
        return metadata
    }

    /// The event's fields as log metadata (the message is the decision's text).
    public var logMetadata: [String: String] {
        var metadata = ["operation": operation, "code": String(statusCode)]
        if let requestID { metadata["request_id"] = requestID }
        if let traceID { metadata["trace_id"] = traceID }
        if let clientAddress { metadata["client"] = clientAddress }
        metadata["principal"] = principal ?? "anonymous"
        if let username { metadata["username"] = username }
        return metadata
    }

    /// RFC 3339 UTC with milliseconds, e.g. `2026-11-26T10:15:02.123Z`. Written by hand: a log line in JSON carries
    /// one, and a formatter object is neither cheap to make per line nor documented as safe to share across threads
    /// on Linux.
    public static func timestamp(_ date: Date) -> String {
        let millis = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let seconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return
            "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(millis - seconds * 1000, 3))Z"
    }
}
