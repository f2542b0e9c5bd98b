import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// What each routed path answers: its methods, for the 405 answer (RFC 9110 §15.5.6), and each method's media
/// types, for the 406 answer (§15.5.7). Filled once, when every route has been added (``fill(routes:documented:)``);
/// until then, and for paths the server does not route, nothing is refused here.
final class RouteTable: Sendable {
    /// A routed path: its segments, a capture (`{name}`) matching any one segment (nil here).
    struct Pattern {
        var segments: [Substring?]
        var methods: Set<HTTPRequest.Method> = []
        /// The media types a method's success answers have (from the OpenAPI document); none for an empty answer.
        var produces: [HTTPRequest.Method: [MediaType]] = [:]

        var captures: Int { segments.count { $0 == nil } }

        func matches(_ path: [Substring]) -> Bool {
            path.count == segments.count && zip(segments, path).allSatisfy { pattern, segment in pattern == nil || pattern == segment }
        }
    }

    private struct Table {
        var patterns: [Pattern] = []
        /// The patterns without a capture, by their path: the lookup every UAF request takes, without a walk.
        var literal: [String: Pattern] = [:]
    }

    private let table = Mutex(Table())

    /// The APIs whose clients are held to `Accept` (nevisFIDO's, which answers 406 itself, its Identity Suite
    /// paths, and Auth Cloud's). The operational endpoints (health, metrics, JWKS, the OpenAPI document, ping, the
    /// app-link page) answer whatever is asked: probes, scrapers and browsers name types of their own.
    static let negotiated = ["/nevisfido/", "/auth/fidouaf", "/api/v1/"]

    private static func segments(_ path: String) -> [Substring?] {
        path.split(separator: "/").map { $0.hasPrefix("{") || $0.hasPrefix(":") || $0 == "*" ? nil : $0 }
    }

    /// Records `routes` (the router's, once built) and the media types `documented` gives each (method, path).
    func fill(routes: [(method: HTTPRequest.Method, path: String)], documented: [String: [String]]) {
        var byPath: [[Substring?]: Pattern] = [:]
        for route in routes {
            let segments = Self.segments(route.path)
            byPath[segments, default: Pattern(segments: segments)].methods.insert(route.method)
            let key = "\(route.method.rawValue) /\(segments.map { $0.map(String.init) ?? "{}" }.joined(separator: "/"))"
            if Self.negotiated.contains(where: route.path.hasPrefix), let types = documented[key] {
                byPath[segments]?.produces[route.method] = types.compactMap(MediaType.init)
            }
        }
        var filled = Table(patterns: Array(byPath.values))
        for pattern in filled.patterns where pattern.captures == 0 {
            filled.literal["/" + pattern.segments.map { String($0!) }.joined(separator: "/")] = pattern
        }
        table.withLock { $0 = filled }
    }

    /// The most specific patterns matching `path`: as in the router, a literal segment wins over a capture
    /// (`/api/v1/users/enroll` is not `/api/v1/users/{userId}`), and empty segments are ignored.
    private func matching(_ path: String) -> [Pattern] {
        // The common case first: a literal path, as given or with the trailing slash the SDK adds.
        let trimmed = path.utf8.count > 1 && path.utf8.last == UInt8(ascii: "/") ? String(path.dropLast()) : path
        return table.withLock { table in
            if let pattern = table.literal[trimmed] { return [pattern] }
            let segments = path.split(separator: "/")
            let matching = table.patterns.filter { $0.matches(segments) }
            guard let fewest = matching.map(\.captures).min() else { return [] }
            return matching.filter { $0.captures == fewest }
        }
    }

    /// The methods routed at `path`, or empty when the server routes nothing there.
    func methods(at path: String) -> Set<HTTPRequest.Method> {
        matching(path).reduce(into: []) { $0.formUnion($1.methods) }
    }

    /// The media types `method` at `path` answers with; empty when unknown or when the answer has no body.
    func produces(_ method: HTTPRequest.Method, at path: String) -> [MediaType] {
        for pattern in matching(path) { if let types = pattern.produces[method] { return types } }
        return []
    }

