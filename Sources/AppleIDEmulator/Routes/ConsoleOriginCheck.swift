import HTTPTypes
import Hummingbird

/// Refuses the console's state-changing forms when another site posts them: a page on any other origin (another port
/// of localhost included) must not rotate keys, revoke consent or sign in through a developer's open emulator.
///
/// A browser names where a post comes from: `Sec-Fetch-Site` must be `same-origin` (or `none`: typed by the user), and
/// `Origin` must be the emulator's own, the scheme and the `Host` the request was sent to (a `Host` that is not one of
/// the emulator's names is refused before, by ``EmulatorHostCheck``). A request with neither header is not from a
/// browser (a script, curl) and passes; the control API checks the same (``ControlAPIRequestCheck``).
struct ConsoleOriginCheck<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard Self.isSameOrigin(request) else {
            return AppleIDEmulator.consoleHTML(.forbidden, ConsolePage.forbidden())
        }
        return try await next(request, context)
    }

    static func isSameOrigin(_ request: Request) -> Bool {
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!],
            !["same-origin", "none"].contains(site.lowercased())
        {
            return false
        }
        guard let origin = request.headers[.origin]?.lowercased() else { return true }
        guard let host = request.head.authority?.lowercased() else { return false }
        return origin == "http://\(host)" || origin == "https://\(host)"
    }
}
