import AccountStore
import AppleSignIn
import Crypto
import HTTPTypes
import Hummingbird
import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension OpenIDController {
    /// `POST /oauth/authorize`'s (the consent form): the browser's siwa session from its cookie, or its refresh
    /// cookie, sent from this site (``CSRFCheck``, as every cookie-authenticated state change); a form from another
    /// site is a page that says so, and the handler answers every other refusal with a page.
    static let consentFormAccess = RouteAccess(
        credential: .session,
        presentations: [.cookie],
        required: false,
        originCheck: .anyCookie,
        refusal: .consentPage
    )

    /// Whether `userID` has allowed `client`, answering at `redirectURI`, at least `scope`.
    func hasConsent(
        of userID: UserID,
        to client: OpenIDClient,
        at redirectURI: String,
        for scope: Set<String>
    ) async throws -> Bool {
        guard
            let consent = try await store.clientConsent(userID: userID, clientID: client.id, redirectURI: redirectURI)
        else { return false }
        return scope.isSubset(of: Self.scopeSet(consent.scope))
    }

    /// What a consent form's token is bound to besides the browser's session: the client, the redirect URI, the
    /// scope and the PKCE challenge the page showed, and the page's own nonce, so that a token is worth one decision
    /// about exactly what the user saw. (Newlines cannot occur in any of these: each is checked before.)
    static func consentSubject(
        client: OpenIDClient,
        redirectURI: String,
        checked: CheckedAuthorization,
        pageNonce: String
    ) -> String {
        [client.id, redirectURI, scopeString(checked.scope), checked.codeChallenge ?? "", pageNonce]
            .joined(separator: "\n")
    }

    /// The store's key of a consent page's nonce: apart from the native sign-in's server nonces by its prefix.
    static func consentNonceHash(_ pageNonce: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(("siwa consent page\n" + pageNonce).utf8)))
    }

    /// The consent page of a public client: what it will receive and where the browser goes next, with a form that
    /// posts the authorization request back with the user's decision, a nonce of the page's own (kept in the store,
    /// so that the form is accepted once, by any instance) and a token bound to this browser's session and to what
    /// the page showed (``consentSubject(client:redirectURI:checked:pageNonce:)``).
    func consentPage(
        _ parameters: [String: String],
        client: OpenIDClient,
        redirectURI: String,
        checked: CheckedAuthorization,
        user: UserRecord,
        session: SessionID
    ) async throws -> Response {
        let pageNonce = Base64URL.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
        try await store.saveServerNonce(
            hash: Self.consentNonceHash(pageNonce),
            expiresAt: clock.now.addingTimeInterval(configuration.web.stateLifetime)
        )
        let token = consentTokens.token(
            for: session,
            about: Self.consentSubject(client: client, redirectURI: redirectURI, checked: checked, pageNonce: pageNonce)
        )
        let fields =
            parameters.filter { $0.key != "prompt" }.sorted { $0.key < $1.key }
            + [("consent_nonce", pageNonce), ("consent_token", token)]
        let hidden = fields.map { name, value in
            #"<input type="hidden" name="\#(HTMLPage.escape(name))" value="\#(HTMLPage.escape(value))">"#
        }
        let app = HTMLPage.escape(client.displayName)
        let receives = OpenIDConfiguration.supportedScopes.filter(checked.scope.contains).map { scope in
            "<li>\(HTMLPage.escape(Self.scopeMeaning(scope, user: user)))</li>"
        }
        let signedInAs = user.displayName.map { "<p class=\"muted\">Signed in as \(HTMLPage.escape($0)).</p>\n" } ?? ""
        let page = HTMLPage(
            title: "Allow \(client.displayName)?",
            main: """
                <h1>Allow \u{201C}\(app)\u{201D} to sign you in?</h1>
                \(signedInAs)<p>\u{201C}\(app)\u{201D} will receive:</p>
                <ul>
                \(receives.joined(separator: "\n"))
                </ul>
                <p class="notice">Allow it only if you opened \u{201C}\(app)\u{201D} yourself just now. You will be \
                sent to <code>\(HTMLPage.escape(redirectURI))</code>.</p>
                <form method="post" action="/oauth/authorize">
                \(hidden.joined(separator: "\n"))
                <button class="apple-button black" type="submit" name="decision" value="allow">Allow</button>
                <button class="secondary" type="submit" name="decision" value="deny">Don\u{2019}t allow</button>
                </form>
                """
        )
        return HTMLPage.response(
            page.html,
            status: .ok,
            policy: Self.consentPagePolicy(redirectURI: redirectURI)
        )
    }

    /// The pages' policy, with the client's redirect URI among the form's targets: browsers check `form-action`
    /// against the redirect that answers the form too, and the decision's answer is a redirect to the client.
    static func consentPagePolicy(redirectURI: String) -> String {
        HTMLPage.policy(formAction: formActionSource(redirectURI))
    }

    /// The CSP source that matches a redirect URI: its origin for http and https, its scheme for an app's own
    /// (`com.example.app:`); `nil` when it has characters a source cannot hold.
    static func formActionSource(_ redirectURI: String) -> String? {
        let scheme = redirectURI.prefix { $0 != ":" }.lowercased()
        let source = scheme == "http" || scheme == "https" ? ReturnURLPolicy.origin(of: redirectURI) : scheme + ":"
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.:/[]".utf8)
        guard let source, source.utf8.count > 1, source.utf8.allSatisfy(allowed.contains) else { return nil }
        return source
    }

    /// What a scope gives the client, in words, with the user's own data where siwa has it.
    static func scopeMeaning(_ scope: String, user: UserRecord) -> String {
        switch scope {
        case "openid": "An id for your account, the same each time you sign in to it"
        case "email": user.email.map { "Your e-mail address (\($0))" } ?? "Your e-mail address"
        case "profile": "Your name"
        default: scope
        }
    }

    /// `POST /oauth/authorize`: the consent page's decision. The authorization request comes back in the form and is
    /// checked again as a new one; the form must come from this site, in the browser session the page was made for,
    /// for the same client. Allowing is remembered (``AccountStore/saveClientConsent(_:)``) and answered with a code;
    /// declining with `access_denied`. Both are 303 redirects to the client. A browser whose access cookie expired
    /// while the page was open is renewed from its refresh cookie, as on the `GET`, when the form comes from this site;
    /// without a session at all (it ended) the browser signs in again and comes back to the consent page.
    @Sendable func consent(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        var request = request
        let formType = request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded")
        let body: ByteBuffer
        do {
            body = try await request.collectBody(limit: configuration.maximumBodySize)
        } catch let error as AuthServerError {
            return WebErrorPage(error).response
        }
        guard formType == true, var fields = FormURLEncoding.decode(body.readableBytesView) else {
            return Self.page("invalid_request", "The consent form could not be read. Go back to the app and try again.")
        }
        let decision = fields.removeValue(forKey: "decision")
        let token = fields.removeValue(forKey: "consent_token")
        let pageNonce = fields.removeValue(forKey: "consent_nonce")
        fields["prompt"] = nil
        let client: OpenIDClient
        let redirect: AuthorizationRedirect
        let checked: CheckedAuthorization
        switch validate(fields, wellFormed: true, redirectStatus: .seeOther, logger: context.logger) {
        case .valid(let validClient, let validRedirect, let validChecked):
            (client, redirect, checked) = (validClient, validRedirect, validChecked)
        case .refused(let answer):
            return answer
        }
        guard client.requiresConsent else {
            return Self.page("invalid_request", "This application does not ask for your consent.")
        }
        let claims: AccessTokenClaims
        var renewed: SessionService.Tokens?
        switch context.authentication {
        case .session(let session, _):
            claims = session
        case .refused, nil:
            // No access cookie: the refresh cookie (whose origin the route's guard checked) renews the session.
            guard cookies.refreshToken(in: request) != nil else { return signInFirst(fields) }
            guard let renewal = try await renewBrowserSession(request, logger: context.logger) else {
                return signInFirst(fields)
            }
            (claims, renewed) = (renewal.claims, renewal.tokens)
        default:
            return signInFirst(fields)
        }
        var answer = try await decide(
            decision,
            token: token,
            pageNonce: pageNonce,
            client: client,
            redirect: redirect,
            checked: checked,
            claims: claims,
            context: context
        )
        if let renewed { cookies.set(renewed, on: &answer) }
        return answer
    }

    /// The consent form's decision, in the browser session `claims`.
    private func decide(
        _ decision: String?,
        token: String?,
        pageNonce: String?,
        client: OpenIDClient,
        redirect: AuthorizationRedirect,
        checked: CheckedAuthorization,
        claims: AccessTokenClaims,
        context: SiwaRequestContext
    ) async throws -> Response {
        guard let pageNonce, pageNonce.utf8.count == 22,
            consentTokens.accepts(
                token,
                for: claims.sessionID,
                about: Self.consentSubject(
                    client: client,
                    redirectURI: redirect.redirectURI,
                    checked: checked,
                    pageNonce: pageNonce
                )
            )
        else {
            context.logger.info("OpenID consent refused: form token", metadata: ["client": "\(client.id)"])
            return WebErrorPage(
                status: .forbidden,
                code: "invalid_consent_form",
                reason: "This consent form has expired, was changed, or was made for another sign-in. Go back to the "
                    + "app and sign in again."
            ).response
        }
        // Once: a form posted twice (or re-posted with its token) gives one decision, on whichever instance.
        guard try await store.consumeServerNonce(hash: Self.consentNonceHash(pageNonce), now: clock.now) else {
            context.logger.info("OpenID consent refused: form already used", metadata: ["client": "\(client.id)"])
            return WebErrorPage(
                status: .forbidden,
                code: "consent_form_used",
                reason: "This consent form has been sent already. Go back to the app and sign in again."
            ).response
        }
        guard let user = try await store.user(id: claims.userID), user.status == .active else {
            return redirect.error(.init("access_denied", "the account is disabled or no longer exists"))
        }
        switch decision {
        case "allow":
            let earlier = try await store.clientConsent(
                userID: user.id,
                clientID: client.id,
                redirectURI: redirect.redirectURI
            )
            let scope = checked.scope.union(earlier.map { Self.scopeSet($0.scope) } ?? [])
            try await store.saveClientConsent(
                ClientConsentRecord(
                    userID: user.id,
                    clientID: client.id,
                    redirectURI: redirect.redirectURI,
                    scope: Self.scopeString(scope),
                    grantedAt: clock.now
                )
            )
            await audit.append(
                .clientConsentGranted,
                userID: user.id,
                actor: .user,
                sessionID: claims.sessionID,
                details: ["client": client.id, "redirect_uri": redirect.redirectURI, "scope": Self.scopeString(scope)]
            )
            return try await issueCode(
                to: client,
                redirect: redirect,
                checked: checked,
                user: user,
                browserSession: claims,
                logger: context.logger
            )
        case "deny":
            context.logger.info("OpenID consent declined", metadata: ["client": "\(client.id)"])
            return redirect.error(.init("access_denied", "the user did not allow the application"))
        default:
            return Self.page("invalid_request", "The consent form has no decision. Go back to the app and try again.")
        }
    }
}

extension RouteAccess.Refusal {
    /// The consent form's: an HTML page, which for a form sent from another site says it was ignored.
    static let consentPage = RouteAccess.Refusal(name: "HTML page") { error, _ in
        guard error.code == AuthServerError.Code.csrfCheckFailed else { return WebErrorPage(error).response }
        return WebErrorPage(
            status: .forbidden,
            code: error.code,
            reason: "This consent form was sent from another site, so it was ignored. Go back to the app and sign in "
                + "again."
        ).response
    }
}