    /// The media types of every documented operation's success answers, keyed `METHOD /path` with each capture
    /// written `{}`, read from the OpenAPI document the server serves (its one description of the API).
    static func documentedMediaTypes(_ openAPI: [UInt8]) -> [String: [String]] {
        guard let document = try? JSONSerialization.jsonObject(with: Data(openAPI)) as? [String: Any],
            let paths = document["paths"] as? [String: [String: Any]]
        else { return [:] }
        let shared = (document["components"] as? [String: Any])?["responses"] as? [String: [String: Any]] ?? [:]
        var result: [String: [String]] = [:]
        for (path, item) in paths {
            let key = "/" + segments(path).map { $0.map(String.init) ?? "{}" }.joined(separator: "/")
            for (method, operation) in item {
                guard let responses = (operation as? [String: Any])?["responses"] as? [String: [String: Any]] else { continue }
                var types: [String] = []
                for (code, answer) in responses where code.hasPrefix("2") {
                    let resolved = (answer["$ref"] as? String).flatMap { shared[String($0.split(separator: "/").last ?? "")] } ?? answer
                    types += ((resolved["content"] as? [String: Any]) ?? [:]).keys
                }
                result["\(method.uppercased()) \(key)"] = types.sorted()
            }
        }
        return result
    }
}

/// The route rules the router itself does not apply:
/// - **406** when the request's `Accept` names no media type the route answers with (RFC 9110 §15.5.7), before
///   the handler runs, so a refused request changes nothing. Lenient where clients differ: a missing or empty
///   `Accept` and a wildcard pass; the JSON family (`application/json`, `application/fido+uaf`, `…+json`) is one
///   type, since clients name it differently for the same body; the Device Service's reads also answer
///   `application/jose`, which the Nevis SDK asks for (server-api #17), as the OpenAPI document says. So 406 means a client of the API that wants
///   something else altogether (HTML, XML, an image) from a route that answers JSON. Answers without a body (204)
///   and the operational endpoints (``RouteTable/negotiated``) are never refused.
/// - **405 with `Allow`** instead of the router's 404 when the path is routed for other methods.
///
/// A UAF request costs one dictionary lookup and a scan of its `Accept`; other paths a walk of the route table
/// (about 40 entries), bounded by the rate limit.
struct RouteRulesMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let accept = request.headers[.accept] {
            let path = request.uri.path
            let produced = routes.produces(request.method, at: path)
            if !produced.isEmpty, !MediaType.accepts(accept, anyOf: produced) {
                return ErrorBody.response(
                    .notAcceptable, error: "not_acceptable",
                    message: "Accept must allow \(produced.map(\.description).joined(separator: " or ")).")
            }
        }
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            // Only where no route takes this method: a handler's own 404 (a missing resource) is on a routed method.
            let allowed = routes.methods(at: request.uri.path)
            guard !allowed.isEmpty, !allowed.contains(request.method) else { throw error }
            let names = allowed.map(\.rawValue).sorted()
            return ErrorBody.response(
                .methodNotAllowed, error: "method_not_allowed",
                message: "\(request.method.rawValue) is not allowed here; allowed: \(names.joined(separator: ", ")).",
                headers: [.allow: names.joined(separator: ", ")])
        }
    }
}

/// A media type a route answers with, `type/subtype` in lower case (parameters dropped).
struct MediaType: Equatable, CustomStringConvertible {
    let type: String
    let subtype: String

    init?(_ text: String) {
        let base = text.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        let halves = base.split(separator: "/")
        guard halves.count == 2, !halves[0].isEmpty, !halves[1].isEmpty else { return nil }
        type = String(halves[0])
        subtype = String(halves[1])
    }

    static let jose = MediaType("application/jose")!
    static let json = MediaType("application/json")!

