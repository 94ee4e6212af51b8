import AccountStore
import AppleSignIn
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The web sign-in: `GET /auth/apple/authorize` (302 to Apple), `POST /auth/apple/callback` (Apple's cross-site
/// `form_post`), `GET /login`, and the domain-association file.
///
/// The flow's `state`, nonce and return URL live in the store (only the SHA-256 of `state`), so any instance can
/// finish a flow and nothing depends on a cookie that Apple's cross-site POST would not carry.
struct WebController: RouteProvider {
    let configuration: AuthServerConfiguration
    let apple: AppleSignInConfiguration
    let store: any AccountStore
    let signIn: SignInService
    let sessions: SessionService
    let policy: ReturnURLPolicy
    let clock: any WallClock

    /// The return URL of the login page's button.
    static let defaultReturnURL = "/login"

    /// - Throws: ``AppleSignInError/Code/invalidConfiguration`` when an allowed origin or package is malformed.
    init(
        configuration: AuthServerConfiguration,
        apple: AppleSignInConfiguration,
        store: any AccountStore,
        signIn: SignInService,
        sessions: SessionService,
        clock: any WallClock
    ) throws {
        self.configuration = configuration
        self.apple = apple
        self.store = store
        self.signIn = signIn
        self.sessions = sessions
        self.clock = clock
        let ownOrigin = ReturnURLPolicy.origin(of: configuration.publicURL).map { [$0] } ?? []
        self.policy = try ReturnURLPolicy(
            allowedOrigins: ownOrigin + configuration.web.allowedReturnOrigins,
            allowedAndroidPackages: configuration.web.allowedAndroidPackages
        )
        // The page after sign-in must be a return URL the flow accepts, or every sign-in from /login would fail.
        if let after = configuration.branding.afterSignInURL { _ = try policy.resolve(after) }
    }

    func addRoutes(to routes: PolicedRoutes) {
        let auth = routes.group("/auth")
        auth.get("/apple/authorize", access: RouteAccess.open.spending(.flowStart), use: authorize)
        auth.post("/apple/callback", access: .checkedByHandler(.appleCallback), use: callback)
        routes.get("/login", access: Self.loginPageAccess, use: login)
        routes.get("/branding/logo", access: .open, use: logo)
        routes.get("/.well-known/apple-developer-domain-association.txt", access: .open, use: domainAssociation)
    }

    /// The login page's: the browser's session cookie, when it has one, shows who is signed in. It spends like a
    /// sign-in: an expired session is renewed there from the refresh cookie, a rotation.
    static let loginPageAccess = RouteAccess(credential: .session, presentations: [.cookie], required: false)
        .spending(.client)

    private var cookies: SessionCookies { SessionCookies(configuration: configuration) }

    func servicesID() throws -> ClientID {
        guard let servicesID = apple.servicesID else {
            throw AuthServerError(
                .serviceUnavailable,
                AuthServerError.Code.webSigninDisabled,
                "web sign-in is not configured on this server: set the Services ID (servicesID)"
            )
        }
        return servicesID
    }

    // MARK: Authorize

    /// A browser route: a refusal (a bad return URL, web sign-in not configured) is an HTML page with the error's
    /// status and code, not JSON.
    @Sendable func authorize(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        do {
            return try await startFlow(
                request,
                returnURL: request.uri.queryParameters["returnUrl"].map(String.init) ?? returnURLAfterSignIn,
                redirectURI: configuration.webCallbackURL
            )
        } catch let error as AuthServerError {
            return WebErrorPage(error).branded(configuration.branding).response
        } catch {
            // A browser gets a page, also when the database cannot be reached.
            context.logger.warning("web sign-in could not start", metadata: ["error": "\(error)"])
            return WebErrorPage(unexpected: error).branded(configuration.branding).response
        }
    }

    private var flowBinding: FlowBindingCookie { FlowBindingCookie(configuration: configuration) }

    /// Starts a web sign-in: checks the return URL, keeps the flow's state server-side and redirects to Apple with
    /// `redirectURI` as the callback (siwa's own, or a compatibility contract's).
    /// The flow is bound to `request`'s browser (``FlowBindingCookie``).
    func startFlow(_ request: Request, returnURL requested: String, redirectURI: String) async throws -> Response {
        let servicesID = try servicesID()
        let destination: ReturnURLPolicy.Destination
        do {
            destination = try policy.resolve(requested)
        } catch {
            throw AuthServerError.badRequest(AuthServerError.Code.invalidReturnURL, error.reason)
        }
        let state = WebAuthorization.randomToken()
        let nonce = WebAuthorization.randomToken()
        let now = clock.now
        try await store.saveWebFlowState(
            WebFlowState(
                stateHash: Self.hash(state),
                nonce: nonce,
                returnURL: destination.stringValue,
                createdAt: now,
                expiresAt: now.addingTimeInterval(configuration.web.stateLifetime)
            )
        )
        let location = WebAuthorization.authorizeURL(
            baseURL: apple.appleBaseURL,
            clientID: servicesID,
            redirectURI: redirectURI,
            state: state,
            nonce: nonce
        )
        var response = Response(
            status: .found,
            headers: [
                .location: location, .cacheControl: "no-store", HTTPField.Name("Referrer-Policy")!: "no-referrer",
            ]
        )
        flowBinding.add(state: state, from: request, to: &response)
        return response
    }

    // MARK: Callback

    @Sendable func callback(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let servicesID = try servicesID()
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: AuthorizationCallback.maximumBodySize)
        } catch {
            return WebErrorPage(
                AuthServerError(.contentTooLarge, AuthServerError.Code.bodyTooLarge, "the callback body is too large")
            ).branded(configuration.branding).response
        }
        return await completeFlow(
            request,
            body: Array(buffer.readableBytesView),
            servicesID: servicesID,
            redirectURI: configuration.webCallbackURL,
            context: context
        )
    }

    /// Finishes a web sign-in from Apple's `form_post` body, which Apple sent to `redirectURI`; any failure is an
    /// error page that changes no stored data.
    /// The flow must come back to the browser that started it.
    func completeFlow(
        _ request: Request,
        body: [UInt8],
        servicesID: ClientID,
        redirectURI: String,
        context: SiwaRequestContext
    ) async -> Response {
        let logger = context.logger
        var response: Response
        do {
            response = try await finish(
                request,
                body: body,
                servicesID: servicesID,
                redirectURI: redirectURI,
                context: context
            )
        } catch let error as AuthServerError {
            logger.info("web sign-in refused", metadata: ["error": "\(error.code)"])
            response = WebErrorPage(error).branded(configuration.branding).response
        } catch {
            logger.error("web sign-in failed", metadata: ["error": "\(error)"])
            response = WebErrorPage(unexpected: error).branded(configuration.branding).response
        }
        if let state = FormURLEncoding.decode(body)?["state"] {
            flowBinding.remove(state: state, from: request, on: &response)
        }
        return response
    }

    private func finish(
        _ request: Request,
        body: [UInt8],
        servicesID: ClientID,
        redirectURI: String,
        context: SiwaRequestContext
    ) async throws -> Response {
        let logger = context.logger
        let callback: AuthorizationCallback
        do {
            callback = try AuthorizationCallback(formBody: body)
        } catch {
            throw AuthServerError.badRequest(
                AuthServerError.Code.invalidCallback,
                "Apple's answer could not be read: \(error.reason)."
            )
        }
        switch callback {
        case .cancelled(let state):
            // An Android app learns of the cancel through its intent; a browser goes back to the login page.
            if let state,
                case .consumed(let flow) = try await store.consumeWebFlowState(
                    stateHash: Self.hash(state),
                    now: clock.now
                ), case .android(let package)? = try? policy.resolve(flow.returnURL)
            {
                return Self.redirect(
                    ReturnURLPolicy.androidIntentURL(
                        package: package,
                        parameters: [("error", "user_cancelled_authorize"), ("state", state)]
                    )
                )
            }
            return Self.redirect("/login?cancelled=1")
        case .failed(let error, _):
            let shown = error.count <= 64 ? error : String(error.prefix(64)) + "…"
            throw AuthServerError.badRequest(
                AuthServerError.Code.appleError,
                "Apple ended the sign-in with the error '\(shown)'."
            )
        case .authorized(let code, let idToken, let state, let user):
            let flow = try await consume(state: state)
            // Checked after consuming, so that a refused submission uses the state up too.
            guard flowBinding.binds(state, in: request) else {
                logger.warning("web sign-in callback from a browser that did not start it: refused")
                throw AuthServerError(
                    .forbidden,
                    AuthServerError.Code.flowNotStartedHere,
                    "This sign-in was not started in this browser. Please start again from the sign-in page."
                )
            }
            let destination: ReturnURLPolicy.Destination
            do {
                destination = try policy.resolve(flow.returnURL)
            } catch {
                throw AuthServerError.badRequest(
                    AuthServerError.Code.invalidReturnURL,
                    "The return address is no longer allowed."
                )
            }
            if case .android(let package) = destination {
                // The app finishes the sign-in with these parameters (POST /auth/apple/native); check them first so
                // that a bad answer shows here rather than in the app.
                _ = try await signIn.verifyIdentityToken(
                    idToken,
                    nonce: flow.nonce,
                    requiredAudience: servicesID,
                    consumesServerNonce: false
                )
                let fields = FormURLEncoding.decode(body) ?? [:]
                let parameters = ["code", "id_token", "state", "user"].compactMap { name in
                    fields[name].map { (name, $0) }
                }
                logger.info("web sign-in handed to an Android app", metadata: ["package": "\(package)"])
                return Self.redirect(ReturnURLPolicy.androidIntentURL(package: package, parameters: parameters))
            }
            let signedIn = try await signIn.signIn(
                identityToken: idToken,
                authorizationCode: code,
                nonce: flow.nonce,
                givenName: user?.firstName,
                familyName: user?.lastName,
                redirectURI: redirectURI,
                flow: .web,
                requiredAudience: servicesID,
                origin: SessionOrigin(request, context: context, configuration: configuration)
            )
            let accessToken = try signIn.accessToken(for: signedIn).token
            var response = Self.redirect(destination.stringValue)
            cookies.set(accessToken: accessToken, refreshToken: signedIn.refreshToken, on: &response)
            return response
        }
    }

    /// Uses up the flow's state: it must exist, be unexpired and unused.
    private func consume(state: String) async throws -> WebFlowState {
        guard state.utf8.count <= 512 else {
            throw AuthServerError.badRequest(
                AuthServerError.Code.stateNotFound,
                "This sign-in is unknown. Please start again."
            )
        }
        switch try await store.consumeWebFlowState(stateHash: Self.hash(state), now: clock.now) {
        case .consumed(let flow):
            return flow
        case .alreadyUsed:
            throw AuthServerError.badRequest(
                AuthServerError.Code.stateAlreadyUsed,
                "This sign-in was already completed. Please start again."
            )
        case .expired:
            throw AuthServerError.badRequest(
                AuthServerError.Code.stateExpired,
                "This sign-in took too long and expired. Please start again."
            )
        case .notFound:
            throw AuthServerError.badRequest(
                AuthServerError.Code.stateNotFound,
                "This sign-in is unknown. Please start again."
            )
        }
    }

    // MARK: Login page

    /// Where a browser goes after a sign-in that named no return URL: the product's page, else the login page.
    var returnURLAfterSignIn: String { configuration.branding.afterSignInURL ?? Self.defaultReturnURL }

    @Sendable func login(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let returnURL = returnURLAfterSignIn.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "%2Flogin"
        return try await loginPage(
            request,
            context: context,
            authorizePath: "/auth/apple/authorize?returnUrl=\(returnURL)"
        )
    }

    /// `GET /branding/logo`: the product's logo (`SIWA_BRANDING_LOGO_FILE`), or 404.
    @Sendable func logo(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        guard let logo = configuration.branding.logo else {
            throw AuthServerError(.notFound, AuthServerError.Code.notFound, "no logo is configured (branding.logoFile)")
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: logo.contentType, .cacheControl: "public, max-age=3600",
                // An SVG opened on its own runs no script and loads nothing.
                .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; sandbox",
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: logo.bytes))
        )
    }

    /// The login page, its button leading to `authorizePath`.
    func loginPage(_ request: Request, context: SiwaRequestContext, authorizePath: String) async throws -> Response {
        let query = request.uri.queryParameters
        var page = LoginPage()
        page.branding = configuration.branding
        page.authorizePath = authorizePath
        page.style = configuration.branding.buttonStyle
        if configuration.branding.showsButtonStyles, let style = query["style"] {
            page.style = LoginPage.ButtonStyle(rawValue: String(style)) ?? page.style
        }
        if apple.servicesID == nil {
            page.notice = .webSignInDisabled
        } else if query["cancelled"] == "1" {
            page.notice = .cancelled
        } else if query["signedout"] == "1" {
            page.notice = .signedOut
        }
        var newTokens: (accessToken: String, refreshToken: String)?
        var clearCookies = false
        var claims = context.session
        if claims == nil, cookies.refreshToken(in: request) != nil {
            // The access cookie is missing or expired: rotate the refresh cookie server-side.
            do {
                let rotated = try await sessions.rotate(
                    refreshToken: cookies.refreshToken(in: request) ?? "",
                    logger: context.logger
                )
                newTokens = (rotated.accessToken, rotated.refreshToken ?? "")
                claims = try sessions.authenticate(rotated.accessToken)
            } catch let error as AuthServerError {
                context.logger.debug("refresh cookie refused", metadata: ["error": "\(error.code)"])
                clearCookies = true
            }
        } else if claims == nil, cookies.accessToken(in: request) != nil {
            clearCookies = true
        }
        if let claims {
            do {
                page.user = try await sessions.account(claims.userID)
            } catch is AuthServerError {
                page.user = nil
            }
            if page.user == nil { clearCookies = true }
        }
        var response = page.page.response()
        if clearCookies {
            cookies.clear(on: &response)
        } else if let newTokens {
            cookies.set(accessToken: newTokens.accessToken, refreshToken: newTokens.refreshToken, on: &response)
        }
        return response
    }

    // MARK: Domain association

    @Sendable func domainAssociation(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        guard let text = configuration.web.domainAssociation else {
            throw AuthServerError(
                .notFound,
                AuthServerError.Code.notFound,
                "no domain-association file is configured (web.domainAssociation)"
            )
        }
        return Response(
            status: .ok,
            headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "public, max-age=3600"],
            body: .init(byteBuffer: ByteBuffer(string: text))
        )
    }

    // MARK: Helpers

    static func hash(_ state: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(state.utf8)))
    }

    /// 303 See Other: the browser follows with a GET.
    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }
}
