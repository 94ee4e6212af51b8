import AccountStore
import AppleSignIn
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

extension OpenIDController {
    // MARK: UserInfo

    /// `GET`/`POST /oauth/userinfo` (OpenID Connect Core §5.3): the access token's user, with the claims its scope
    /// grants, within what its client may still be granted (all of them for one of siwa's own access tokens, which
    /// has no scope). The guard took the token (bearer, or a POST form's `access_token`) and refused any other.
    @Sendable func userInfo(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let userID: UserID
        let scope: Set<String>
        switch context.authentication {
        case .session(let claims, _):
            userID = claims.userID
            scope = Set(OpenIDConfiguration.supportedScopes)
        case .relyingParty(let claims, _):
            // A client removed from the configuration, or narrowed, grants no more than it now may.
            guard let client = openID.client(claims.clientID) else {
                throw OAuthError.invalidToken("the access token's client is no longer registered")
            }
            userID = claims.userID
            scope = Self.scopeSet(claims.scope).intersection(client.scopes)
        case .refused(let error):
            throw OAuthError.invalidToken(error.message)
        case nil:
            throw OAuthError.invalidToken("no access token")
        }
        guard let user = try await store.user(id: userID), user.status == .active else {
            throw OAuthError.invalidToken("the account is disabled or no longer exists")
        }
        return try Self.noStore(Self.userClaims(user, scope: scope))
    }

    // MARK: Logout

    /// `GET`/`POST /oauth/logout`, the `end_session_endpoint` (OpenID Connect RP-Initiated Logout 1.0).
    ///
    /// With a valid `id_token_hint` (signed here, any expiry): the relying party's session it names (`sid`) ends and
    /// so does the browser's siwa session; then the browser goes to `post_logout_redirect_uri` when it is on the
    /// client's allow-list (with `state`), else to a signed-out page. Without a hint a browser with a session is
    /// asked to confirm (a form posting back here, checked for this site's `Origin`), so that another site cannot
    /// sign a user out with a link. A hint that does not verify, a redirect URI off the list, or a `client_id` that
    /// disagrees with the hint is an HTML error page, never a redirect.
    @Sendable func logout(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        var parameters: [String: String]
        if request.method == .post {
            parameters = try await Self.form(request, limit: configuration.maximumBodySize)
        } else {
            guard let query = FormURLEncoding.decode(Array((request.uri.query ?? "").utf8)) else {
                return Self.page("invalid_request", "The sign-out request has a parameter given twice.")
            }
            parameters = query
        }
        var hint: JSONValue?
        if let token = parameters["id_token_hint"] {
            // An ID token: signed here, naming a session, and not an access token (whose audience is siwa's own).
            guard let claims = issuer.signedClaims(token), claims["sid"] != nil,
                claims["aud"]?.stringValue != configuration.accessTokenAudience
            else {
                return Self.page("invalid_request", "The sign-out request's id_token_hint was not issued here.")
            }
            hint = claims
        }
        var client: OpenIDClient?
        let hintClient = hint?["aud"]?.stringValue
        if let named = parameters["client_id"] ?? hintClient {
            if let hintClient, hintClient != named {
                return Self.page("invalid_request", "client_id does not match the id_token_hint.")
            }
            guard let found = openID.client(named) else {
                return Self.page("invalid_client", "The application that sent you here is not registered.")
            }
            client = found
        }
        var destination: String?
        if let requested = parameters["post_logout_redirect_uri"] {
            guard let client, client.postLogoutRedirectURIs.contains(requested) else {
                return Self.page(
                    "invalid_request",
                    "The application asked to send you to an address it has not registered for after sign-out."
                )
            }
            let separator = requested.contains("?") ? "&" : "?"
            destination =
                parameters["state"].map { requested + separator + FormURLEncoding.encode([("state", $0)]) }
                ?? requested
        }

        // A confirmation from another site was refused by the route's guard.
        let confirmed = request.method == .post && parameters["confirm"] == "1"
        let browserClaims: AccessTokenClaims? =
            if case .session(let claims, .cookie) = context.authentication { claims } else { nil }
        // A browser with a session is asked first unless the hint is that browser's own user's: any ID token verifies
        // (an attacker's own, too), so a link with one must not sign someone else out unasked.
        let hintIsThisBrowsers =
            browserClaims.map { hint?["sub"]?.stringValue == $0.userID.description } ?? false
        // Any session cookie counts, a contract's (`ss-tok`) too: a link must not end a session unasked.
        if !hintIsThisBrowsers, !confirmed, browserClaims != nil || cookies.present(in: request) {
            return Self.confirmationPage(parameters)
        }
        if let hint, let sessionID = hint["sid"]?.stringValue.flatMap(SessionID.init),
            let userID = hint["sub"]?.stringValue.flatMap(UserID.init)
        {
            try await sessions.endSession(sessionID, userID: userID)
        }
        if let browserClaims {
            try await sessions.endSession(browserClaims.sessionID, userID: browserClaims.userID)
        } else if let refreshToken = cookies.refreshToken(in: request) {
            try await sessions.endSession(refreshToken: refreshToken)
        }
        context.logger.info("OpenID logout", metadata: ["client": "\(client?.id ?? "-")"])
        // After the confirmation form a link, not a redirect: the pages' `form-action 'self'` would block one.
        var response =
            destination.flatMap { confirmed ? nil : Response(status: .seeOther, headers: [.location: $0]) }
            ?? HTMLPage(
                title: "Signed out",
                main: """
                    <h1>Signed out</h1>
                    <p>You are signed out of siwa\(client == nil ? "" : " and the application"). You can close \
                    this window.</p>
                    \(destination.map { "<p><a href=\"\(HTMLPage.escape($0))\">Back to the application</a></p>" } ?? "")
                    """
            ).response()
        response.headers[.cacheControl] = "no-store"
        cookies.clear(on: &response)
        return response
    }

    /// Asks the browser's user to confirm a sign-out that came without an `id_token_hint`.
    private static func confirmationPage(_ parameters: [String: String]) -> Response {
        let fields = parameters.filter { $0.key != "confirm" }.sorted { $0.key < $1.key }.map { name, value in
            #"<input type="hidden" name="\#(HTMLPage.escape(name))" value="\#(HTMLPage.escape(value))">"#
        }.joined(separator: "\n")
        return HTMLPage(
            title: "Sign out",
            main: """
                <h1>Sign out?</h1>
                <p>An application asked to sign you out of siwa.</p>
                <form method="post" action="/oauth/logout">
                \(fields)
                <input type="hidden" name="confirm" value="1">
                <button type="submit">Sign out</button>
                </form>
                """
        ).response()
    }
}
