import HTTPTypes
import Hummingbird

/// Adds `Strict-Transport-Security: max-age=…` to every answer of a siwa that serves https itself, errors included, so
/// that a browser that once reached it over https never asks it over plain http (where a network attacker could
/// answer) for that long. Not installed on plain http: behind a proxy that terminates TLS, the proxy sends it.
struct StrictTransportSecurityMiddleware: RouterMiddleware {
    typealias Context = SiwaRequestContext

    static let header = HTTPField.Name("Strict-Transport-Security")!

    /// The header's value, written once.
    let value: String

    /// - Parameter maxAge: seconds browsers keep to https.
    init(maxAge: Int) {
        value = "max-age=\(maxAge)"
    }

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var response = try await next(request, context)
        response.headers[Self.header] = value
        return response
    }
}
