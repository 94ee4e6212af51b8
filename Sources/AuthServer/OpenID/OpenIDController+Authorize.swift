import AccountStore
import AppleSignIn
import Foundation
import HTTPTypes
import Hummingbird
import Logging

extension OpenIDController {
    /// The longest `state` or `nonce` accepted (they travel through the sign-in's return URL).
    static let maximumParameterLength = 512

    /// `GET /oauth/authorize` (OpenID Connect Core §3.1.2, RFC 6749 §4.1, RFC 7636).
    ///
    /// An unknown `client_id` or a `redirect_uri` that is not registered for it is an HTML page, never a redirect
    /// (RFC 6749 §4.1.2.1); every other refusal is a redirect to the registered URI with `error`,
    /// `error_description`, `state` and `iss`. Without a browser session the browser goes through siwa's web sign-in
    /// and comes back to this same request; with one (renewed from the refresh cookie when its access token has
    /// expired), the answer is a code: a confidential client is first-party and gets it at once; a public client
    /// gets it once the user has allowed it on the consent page (``consent(_:context:)``), which is remembered.
    /// `prompt=none` without a session is `login_required`, and without the consent `consent_required`;
    /// `prompt=login` signs in with Apple again; `prompt=consent` asks a public client's consent again.
    @Sendable func authorize(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let query = request.uri.query ?? ""
        let strict = FormURLEncoding.decode(Array(query.utf8))
        // A parameter given twice (RFC 6749 §3.1) is refused; when the client and redirect URI are still certain,
        // by a redirect like any other error.
        let parameters = strict ?? Self.lenientQuery(query).compactMapValues { $0.count == 1 ? $0[0] : nil }
        let client: OpenIDClient
        let redirect: AuthorizationRedirect
        let checked: CheckedAuthorization
        switch validate(parameters, wellFormed: strict != nil, logger: context.logger) {
        case .valid(let validClient, let validRedirect, let validChecked):
            (client, redirect, checked) = (validClient, validRedirect, validChecked)
        case .refused(let answer):
            return answer
        }

        // The browser's session: its access cookie, else its refresh cookie rotated here.
        var renewed: SessionService.Tokens?
        var claims: AccessTokenClaims?
        if !checked.forcesLogin {
            claims = context.session
            if claims == nil, let renewal = try await renewBrowserSession(request, logger: context.logger) {
                (claims, renewed) = (renewal.claims, renewal.tokens)
            }
        }
        guard let claims else {
            if checked.prompt.contains("none") {
                return redirect.error(.init("login_required", "the user is not signed in to siwa"))
            }
            return signInFirst(parameters)
        }
        guard let user = try await store.user(id: claims.userID), user.status == .active else {
            return redirect.error(.init("access_denied", "the account is disabled or no longer exists"))
        }
        if client.requiresConsent,
            try await !hasConsent(of: user.id, to: client, at: redirect.redirectURI, for: checked.scope)
                || checked.prompt.contains("consent")
        {
            guard !checked.prompt.contains("none") else {
                return redirect.error(.init("consent_required", "the user has not allowed this application yet"))
            }
            var page = try await consentPage(
                parameters,
                client: client,
                redirectURI: redirect.redirectURI,
                checked: checked,
                user: user,
                session: claims.sessionID
            )
            if let renewed { cookies.set(renewed, on: &page) }
            return page
        }
        var response = try await issueCode(
            to: client,
            redirect: redirect,
            checked: checked,
            user: user,
            browserSession: claims,
            logger: context.logger
        )
        if let renewed { cookies.set(renewed, on: &response) }
        return response
    }

    /// The browser's session renewed from its refresh cookie (rotated here), for a browser whose access cookie has
    /// expired; `nil` when it has no refresh cookie or the token is refused.
    func renewBrowserSession(
        _ request: Request,
        logger: Logger
    ) async throws -> (claims: AccessTokenClaims, tokens: SessionService.Tokens)? {
        guard let refreshToken = cookies.refreshToken(in: request) else { return nil }
        do {
            let rotated = try await sessions.rotate(refreshToken: refreshToken, logger: logger)
            return (try sessions.authenticate(rotated.accessToken), rotated)
        } catch let error as AuthServerError {
            logger.debug("refresh cookie refused", metadata: ["error": "\(error.code)"])
            return nil
        }
    }

