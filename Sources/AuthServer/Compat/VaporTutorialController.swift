import AccountStore
import AppleSignIn
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The Vapor 4 tutorial's API contract (`SIWAAPIController`): `POST /api/auth/siwa` and `GET /api/users/me`.
///
/// The tutorial hands the app one opaque, long-lived bearer token and checks it against the database on each request.
/// siwa answers the session's refresh token in that role (30 days, never rotated on this contract) and checks it the
/// same way, so logout, deletion and revocation take effect at once. A siwa access token (JWT) is accepted too.
struct VaporTutorialController: RouteProvider {
    let configuration: AuthServerConfiguration
    let signIn: SignInService
    let sessions: SessionService
    let web: WebController

    /// `SIWAViewController`'s callback, the web flow's `redirect_uri` on this contract.
    var callbackURL: String { configuration.publicBaseURL + "/web/auth/siwa/callback" }
    static let signInPath = "/web/auth/siwa/sign-in"

    struct SignInBody: Decodable {
        var appleIdentityToken: String
        var firstName: String?
        var lastName: String?
        var authorizationCode: String?
    }

    /// The tutorial's user object: `{"id", "email", "firstName", "lastName"}`, absent values left out.
    struct UserBody: Equatable {
        var id: String
        var email: String?
        var firstName: String?
        var lastName: String?

        /// Written directly: the same document as `JSONEncoder`'s (the same members and values; `JSONEncoder` also
        /// escapes `/`, which JSON does not require), without its cost on every sign-in.
        func write(to out: inout [UInt8]) {
            func member(_ key: StaticString, _ value: String?) {
                guard let value else { return }
                key.withUTF8Buffer { out.append(contentsOf: $0) }
                JSONWriter.appendString(value, to: &out)
            }
            member(#"{"id":"#, id)
            member(#","email":"#, email)
            member(#","firstName":"#, firstName)
            member(#","lastName":"#, lastName)
            out.append(UInt8(ascii: "}"))
        }

        var json: [UInt8] {
            var out: [UInt8] = []
            out.reserveCapacity(160)
            write(to: &out)
            return out
        }
    }

    /// The sign-in's answer: `{"accessToken", "user"}`, where the tutorial's bearer is the session's refresh token.
    struct SignInAnswer: Equatable {
        var accessToken: String
        var user: UserBody

        var json: [UInt8] {
            var out: [UInt8] = []
            out.reserveCapacity(256)
            out.append(contentsOf: #"{"accessToken":"#.utf8)
            JSONWriter.appendString(accessToken, to: &out)
            out.append(contentsOf: #","user":"#.utf8)
            user.write(to: &out)
            out.append(UInt8(ascii: "}"))
            return out
        }
    }

    func addRoutes(to routes: PolicedRoutes) {
        routes.post("/api/auth/siwa", access: .open, use: signIn)
        // A siwa access token (a JWT), or the tutorial's opaque token, which the handler checks; a JWT that is not a
        // session is refused there in the tutorial's envelope.
        routes.get(
            "/api/users/me",
            access: RouteAccess(credential: .sessionOrContractToken, presentations: [.bearer], required: false),
            use: me
        )
        routes.get(Self.signInPath, access: WebController.loginPageAccess, use: signInPage)
        routes.get("/web/auth/siwa/authorize", access: RouteAccess.open.spending(.flowStart), use: authorize)
        routes.post("/web/auth/siwa/callback", access: .checkedByHandler(.appleCallback), use: callback)
    }

    /// `SIWAViewController`'s sign-in page: siwa's login page, its button starting this contract's web flow.
    @Sendable func signInPage(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        try await web.loginPage(
            request,
            context: context,
            authorizePath: "/web/auth/siwa/authorize?returnUrl=%2Fweb%2Fauth%2Fsiwa%2Fsign-in"
        )
    }

    @Sendable func authorize(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let returnURL = request.uri.queryParameters["returnUrl"].map(String.init) ?? Self.signInPath
        return try await web.startFlow(request, returnURL: returnURL, redirectURI: callbackURL)
    }

    /// Apple's `form_post`; then the same account logic, session cookies and a 303 to the return URL.
    @Sendable func callback(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let servicesID = try web.servicesID()
        let bytes: [UInt8]
        do {
            bytes = try await CompatRequestBody.collect(request, limit: AuthorizationCallback.maximumBodySize)
        } catch let error as AuthServerError {
            return WebErrorPage(error).response
        }
        return await web.completeFlow(
            request,
            body: bytes,
            servicesID: servicesID,
            redirectURI: callbackURL,
            context: context
        )
    }

    @Sendable func signIn(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        await Self.answering {
            let body = try await request.decodeJSON(SignInBody.self, limit: configuration.maximumBodySize)
            guard !body.appleIdentityToken.isEmpty else {
                throw AuthServerError.badRequest(
                    AuthServerError.Code.missingField,
                    "field 'appleIdentityToken' is required"
                )
            }
            let signedIn = try await signIn.signIn(
                identityToken: body.appleIdentityToken,
                authorizationCode: body.authorizationCode,
                nonce: nil,
                givenName: body.firstName,
                familyName: body.lastName,
                flow: .compat,
                contract: .vaporTutorial,
                origin: SessionOrigin(request, context: context, configuration: configuration)
            )
            // The tutorial's bearer is the refresh token; no access token is signed for this answer.
            return CompatResponse.json(
                bytes: SignInAnswer(accessToken: signedIn.refreshToken, user: Self.user(signedIn.user)).json
            )
        }
    }

    @Sendable func me(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        await Self.answering {
            guard let token = request.bearerToken else {
                throw AuthServerError.unauthorized(
                    AuthServerError.Code.missingToken,
                    "send 'Authorization: Bearer <accessToken>'"
                )
            }
            let userID: UserID
            if token.split(separator: ".").count == 3 {
                userID = try context.requireSession().claims.userID
            } else {
                // The tutorial's long-lived opaque token: this contract's refresh token, never another's.
                userID = try await sessions.session(ofRefreshToken: token, contract: .vaporTutorial).userID
            }
            return CompatResponse.json(bytes: Self.user(try await sessions.account(userID)).json)
        }
    }

    static func user(_ user: UserRecord) -> UserBody {
        UserBody(id: user.id.description, email: user.email, firstName: user.givenName, lastName: user.familyName)
    }

    /// The tutorial's error envelope: `{"error": true, "reason", "code"}` (Vapor's `ErrorMiddleware` shape, plus
    /// siwa's code).
    /// Vapor's `ErrorMiddleware` body.
    struct ErrorEnvelope: Encodable {
        var error: Bool
        var reason: String
        var code: String
    }

    static func answering(_ body: () async throws -> Response) async -> Response {
        await CompatResponse.answering(
            envelope: { code, message in ErrorEnvelope(error: true, reason: message, code: code) },
            body
        )
    }
}
