import AccountStore
import AppleSignIn
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// RentManager's API contract: `POST /api/auth/apple` and `POST /api/auth/refresh`, with its `success` flag and
/// snake_case user fields. Its clients keep one refresh token, so refresh answers a new access token and does not
/// rotate.
struct RentManagerController: RouteProvider {
    let configuration: AuthServerConfiguration
    let signIn: SignInService
    let sessions: SessionService

    struct SignInBody: Decodable {
        struct User: Decodable {
            struct Name: Decodable {
                var firstName: String?
                var lastName: String?
            }
            var name: Name?
            var email: String?
        }
        var identityToken: String
        var authorizationCode: String?
        var nonce: String?
        var user: User?
    }

    struct RefreshBody: Decodable {
        var refreshToken: String
    }

    struct UserBody: Encodable {
        var id: String
        var email: String?
        var full_name: String?
        var role: String
        var access_level: String
    }

    struct SignInAnswer: Encodable {
        var success = true
        var token: String
        var refreshToken: String
        var isNewUser: Bool
        var user: UserBody
    }

    struct RefreshAnswer: Encodable {
        var success = true
        var token: String
    }

    func addRoutes(to routes: PolicedRoutes) {
        routes.post("/api/auth/apple", access: .open, use: signIn)
        routes.post("/api/auth/refresh", access: .checkedByHandler(.refreshToken), use: refresh)
    }

    @Sendable func signIn(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        await Self.answering {
            let body = try await request.decodeJSON(SignInBody.self, limit: configuration.maximumBodySize)
            guard !body.identityToken.isEmpty else {
                throw AuthServerError.badRequest(AuthServerError.Code.missingField, "field 'identityToken' is required")
            }
            let signedIn = try await signIn.signIn(
                identityToken: body.identityToken,
                authorizationCode: body.authorizationCode,
                nonce: body.nonce,
                givenName: body.user?.name?.firstName,
                familyName: body.user?.name?.lastName,
                flow: .compat,
                contract: .rentManager,
                origin: SessionOrigin(request, context: context, configuration: configuration)
            )
            return try CompatResponse.json(
                SignInAnswer(
                    token: try signIn.accessToken(for: signedIn).token,
                    refreshToken: signedIn.refreshToken,
                    isNewUser: signedIn.isNewUser,
                    user: user(signedIn.user)
                )
            )
        }
    }

    @Sendable func refresh(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        await Self.answering {
            let body = try await request.decodeJSON(RefreshBody.self, limit: configuration.maximumBodySize)
            let access = try await sessions.accessToken(forRefreshToken: body.refreshToken, contract: .rentManager)
            return try CompatResponse.json(RefreshAnswer(token: access.accessToken))
        }
    }

    private func user(_ user: UserRecord) -> UserBody {
        let admin = configuration.compatibility.isAdmin(user)
        return UserBody(
            id: user.id.description,
            email: user.email,
            full_name: user.fullName,
            role: admin ? "admin" : "user",
            access_level: admin ? "full" : "standard"
        )
    }

    /// Errors as RentManager writes them: `{"success": false, "error": code, "message": text}`.
    /// RentManager's error envelope: `{"success": false, "error", "message"}`.
    /// RentManager's error body.
    struct ErrorEnvelope: Encodable {
        var success: Bool
        var error: String
        var message: String
    }

    static func answering(_ body: () async throws -> Response) async -> Response {
        await CompatResponse.answering(
            envelope: { code, message in ErrorEnvelope(success: false, error: code, message: message) },
            body
        )
    }
}
