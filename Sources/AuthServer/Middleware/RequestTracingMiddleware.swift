import HTTPTypes
import Hummingbird
import Tracing

/// With tracing on, a server span per request, whose children are the spans the request causes: the identity
/// token's verification, each store call, Apple's token endpoint and key set. A trusted proxy's W3C trace context
/// (`traceparent`, `tracestate`) becomes its parent, so siwa's part shows inside the caller's trace; anyone else's is
/// not read, as their `X-Request-Id` is not: a client must not choose the trace id of siwa's spans, nor force its
/// requests to be traced past the sampling ratio. Such a request starts a trace of siwa's own.
///
/// The span is named `<method> <route pattern>` (`POST /auth/apple/native`) and carries the method, the route
/// pattern, the status and the request id (which leads to the access line): never the path or the query, which carry
/// whatever a client puts in them (codes, tokens, e-mail addresses), nor any header. That is why siwa has this one
/// rather than Hummingbird's `TracingMiddleware`, which records both. Added after ``AccessLogMiddleware``, whose
/// request id it reads, and only when tracing is on.
struct RequestTracingMiddleware: RouterMiddleware {
    typealias Context = SiwaRequestContext
    let tracer: any Tracer
    /// The peers whose trace context is taken.
    let trustedProxies: TrustedProxies
    /// The health probes' paths.
    static let untraced: Set<String> = ["/healthz", "/readyz"]

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        // A load balancer's probes, every few seconds, would bury the traces that matter.
        if Self.untraced.contains(request.uri.path) { return try await next(request, context) }
        var parent = InstrumentationContext.current ?? .topLevel
        if let peer = context.remoteAddress?.ipAddress, trustedProxies.contains(peer) {
            tracer.extract(request.headers, into: &parent, using: HTTPFieldsExtractor())
        }
        let span = tracer.startSpan(request.method.rawValue, context: parent, ofKind: .server)
        span.updateAttributes { attributes in
            attributes["http.request.method"] = request.method.rawValue
            if let id = context.requestLog?.id { attributes["siwa.request_id"] = id }
        }
        let status: HTTPResponse.Status
        do {
            let response = try await InstrumentationContext.$current.withValue(span.context) {
                try await next(request, context)
            }
            status = response.status
            Self.end(span, method: request.method, route: context.endpointPath, status: status)
            return response
        } catch {
            // An error no middleware answered: Hummingbird answers it with its status, else 500.
            Self.end(
                span,
                method: request.method,
                route: context.endpointPath,
                status: (error as? any HTTPResponseError)?.status ?? .internalServerError
            )
            throw error
        }
    }

    private static func end(_ span: some Span, method: HTTPRequest.Method, route: String?, status: HTTPResponse.Status)
    {
        let route = AccessLogMiddleware.route(route)
        // A route the router did not match is named by its method alone: its path is the client's to choose.
        if route != "unmatched" { span.operationName = "\(method.rawValue) \(route)" }
        span.updateAttributes { attributes in
            attributes["http.route"] = route
            attributes["http.response.status_code"] = Int(status.code)
        }
        if status.kind == .serverError { span.setStatus(SpanStatus(code: .error)) }
        span.end()
    }
}

/// Reads a trace-context header (`traceparent`, `tracestate`) from a request's fields.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from fields: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { fields[$0] }
    }
}
