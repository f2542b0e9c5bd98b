import HTTPTypes
import Hummingbird
import Synchronization

/// The methods each routed path answers, for the 405 answer (RFC 9110 §15.5.6): a path the server routes, asked
/// with a method it does not route there, is answered 405 with `Allow`, not 404. The table is filled once, when
/// every route has been added (``fill(_:)``); until then, and for paths the server does not route, 404 stands.
final class RouteMethods: Sendable {
    /// A routed path: its segments, a capture (`{name}`) matching any one segment (nil here).
    private struct Pattern {
        var segments: [Substring?]
        var methods: Set<HTTPRequest.Method>

        var captures: Int { segments.count { $0 == nil } }

        func matches(_ path: [Substring]) -> Bool {
            path.count == segments.count && zip(segments, path).allSatisfy { pattern, segment in pattern == nil || pattern == segment }
        }
    }

    private let patterns = Mutex<[Pattern]>([])

    /// Records every route of `routes` (the router's, once built).
    func fill(_ routes: [(method: HTTPRequest.Method, path: String)]) {
        var byPath: [[Substring?]: Set<HTTPRequest.Method>] = [:]
        for route in routes {
            let segments = route.path.split(separator: "/").map { $0.hasPrefix("{") || $0.hasPrefix(":") || $0 == "*" ? nil : $0 }
            byPath[segments, default: []].insert(route.method)
        }
        patterns.withLock { $0 = byPath.map { Pattern(segments: $0.key, methods: $0.value) } }
    }

    /// The methods routed at `path`, or empty when the server routes nothing there. As in the router, a literal
    /// segment wins over a capture (`/api/v1/users/enroll` is not `/api/v1/users/{userId}`), and empty segments are
    /// ignored (`/a//b/` is `/a/b`).
    func methods(at path: String) -> Set<HTTPRequest.Method> {
        let segments = path.split(separator: "/")
        return patterns.withLock { patterns in
            let matching = patterns.filter { $0.matches(segments) }
            guard let fewest = matching.map(\.captures).min() else { return [] }
            return matching.filter { $0.captures == fewest }.reduce(into: []) { $0.formUnion($1.methods) }
        }
    }
}

/// Turns the router's not-found answer into 405 with `Allow` when the path is routed for other methods. Its cost is
/// one walk of the route table (about 40 entries) per unmatched request, which the rate limit already bounds.
struct MethodNotAllowedMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let routes: RouteMethods

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            // Only where no route takes this method: a handler's own 404 (a missing resource) is on a routed method.
            let allowed = routes.methods(at: request.uri.path)
            guard !allowed.isEmpty, !allowed.contains(request.method) else { throw error }
            let names = allowed.map(\.rawValue).sorted()
            return ErrorBody.response(.methodNotAllowed, error: "method_not_allowed",
                                      message: "\(request.method.rawValue) is not allowed here; allowed: \(names.joined(separator: ", ")).",
                                      headers: [.allow: names.joined(separator: ", ")])
        }
    }
}