    /// Stores a new code for `user` and answers the redirect that hands it to the client.
    func issueCode(
        to client: OpenIDClient,
        redirect: AuthorizationRedirect,
        checked: CheckedAuthorization,
        user: UserRecord,
        browserSession claims: AccessTokenClaims,
        logger: Logger
    ) async throws -> Response {
        let code = WebAuthorization.randomToken(byteCount: 32)
        let now = clock.now
        let browserSession = try await store.sessions(userID: user.id, now: now, limit: 100)
            .first { $0.id == claims.sessionID }
        try await store.saveAuthorizationCode(
            AuthorizationCodeRecord(
                codeHash: Self.hash(code),
                clientID: client.id,
                redirectURI: redirect.redirectURI,
                scope: Self.scopeString(checked.scope),
                codeChallenge: checked.codeChallenge,
                nonce: checked.nonce,
                userID: user.id,
                browserSessionID: claims.sessionID,
                authTime: browserSession?.createdAt ?? user.lastSignInAt ?? claims.issuedAt,
                createdAt: now,
                expiresAt: now.addingTimeInterval(openID.codeLifetime)
            )
        )
        logger.info("OpenID authorization code issued", metadata: ["client": "\(client.id)"])
        return redirect.success(code: code)
    }

    /// An authorization request checked: valid, with its client and where its answer goes, or the answer that
    /// refuses it.
    enum Validation {
        case valid(client: OpenIDClient, redirect: AuthorizationRedirect, checked: CheckedAuthorization)
        case refused(Response)
    }

    /// Checks an authorization request's parameters (the query of `GET /oauth/authorize`, the consent form's fields):
    /// an unknown client or a redirect URI it has not registered is a page; anything else wrong is a redirect to the
    /// client with the error.
    /// - Parameters:
    ///   - parameters: the request's parameters, each given once.
    ///   - wellFormed: `false` when a parameter was given twice or wrongly encoded (refused once the client is known).
    ///   - redirectStatus: the status of the redirects that answer it (303 after a form's POST).
    ///   - logger: where refusals are logged (the client id and the error code, never a parameter's value).
    func validate(
        _ parameters: [String: String],
        wellFormed: Bool,
        redirectStatus: HTTPResponse.Status = .found,
        logger: Logger
    ) -> Validation {
        guard let clientID = parameters["client_id"], let client = openID.client(clientID) else {
            logger.info("OpenID authorize refused: unknown client")
            return .refused(
                Self.page("invalid_client", "The application that sent you here is not registered with this server.")
            )
        }
        guard let redirectURI = parameters["redirect_uri"], client.redirectURIs.contains(redirectURI) else {
            logger.info("OpenID authorize refused: redirect URI not registered", metadata: ["client": "\(clientID)"])
            return .refused(
                Self.page(
                    "invalid_redirect_uri",
                    "The application asked to send you back to an address it has not registered with this server."
                )
            )
        }
        let redirect = AuthorizationRedirect(
            redirectURI: redirectURI,
            state: parameters["state"].flatMap { $0.utf8.count <= Self.maximumParameterLength ? $0 : nil },
            issuer: issuerURL,
            status: redirectStatus
        )
        guard wellFormed else {
            return .refused(redirect.error(.init("invalid_request", "a parameter is given twice or wrongly encoded")))
        }
        switch Self.checked(parameters, client: client) {
        case .success(let checked):
            return .valid(client: client, redirect: redirect, checked: checked)
        case .failure(let refusal):
            logger.info("OpenID authorize refused", metadata: ["client": "\(clientID)", "error": "\(refusal.error)"])
            return .refused(redirect.error(refusal))
        }
    }

    /// What a valid authorization request asks for.
    struct CheckedAuthorization {
        var scope: Set<String>
        var nonce: String?
        var codeChallenge: String?
        var prompt: Set<String>
        var forcesLogin: Bool { prompt.contains("login") }
    }

    /// ``check(_:client:)`` as a result (a typed `catch` crashes the Swift 6.3 compiler here).
    static func checked(
        _ parameters: [String: String],
        client: OpenIDClient
    ) -> Result<CheckedAuthorization, AuthorizationRedirect.Refusal> {
        Result { () throws(AuthorizationRedirect.Refusal) in try check(parameters, client: client) }
    }

