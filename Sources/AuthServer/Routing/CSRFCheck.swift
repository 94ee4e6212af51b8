import AppleSignIn
import HTTPTypes
public import Hummingbird

/// The cross-site request forgery check of cookie-authenticated requests that change state (`POST /auth/logout`,
/// `POST /auth/refresh` with the refresh cookie, `DELETE /api/me`).
///
/// The request's `Origin` (or, when a browser sent none, the origin of its `Referer`) must be the public URL's origin
/// or one of `web.allowedReturnOrigins`. Requests with a bearer token need no check: a browser never adds one on its
/// own.
public enum CSRFCheck {
    /// - Throws: ``AuthServerError`` 403 `csrf_check_failed` when the request may come from another site.
    public static func verify(_ request: Request, configuration: AuthServerConfiguration) throws(AuthServerError) {
        let claimed: String?
        if let origin = request.headers[.origin] {
            claimed = origin
        } else if let referer = request.headers[.referer] {
            claimed = ReturnURLPolicy.origin(of: referer)
            guard claimed != nil else { throw refusal("the Referer header is not an http(s) URL") }
        } else {
            throw refusal("a cookie-authenticated request must carry an Origin or Referer header")
        }
        guard let claimed, let origin = ReturnURLPolicy.origin(of: claimed), isAllowed(origin, configuration) else {
            throw refusal("the request comes from an origin that is not this site")
        }
    }

    /// The lenient form, for sign-in routes whose non-browser clients (ServiceStack's `JsonServiceClient`) send no
    /// `Origin`: a request that names an origin (`Origin`, else `Referer`) must name this site or an allowed one.
    /// Browsers send `Origin` with every cross-site POST, so a cross-site form is refused.
    /// - Throws: ``AuthServerError`` 403 `csrf_check_failed`.
    public static func refuseForeignOrigin(
        _ request: Request,
        configuration: AuthServerConfiguration
    ) throws(AuthServerError) {
        guard request.headers[.origin] != nil || request.headers[.referer] != nil else { return }
        try verify(request, configuration: configuration)
    }

    /// The lenient form that also reads what the browser says of the request's site: a request it marks as another
    /// site's (`Sec-Fetch-Site: cross-site` or `same-site`: a link, a redirect or a form on another page) must name
    /// this site or an allowed one (`Origin`, else `Referer`), as in ``verify(_:configuration:)``; a request that
    /// names an origin must name such a site; a request with none of these (a non-browser client) passes.
    /// - Throws: ``AuthServerError`` 403 `csrf_check_failed`.
    public static func refuseAnotherSite(
        _ request: Request,
        configuration: AuthServerConfiguration
    ) throws(AuthServerError) {
        if let site = request.headers[secFetchSite]?.lowercased(), site == "cross-site" || site == "same-site" {
            return try verify(request, configuration: configuration)
        }
        try refuseForeignOrigin(request, configuration: configuration)
    }

    /// `Sec-Fetch-Site`: where the browser says the request comes from (`same-origin`, `same-site`, `cross-site`,
    /// `none` for a URL the user typed).
    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!

    /// Whether `origin` (serialized) is this site's or an allowed one.
    static func isAllowed(_ origin: String, _ configuration: AuthServerConfiguration) -> Bool {
        if origin == ReturnURLPolicy.origin(of: configuration.publicURL) { return true }
        return configuration.web.allowedReturnOrigins.contains { ReturnURLPolicy.origin(of: $0) == origin }
    }

    private static func refusal(_ message: String) -> AuthServerError {
        AuthServerError(.forbidden, AuthServerError.Code.csrfCheckFailed, message)
    }
}