    /// The weight `header` gives `type` (RFC 9110 §12.5.1): its most specific matching range's, the JSON family
    /// as one type; 1 for a header that is absent in effect (see ``accepts(_:anyOf:)``), 0 where nothing matches.
    static func weight(in header: String, of type: MediaType) -> Double {
        guard header.utf8.count <= longestAccept else { return 1 }
        let ranges = MediaRange.parse(header)
        guard !ranges.isEmpty else { return 1 }
        let json = isJSON(type.type, type.subtype)
        func specificity(_ range: MediaRange) -> Int? {
            if range.type == type.type && range.subtype == type.subtype { return 3 }
            if json && isJSON(range.type, range.subtype) { return 3 }
            if range.type == type.type && range.subtype == "*" { return 2 }
            if range.type == "*" && range.subtype == "*" { return 1 }
            return nil
        }
        let matching = ranges.compactMap { range in specificity(range).map { ($0, range.weight) } }
        guard let best = matching.map(\.0).max() else { return 0 }
        return matching.filter { $0.0 == best }.map(\.1).max() ?? 0
    }
    var description: String { "\(type)/\(subtype)" }

    /// The JSON family: JSON under its own name, UAF's name for its JSON messages, and RFC 6839's `+json` suffix.
    static func isJSON(_ type: some StringProtocol, _ subtype: some StringProtocol) -> Bool {
        type == "application" && (subtype == "json" || subtype == "fido+uaf" || subtype.hasSuffix("+json"))
    }

    /// The longest `Accept` header read, in bytes. Real clients send a few dozen; past this the header is
    /// disregarded, as RFC 9110 §12.5.1 allows, so its cost per request stays a length check: a 67 KB header once
    /// took 7.6 ms of CPU to parse.
    static let longestAccept = 1024

    /// Whether `header` accepts one of `types`. An empty header, one with no readable range, and one longer than
    /// ``longestAccept`` accept anything, as if it were absent.
    static func accepts(_ header: String, anyOf types: [MediaType]) -> Bool {
        guard header.utf8.count <= longestAccept else { return true }
        let ranges = MediaRange.parse(header)
        guard !ranges.isEmpty else { return true }
        return types.contains { produced in
            let json = isJSON(produced.type, produced.subtype)
            return ranges.contains { range in
                range.weight > 0
                    && ((range.type == "*" && range.subtype == "*")
                        || (range.type == produced.type && (range.subtype == "*" || range.subtype == produced.subtype))
                        || (json && isJSON(range.type, range.subtype)))
            }
        }
    }
}

/// One media range of an `Accept` header (RFC 9110 §12.5.1): `type/subtype`, either part `*`, and its weight.
struct MediaRange: Equatable {
    var type: Substring
    var subtype: Substring
    var weight: Double

    /// The ranges of `header`; an element that is not `type/subtype` is skipped, as a malformed range cannot
    /// name what the client wants. Parameters other than `q` do not narrow a range here.
    static func parse(_ header: String) -> [MediaRange] {
        header.split(separator: ",").compactMap { element in
            let parts = element.split(separator: ";")
            guard let range = parts.first.map(trimmed), case let halves = range.split(separator: "/"), halves.count == 2,
                !halves[0].isEmpty, !halves[1].isEmpty
            else { return nil }
            var weight = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map(trimmed)
                if pair.count == 2, pair[0] == "q" || pair[0] == "Q", let q = Double(pair[1]), (0...1).contains(q) { weight = q }
            }
            return MediaRange(type: lowered(halves[0]), subtype: lowered(halves[1]), weight: weight)
        }
    }

    private static func trimmed(_ text: Substring) -> Substring {
        let isSpace = { (c: Character) in c == " " || c == "\t" }
        guard let start = text.firstIndex(where: { !isSpace($0) }), let end = text.lastIndex(where: { !isSpace($0) }) else { return "" }
        return text[start...end]
    }

    /// Lower case, allocating only when there is an upper-case letter (clients send lower case).
    private static func lowered(_ text: Substring) -> Substring {
        text.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) ? Substring(text.lowercased()) : text
    }
}
