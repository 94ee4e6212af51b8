import HTTPTypes
import Hummingbird

/// The page a browser sees when a web sign-in fails: a human reason and the stable error code, never a stack trace.
struct WebErrorPage {
    var status: HTTPResponse.Status
    var code: String
    var reason: String

    init(status: HTTPResponse.Status, code: String, reason: String) {
        self.status = status
        self.code = code
        self.reason = reason
    }

    /// The page for an error no route turned into an ``AuthServerError`` (``AuthServerError/unexpected(_:)``): the
    /// database unreachable is a 503 page that says to try again; anything else a 500 page with no detail (the detail
    /// belongs in the log).
    init(unexpected error: any Error) {
        let answer = AuthServerError.unexpected(error)
        guard answer.status != .internalServerError else {
            self.init(
                status: .internalServerError,
                code: AuthServerError.Code.internalError,
                reason: "Something went wrong on our side. Please try again."
            )
            return
        }
        self.init(answer)
    }

    /// The page for an ``AuthServerError``, with its status (403 for a flow from another browser, 413 for a body
    /// over the limit, 503 to try again), except that a refused identity token (401, which asks for credentials a
    /// browser cannot send) is the browser's request being refused: 400.
    init(_ error: AuthServerError) {
        let status: HTTPResponse.Status = error.status == .unauthorized ? .badRequest : error.status
        self.init(status: status, code: error.code, reason: error.message)
    }

    var response: Response {
        let retry =
            status == .serviceUnavailable
            ? "<p>This is probably temporary: please try again in a moment.</p>\n" : ""
        return HTMLPage(
            title: "Sign-in failed",
            main: """
                <h1>Sign-in failed</h1>
                <p class="notice error" role="alert">\(HTMLPage.escape(reason))</p>
                \(retry)<p class="muted">Error code: <code>\(HTMLPage.escape(code))</code></p>
                <p><a href="/login">Back to sign-in</a></p>
                """
        ).response(status: status)
    }
}
