import HTTPTypes
import Hummingbird

/// The page a browser sees when a web sign-in fails: a human reason and the stable error code, never a stack trace.
struct WebErrorPage {
    var status: HTTPResponse.Status
    var code: String
    var reason: String
    /// The product the page speaks for (its name, logo and support link); none by default.
    var branding = BrandingConfiguration()

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

    /// This page, speaking for the product of `branding`.
    func branded(_ branding: BrandingConfiguration) -> WebErrorPage {
        var page = self
        page.branding = branding
        return page
    }

    /// What the user can do next, in the product's name.
    private var whatToDo: String {
        let product = branding.productName.map(HTMLPage.escape)
        let help = branding.supportURL.map { "<a href=\"\(HTMLPage.escape($0))\">contact support</a>" }
        switch code {
        case AuthServerError.Code.accountDisabled:
            let account = product.map { "your \($0) account" } ?? "this account"
            return "Signing in again will not help while \(account) is disabled. "
                + (help.map { "If you think this is a mistake, \($0)." } ?? "If you think this is a mistake, ask "
                    + "the people who run \(product ?? "this service").")
        case _ where status == .serviceUnavailable:
            return "This is probably temporary: please try again in a moment."
        default:
            return "Please start again from the sign-in page."
                + (help.map { " If it keeps happening, \($0)." } ?? "")
        }
    }

    var response: Response {
        let heading = branding.productName.map { "\(HTMLPage.escape($0)) could not sign you in" } ?? "Sign-in failed"
        return HTMLPage(
            title: branding.productName.map { "Sign-in failed · \($0)" } ?? "Sign-in failed",
            main: """
                \(LoginPage.logo(branding))<h1>\(heading)</h1>
                <p class="notice error" role="alert">\(HTMLPage.escape(reason))</p>
                <p>\(whatToDo)</p>
                <p class="muted">Error code: <code>\(HTMLPage.escape(code))</code></p>
                <p><a href="/login">Back to sign-in</a></p>
                """
        ).response(status: status)
    }
}

extension RouteAccess.Refusal {
    /// A browser route's: an HTML page naming why (``WebErrorPage``).
    static let page = RouteAccess.Refusal(name: "HTML page") { error, _ in WebErrorPage(error).response }
}