    /// Checks everything but the client and redirect URI.
    /// - Throws: ``AuthorizationRedirect/Refusal`` naming the first problem.
    static func check(
        _ parameters: [String: String],
        client: OpenIDClient
    ) throws(AuthorizationRedirect.Refusal) -> CheckedAuthorization {
        typealias Refusal = AuthorizationRedirect.Refusal
        if parameters["request"] != nil {
            throw Refusal("request_not_supported", "request objects are not supported")
        }
        if parameters["request_uri"] != nil {
            throw Refusal("request_uri_not_supported", "request_uri is not supported")
        }
        guard let responseType = parameters["response_type"] else {
            throw Refusal("invalid_request", "response_type is missing")
        }
        guard responseType == "code" else {
            throw Refusal("unsupported_response_type", "only response_type=code is supported")
        }
        if let mode = parameters["response_mode"], mode != "query" {
            throw Refusal("invalid_request", "only response_mode=query is supported")
        }
        if let state = parameters["state"], state.utf8.count > maximumParameterLength {
            throw Refusal("invalid_request", "state is longer than \(maximumParameterLength) bytes")
        }
        let requested = scopeSet(parameters["scope"] ?? "")
        guard requested.contains("openid") else {
            throw Refusal("invalid_scope", "scope must include openid")
        }
        let nonce = parameters["nonce"]
        if let nonce, nonce.isEmpty || nonce.utf8.count > maximumParameterLength {
            throw Refusal("invalid_request", "nonce must be 1 to \(maximumParameterLength) bytes")
        }
        let challenge = parameters["code_challenge"]
        let method = parameters["code_challenge_method"]
        if let challenge {
            guard (method ?? "plain") == "S256" else {
                throw Refusal("invalid_request", "code_challenge_method must be S256")
            }
            guard challenge.utf8.count == 43, Base64URL.decode(challenge)?.count == 32 else {
                throw Refusal("invalid_request", "code_challenge must be the base64url SHA-256 of the code verifier")
            }
        } else if method != nil {
            throw Refusal("invalid_request", "code_challenge_method without code_challenge")
        } else if client.isPublic {
            throw Refusal("invalid_request", "a public client must send a PKCE code_challenge (S256)")
        }
        let prompt = scopeSet(parameters["prompt"] ?? "")
        if prompt.contains("none"), prompt.count > 1 {
            throw Refusal("invalid_request", "prompt=none cannot be combined with other values")
        }
        if let unknown = prompt.subtracting(["none", "login"]).sorted().first {
            if unknown == "consent" || unknown == "select_account" {
                // `consent` shows a public client's consent page again; confidential clients are first-party and
                // have none. One Apple ID per browser session: `select_account` is granted as asked.
            } else {
                throw Refusal(
                    "invalid_request",
                    "prompt value \(LoggedText.quoted(unknown, limit: 32)) is not supported"
                )
            }
        }
        return CheckedAuthorization(
            scope: requested.intersection(client.scopes).intersection(OpenIDConfiguration.supportedScopes),
            nonce: nonce,
            codeChallenge: challenge,
            prompt: prompt
        )
    }

    /// Every value of every parameter of a query, as ``FormURLEncoding/lenientPairs(_:)`` reads them.
    static func lenientQuery(_ query: String) -> [String: [String]] {
        var fields: [String: [String]] = [:]
        for (name, value) in FormURLEncoding.lenientPairs(query.utf8) { fields[name, default: []].append(value) }
        return fields
    }

    /// Sends the browser through siwa's web sign-in, to come back to this request (without `prompt=login`, which
    /// the sign-in satisfies).
    func signInFirst(_ parameters: [String: String]) -> Response {
        let kept = parameters.filter { $0.key != "prompt" || $0.value != "login" }.sorted { $0.key < $1.key }
        let returnURL = "/oauth/authorize?" + FormURLEncoding.encode(kept.map { ($0.key, $0.value) })
        guard returnURL.utf8.count <= 2048 else {
            return Self.page("invalid_request", "The authorization request is too long.")
        }
        return Response(
            status: .seeOther,
            headers: [
                .location: "/auth/apple/authorize?returnUrl=" + FormURLEncoding.percentEncode(returnURL),
                .cacheControl: "no-store",
            ]
        )
    }

    /// The HTML page of a request that cannot be redirected back (unknown client, unregistered redirect URI).
    static func page(_ code: String, _ reason: String) -> Response {
        WebErrorPage(status: .badRequest, code: code, reason: reason).response
    }
}

/// The authorization response, sent to the client's registered redirect URI (RFC 6749 §4.1.2), with `state` and
/// `iss` (RFC 9207).
struct AuthorizationRedirect {
    let redirectURI: String
    let state: String?
    let issuer: String
    /// 302 for the authorization request's GET; 303 after the consent form's POST, so that the browser follows it
    /// with a GET.
    var status: HTTPResponse.Status = .found

    /// An error to send back to the client (RFC 6749 §4.1.2.1).
    struct Refusal: Error {
        let error: String
        let description: String

        init(_ error: String, _ description: String) {
            self.error = error
            self.description = description
        }
    }

    func success(code: String) -> Response {
        redirect([("code", code)])
    }

    func error(_ refusal: Refusal) -> Response {
        redirect([("error", refusal.error), ("error_description", refusal.description)])
    }

    private func redirect(_ fields: [(String, String)]) -> Response {
        var all = fields
        if let state { all.append(("state", state)) }
        all.append(("iss", issuer))
        let separator = redirectURI.contains("?") ? "&" : "?"
        return Response(
            status: status,
            headers: [
                .location: redirectURI + separator + FormURLEncoding.encode(all), .cacheControl: "no-store",
                HTTPField.Name("Referrer-Policy")!: "no-referrer",
            ]
        )
    }
}
