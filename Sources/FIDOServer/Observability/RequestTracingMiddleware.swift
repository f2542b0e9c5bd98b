import HTTPTypes
import Hummingbird
import Tracing

/// A span per request (`observability.tracing`), continuing the caller's W3C `traceparent`, named by its route
/// (`POST /nevisfido/uaf/1.1/authentication`, the route's pattern, never the path a caller filled in), with the
/// method, the route and the status. Nothing else of the request is recorded: no query (it may carry a username or
/// a dispatch token), no header, no body. Every service call and database statement of the request runs inside it.
///
/// A caller decides whether its own trace is sampled; what it costs is bounded per request (this span and one per
/// statement), and requests are already bounded per caller by the rate limit.
struct RequestTracingMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var parent = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: HeaderExtractor())
        let method = request.method.rawValue
        return try await withSpan("\(method) \(context.endpointPath ?? "(no route)")", context: parent, ofKind: .server) { span in
            span.attributes["http.request.method"] = method
            if let route = context.endpointPath { span.attributes["http.route"] = route }
            do {
                let response = try await next(request, context)
                span.attributes["http.response.status_code"] = Int(response.status.code)
                if response.status.code >= 500 { span.setStatus(SpanStatus(code: .error)) }
                return response
            } catch let error as HTTPResponseError {
                span.attributes["http.response.status_code"] = Int(error.status.code)
                if error.status.code >= 500 { span.setStatus(SpanStatus(code: .error)) }
                throw error
            }
        }
    }

    /// Reads the propagation headers (`traceparent`, `tracestate`) the tracer asks for.
    struct HeaderExtractor: Extractor {
        func extract(key: String, from carrier: HTTPFields) -> String? {
            HTTPField.Name(key).flatMap { carrier[$0] }
        }
    }
}
