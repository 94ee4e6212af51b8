import HTTPTypes
import Hummingbird

/// Answers 421 Misdirected Request to a request whose `Host` is not one of the emulator's own names
/// (``EmulatorHostNames``), before any handler reads or changes anything: a console page for browsers, the control
/// API's JSON error for scripts.
struct EmulatorHostCheck<Context: RequestContext>: RouterMiddleware {
    /// The shape of the refusal.
    enum Answer: Sendable {
        case consolePage
        case controlJSON
    }

    let hostNames: EmulatorHostNames
    let answer: Answer

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard hostNames.allows(authority: request.head.authority) else {
            switch answer {
            case .consolePage:
                return AppleIDEmulator.consoleHTML(.misdirectedRequest, ConsolePage.misdirected())
            case .controlJSON:
                return try AppleIDEmulator.json(
                    .misdirectedRequest,
                    ["error": "misdirected_request", "message": Self.explanation]
                )
            }
        }
        return try await next(request, context)
    }

    static var explanation: String {
        "this emulator answers only to loopback names (localhost, 127.0.0.1, [::1]) and the host names it is "
            + "configured with (siwa emulator --allowed-host NAME, or hostNames in --config)"
    }
}
