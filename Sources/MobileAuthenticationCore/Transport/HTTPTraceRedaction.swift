import Foundation

/// Whether the app's HTTP trace hook sees secrets: bearer tokens, session cookies, redeem tokens, encrypted payloads.
public enum HTTPTraceSecrets: Sendable {
    /// Every secret in a body is replaced by `[redacted]` (the default): a trace that lands in a log or a crash report
    /// then holds nothing that authorizes a call.
    case redacted
    /// The bodies as sent and received, for an app that opts in explicitly (local debugging).
    case included
}

extension HTTPTraceEvent {
    /// The replacement for a secret value.
    package static let redactedValue = "[redacted]"

    /// The event with its bodies' secrets replaced (``HTTPTraceSecrets/redacted``).
    package func redacted() -> HTTPTraceEvent {
        HTTPTraceEvent(
            isResponse: isResponse, method: method, url: url, requestBody: requestBody.map(Self.redacted),
            status: status, responseBody: Self.redacted(responseBody))
    }

    /// Keys whose string values are secrets wherever they appear (compared without case): tokens, sessions, cookies
    /// and credentials.
    static let secretKeys: Set<String> = [
        "token", "jwt", "authorization", "cookie", "session", "sessionid", "sessiontoken",
        "access_token", "accesstoken", "id_token", "refresh_token", "dispatchtoken",
        "dispatchtokenresponse", "password", "pin", "secret", "value",
    ]

    /// A JSON body with every secret string replaced; a body that is not JSON is replaced whole, since what it holds
    /// cannot be told (the SDK sends and expects JSON only).
    static func redacted(_ body: Data) -> Data {
        guard !body.isEmpty else { return body }
        guard let object = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) else {
            return Data("[\(body.count) bytes, not JSON, redacted]".utf8)
        }
        let cleaned = redact(object, key: nil)
        return (try? JSONSerialization.data(withJSONObject: cleaned, options: [.fragmentsAllowed, .sortedKeys, .withoutEscapingSlashes]))
            ?? Data(redactedValue.utf8)
    }

    private static func redact(_ value: Any, key: String?) -> Any {
        switch value {
        case let dictionary as [String: Any]:
            return dictionary.reduce(into: [String: Any]()) { result, entry in result[entry.key] = redact(entry.value, key: entry.key) }
        case let array as [Any]:
            return array.map { redact($0, key: key) }
        case let string as String:
            if let key, secretKeys.contains(key.lowercased()) { return redactedValue }
            return looksLikeCompactJOSE(string) ? redactedValue : string
        default:
            return value
        }
    }

    /// A compact JWS (a JWT: three base64url parts) or JWE (five), wherever it appears.
    static func looksLikeCompactJOSE(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 || parts.count == 5, parts[0].count >= 8 else { return false }
        return parts.allSatisfy { part in part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") } }
    }
}

extension HttpError {
    /// The diagnostics of one request: its method and URL, and the answer's status, headers and body with the trace's
    /// redaction (a session cookie or token in an error would otherwise reach the app's logs).
    package init(request: HTTPRequest, server: Server?, exchange: HTTPExchange?, underlying: (any Error)?) {
        var headers: [String: [String]] = [:]
        for (name, value) in exchange?.headers ?? [] {
            let key = name.lowercased()
            headers[key, default: []].append(HTTPTraceEvent.secretHeaders.contains(key) ? HTTPTraceEvent.redactedValue : value)
        }
        self.init(
            method: request.method.rawValue, requestUrl: request.url, statusCode: exchange?.status,
            headers: ResponseHeaders(values: headers), body: exchange.map { String(decoding: HTTPTraceEvent.redacted($0.body), as: UTF8.self) },
            underlying: underlying, server: server)
    }
}

extension HTTPTraceEvent {
    /// Response headers whose values are credentials.
    static let secretHeaders: Set<String> = ["set-cookie", "cookie", "authorization", "proxy-authorization"]
}
