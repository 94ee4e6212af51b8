import Hummingbird

/// The two cookies of a browser session: the access token and the refresh token, both HttpOnly, SameSite=Lax,
/// Path=/, Secure when the public URL is https, and living as long as the refresh token.
struct SessionCookies {
    let configuration: AuthServerConfiguration

    var sessionName: String { configuration.web.sessionCookieName }
    var refreshName: String { configuration.web.refreshCookieName }

    /// The access token of the request's session cookie.
    func accessToken(in request: Request) -> String? {
        request.cookies[sessionName].flatMap { $0.value.isEmpty ? nil : $0.value }
    }

    /// The refresh token of the request's refresh cookie.
    func refreshToken(in request: Request) -> String? {
        request.cookies[refreshName].flatMap { $0.value.isEmpty ? nil : $0.value }
    }

    /// Whether the request carries either cookie.
    func present(in request: Request) -> Bool {
        accessToken(in: request) != nil || refreshToken(in: request) != nil
    }

    /// Sets both cookies for a new or rotated session.
    func set(accessToken: String, refreshToken: String, on response: inout Response) {
        let maxAge = Int(configuration.refreshTokenLifetime)
        response.setCookie(cookie(sessionName, accessToken, maxAge: maxAge))
        response.setCookie(cookie(refreshName, refreshToken, maxAge: maxAge))
    }

    /// Sets both cookies for rotated tokens.
    func set(_ tokens: SessionService.Tokens, on response: inout Response) {
        guard let refreshToken = tokens.refreshToken else { return }
        set(accessToken: tokens.accessToken, refreshToken: refreshToken, on: &response)
    }

    /// Deletes both cookies (`Max-Age=0`).
    func clear(on response: inout Response) {
        response.setCookie(cookie(sessionName, "", maxAge: 0))
        response.setCookie(cookie(refreshName, "", maxAge: 0))
    }

    private func cookie(_ name: String, _ value: String, maxAge: Int) -> Cookie {
        Cookie(
            name: name,
            value: value,
            maxAge: maxAge,
            path: "/",
            secure: configuration.usesSecureCookies,
            httpOnly: true,
            sameSite: .lax
        )
    }
}
