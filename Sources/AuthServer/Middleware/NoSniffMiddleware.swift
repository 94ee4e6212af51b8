import HTTPTypes
import Hummingbird

/// Adds `X-Content-Type-Options: nosniff` to every answer, errors included, so that no browser reads a JSON answer (a
/// token, an error echoing a field name) as a script or a page.
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
        }
        response.headers[Self.header] = "nosniff"
        return response
    }
}
