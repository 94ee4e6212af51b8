import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The access log: one line at info per request, after its answer (refusals and errors too), with the method, the
/// route pattern the router matched (never the path: a path can carry anything a client puts in it), the status, the
/// time taken, the client's address as the rate limits see it, the account and session when the request named one,
/// and the request id. At debug the line also has the path and query as ``LoggedURI`` redacts them. The same reading
/// of route, status and time is counted in the metrics, when they are on (requests by method, route pattern and
/// status; durations by route pattern).
///
/// The request id is a trusted proxy's `X-Request-Id` when it sends an acceptable one (``RequestLog/isAcceptable(_:)``),
/// else a new one; it is answered in `X-Request-Id` and carried by every line logged while the request runs (the
/// ``RequestLog`` is bound to the request's task). Add it to the router first, so that it wraps every other
/// middleware and sees the answer they make of every error.
///
/// Per request it costs the ``RequestLog`` (one object), 8 random bytes and the line itself; the two clock readings
/// serve the metrics too, and the client's address, read once, serves the rate limits and the admin routes.
struct AccessLogMiddleware: RouterMiddleware {
    typealias Context = SiwaRequestContext

    static let header = HTTPField.Name("X-Request-Id")!

    let trustedProxies: TrustedProxies
    let metrics: ServerMetrics?
    let logger: Logger
    private let clock = ContinuousClock()

    init(trustedProxies: TrustedProxies, metrics: ServerMetrics?, logger: Logger) {
        self.trustedProxies = trustedProxies
        self.metrics = metrics
        self.logger = logger
    }

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = clock.now
        let peer = context.remoteAddress?.ipAddress
        let log = RequestLog(
            id: requestID(request.headers, peer: peer),
            client: trustedProxies.clientAddress(peer: peer, headers: request.headers)
        )
        var context = context
        context.requestLog = log
        return try await RequestLog.$current.withValue(log) {
            do {
                var response = try await next(request, context)
                response.headers[Self.header] = log.id
                record(request, context, log, status: response.status, start: start)
                return response
            } catch {
                // The middleware inside answers every error; one that still gets here is answered by Hummingbird.
                let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
                record(request, context, log, status: status, start: start)
                throw error
            }
        }
    }

    /// A trusted proxy's id, else a new one. A client's own `X-Request-Id` is never taken: it could make its requests'
    /// lines look like another's.
    private func requestID(_ headers: HTTPFields, peer: String?) -> String {
        if let given = headers[Self.header], let peer, trustedProxies.contains(peer),
            RequestLog.isAcceptable(Substring(given))
        {
            return given
        }
        return RequestLog.newID()
    }

    private func record(
        _ request: Request,
        _ context: Context,
        _ log: RequestLog,
        status: HTTPResponse.Status,
        start: ContinuousClock.Instant
    ) {
        let duration = clock.now - start
        let route = Self.route(context.endpointPath)
        metrics?.request(method: request.method.rawValue, route: route, status: status.code, duration: duration)
        guard logger.logLevel <= .info else { return }
        var metadata: Logger.Metadata = [
            "method": .string(request.method.rawValue),
            "route": .string(route),
            "status": .stringConvertible(status.code),
            "duration_ms": .string(Self.milliseconds(duration)),
            "client": .string(log.client ?? "unknown"),
            RequestLog.idKey: .string(log.id),
        ]
        if let caller = log.identified {
            metadata["user"] = .stringConvertible(caller.user)
            if let session = caller.session { metadata["session"] = .stringConvertible(session) }
        }
        if let name = log.serviceTokenName { metadata["service_token"] = .string(name) }
        if logger.logLevel <= .debug { metadata["path"] = .string(LoggedURI.redacting(request.uri)) }
        logger.info("request", metadata: metadata)
    }

    /// The route pattern the router matched (read from `context.endpointPath` as hummingbird's own
    /// `MetricsMiddleware` does), or `unmatched`: never the raw path, whose values are unbounded.
    static func route(_ endpointPath: String?) -> String {
        switch endpointPath {
        case nil, "NotFound": "unmatched"
        case let path?: path
        }
    }

    /// A duration in milliseconds with three decimals (`12.345`), written without a formatter.
    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let microseconds = max(0, seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
        let fraction = String(microseconds % 1_000)
        return String(microseconds / 1_000) + "." + String(repeating: "0", count: 3 - fraction.utf8.count) + fraction
    }
}
