import AccountStore
import AppleSignIn
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// `refresh_token` (RFC 6749 §6): rotating, bound to the client and the scope granted; a rotated token presented
/// again is reuse, and ends its session.
struct RefreshTokenGrant: OpenIDGrant {
    let type = "refresh_token"

    func answer(
        _ form: [String: String],
        client: OpenIDClient,
        request: Request,
        context: SiwaRequestContext,
        by controller: OpenIDController
    ) async throws -> Response {
        try await controller.refreshTokens(form, client: client, context: context)
    }
}

extension OpenIDController {
    func refreshTokens(
        _ form: [String: String],
        client: OpenIDClient,
        context: SiwaRequestContext
    ) async throws -> Response {
        guard let refreshToken = form["refresh_token"], !refreshToken.isEmpty else {
            throw OAuthError.invalidRequest("refresh_token is missing")
        }
        guard SessionContract.of(refreshToken) == .openID, let binding = SessionContract.binding(of: refreshToken),
            let bound = Self.unbind(binding)
        else {
            // Another contract's token, or a forged one: refused here, but a rotated token is reuse on every route.
            try await refuseIfReused(refreshToken)
            throw OAuthError.invalidGrant("the refresh token was not issued by this token endpoint")
        }
        guard bound.clientID == client.id else {
            try await refuseIfReused(refreshToken)
            throw OAuthError.invalidGrant("the refresh token was issued to another client")
        }
        if let asked = form["scope"], !Self.scopeSet(asked).isSubset(of: Self.scopeSet(bound.scope)) {
            throw OAuthError(
                status: .badRequest,
                error: "invalid_scope",
                errorDescription: "a refresh cannot widen the granted scope"
            )
        }
        // What the user granted, within what the client may still be granted: narrowing a client's scopes in the
        // configuration applies to the tokens it holds, and the narrower grant is kept in the next refresh token.
        let granted = Self.scopeSet(bound.scope).intersection(client.scopes)
        let scope = Self.scopeString(form["scope"].map { Self.scopeSet($0).intersection(granted) } ?? granted)
        let tokens: SessionService.Tokens
        do {
            tokens = try await sessions.rotate(
                refreshToken: refreshToken,
                contract: .openID,
                binding: Self.binding(client: client.id, scope: Self.scopeString(granted)),
                logger: context.logger
            )
        } catch let error as AuthServerError {
            if error.status == .serviceUnavailable { throw OAuthError.temporarilyUnavailable(error.message) }
            throw OAuthError.invalidGrant(error.message)
        }
        let access = try issuer.issue(
            userID: tokens.userID,
            sessionID: tokens.sessionID,
            openID: (client.id, scope)
        )
        return try Self.noStore(
            TokenAnswer(
                access_token: access.token,
                expires_in: access.expiresIn,
                refresh_token: tokens.refreshToken,
                scope: scope
            )
        )
    }
}
