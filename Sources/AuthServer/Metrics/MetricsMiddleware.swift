import HTTPTypes
import Hummingbird

/// Counts every request by method, matched route pattern and status, and times it by route.
///
/// The route is the pattern the router matched (`/api/me`), read from `context.endpointPath` as hummingbird's own
/// `MetricsMiddleware` does, or `unmatched` when no route matched; never the raw path, whose values are unbounded.
/// Add it to the router before any route, so that it wraps them all.
struct MetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: ServerMetrics
    private let clock = ContinuousClock()

    init(metrics: ServerMetrics) {
        self.metrics = metrics
    }

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = clock.now
        do {
            let response = try await next(request, context)
            record(request, context: context, status: response.status, start: start)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            record(request, context: context, status: status, start: start)
            throw error
        }
    }

    private func record(
        _ request: Request,
        context: Context,
        status: HTTPResponse.Status,
        start: ContinuousClock.Instant
    ) {
        let route =
            switch context.endpointPath {
            case nil, "NotFound": "unmatched"
            case let path?: path
            }
        metrics.request(
            method: request.method.rawValue,
            route: route,
            status: status.code,
            duration: clock.now - start
        )
    }
}
