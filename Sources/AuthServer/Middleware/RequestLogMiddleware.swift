import Hummingbird
import Logging

/// Logs each request (at debug) with its method and its path and query as ``LoggedURI`` redacts them: no token, code
/// or secret in a query reaches a log line. Headers are not logged.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = SiwaRequestContext

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if context.logger.logLevel <= .debug {
            context.logger.debug(
                "Request",
                metadata: [
                    "hb.request.path": .string(LoggedURI.redacting(request.uri)),
                    "hb.request.method": .string(request.method.rawValue),
                ]
            )
        }
        return try await next(request, context)
    }
}
