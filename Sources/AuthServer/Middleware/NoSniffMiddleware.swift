import HTTPTypes
import Hummingbird
import Logging

/// Adds `X-Content-Type-Options: nosniff` to every answer, errors included, so that no browser reads a JSON answer (a
/// token, an error echoing a field name) as a script or a page. As the outermost middleware it also answers the errors
/// no route turned into an answer (``AuthServerError/unexpected(_:)``): a database that cannot be reached is a 503 with
/// `Retry-After`, never a 500.
struct NoSniffMiddleware: RouterMiddleware {
    typealias Context = SiwaRequestContext

    static let header = HTTPField.Name("X-Content-Type-Options")!

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        } catch {
            // What no route answered itself: the store's errors (503 while the database is unreachable), else 500.
            let answer = AuthServerError.unexpected(error)
            if answer.status == .internalServerError {
                context.logger.error("request failed", metadata: ["error": "\(error)"])
            } else {
                context.logger.warning("request refused", metadata: ["error": "\(error)"])
            }
            response = try answer.response(from: request, context: context)
        }
        response.headers[Self.header] = "nosniff"
        return response
    }
}
