import Foundation
import HTTPTypes
import Hummingbird

/// Refuses the control API to browsers on other sites: a page anywhere else must not sign in, revoke consent or have
/// an `account-delete` delivered to the developer's server through an open emulator.
///
/// `Origin` and `Sec-Fetch-Site`, when sent, must name the emulator's own origin, as for the console's forms (403).
/// A body must be `application/json` (415): a browser sends that cross-site only after asking (CORS preflight, which
/// the emulator never grants), while `text/plain` and forms go without asking. Scripts (curl, tests, siwa's CLI)
/// send no `Origin` and JSON, and pass.
struct ControlAPIRequestCheck<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard ConsoleOriginCheck<Context>.isSameOrigin(request) else {
            return try AppleIDEmulator.json(
                .forbidden,
                [
                    "error": "cross_site_request",
                    "message": "the control API takes no requests from other sites' pages",
                ]
            )
        }
        var request = request
        if [.post, .put, .patch, .delete].contains(request.method), !(try await Self.bodyIsJSONOrNone(&request)) {
            return try AppleIDEmulator.json(
                .unsupportedMediaType,
                ["error": "unsupported_media_type", "message": "a body must be application/json"]
            )
        }
        return try await next(request, context)
    }

    /// Whether the body is declared `application/json` (any parameters), or there is none: a POST with nothing to
    /// say (`rotate-keys`) needs no type.
    private static func bodyIsJSONOrNone(_ request: inout Request) async throws -> Bool {
        if let contentType = request.headers[.contentType] {
            let mediaType = contentType.split(separator: ";", maxSplits: 1).first ?? ""
            return mediaType.trimmingCharacters(in: .whitespaces).lowercased() == "application/json"
        }
        let body = try? await request.collectBody(upTo: 64 * 1024)
        return body?.readableBytes == 0
    }
}
