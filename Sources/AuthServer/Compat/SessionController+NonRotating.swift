import AccountStore
import AppleSignIn
import Hummingbird

extension SessionController {
    /// A new access token for a refresh token that is not rotated: the contracts whose clients keep one refresh token
    /// (ServiceStack's `GetAccessToken`, RentManager's `/api/auth/refresh`) and the Vapor tutorial's long-lived
    /// bearer. The token must be its session's current one; nothing is changed.
    func accessToken(
        forRefreshToken refreshToken: String
    ) async throws -> (accessToken: String, expiresIn: Int, userID: UserID, sessionID: SessionID) {
        let (sessionID, userID) = try await session(ofRefreshToken: refreshToken)
        let access = try issuer.issue(userID: userID, sessionID: sessionID)
        return (access.token, access.expiresIn, userID, sessionID)
    }

    /// The session of a current refresh token, or a 401 naming why not.
    func session(ofRefreshToken refreshToken: String) async throws -> (sessionID: SessionID, userID: UserID) {
        guard !refreshToken.isEmpty, refreshToken.utf8.count <= 512 else {
            throw AuthServerError.unauthorized("invalid_refresh_token", "the refresh token is not valid")
        }
        let check = try await store.checkRefreshToken(presentedHash: RefreshTokens.hash(refreshToken), now: clock.now)
        switch check {
        case .current(let sessionID, let userID):
            return (sessionID, userID)
        case .used:
            throw AuthServerError.unauthorized(
                "refresh_token_rotated",
                "this refresh token was replaced by a newer one; use the newest or sign in again"
            )
        case .revoked:
            throw AuthServerError.unauthorized("refresh_token_revoked", "the session has ended; sign in again")
        case .expired:
            throw AuthServerError.unauthorized("refresh_token_expired", "the refresh token has expired; sign in again")
        case .notFound:
            throw AuthServerError.unauthorized("invalid_refresh_token", "the refresh token is not valid")
        }
    }

    /// The account of an authenticated session, or 401 when it is gone.
    func account(_ userID: UserID) async throws -> UserRecord {
        guard let user = try await users.user(id: userID, store: store) else {
            throw AuthServerError.unauthorized("unknown_user", "the account no longer exists")
        }
        return user
    }
}
