import AccountStore
import AppleSignIn
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// `authorization_code` (RFC 6749 §4.1.3, OpenID Connect Core §3.1.3): the code single use and unexpired, issued to
/// this client for the same `redirect_uri`, with its PKCE S256 verifier; a replay ends the session its first
/// redemption started.
struct AuthorizationCodeGrant: OpenIDGrant {
    let type = "authorization_code"

    func answer(
        _ form: [String: String],
        client: OpenIDClient,
        request: Request,
        context: SiwaRequestContext,
        by controller: OpenIDController
    ) async throws -> Response {
        try await controller.redeemAuthorizationCode(form, client: client, request: request, context: context)
    }
}

extension OpenIDController {
    func redeemAuthorizationCode(
        _ form: [String: String],
        client: OpenIDClient,
        request: Request,
        context: SiwaRequestContext
    ) async throws -> Response {
        guard let code = form["code"], !code.isEmpty, code.utf8.count <= 512 else {
            throw OAuthError.invalidRequest("code is missing")
        }
        guard let redirectURI = form["redirect_uri"] else { throw OAuthError.invalidRequest("redirect_uri is missing") }
        let codeHash = Self.hash(code)
        guard let stored = try await store.authorizationCode(codeHash: codeHash) else {
            throw OAuthError.invalidGrant("the authorization code is unknown")
        }
        guard stored.clientID == client.id else {
            await refused(stored.userID, client: client, reason: "code_of_another_client")
            throw OAuthError.invalidGrant("the authorization code was issued to another client")
        }
        guard stored.redirectURI == redirectURI else {
            throw OAuthError.invalidGrant("redirect_uri differs from the authorization request's")
        }
        try Self.checkVerifier(form["code_verifier"], challenge: stored.codeChallenge)
        guard let user = try await store.user(id: stored.userID), user.status == .active else {
            throw OAuthError.invalidGrant("the account is disabled or no longer exists")
        }
        guard sessions.isActive(stored.browserSessionID, userID: user.id) else {
            throw OAuthError.invalidGrant("the browser session that authorized the code has ended")
        }
        let scope = Self.scopeSet(stored.scope)
        let origin = SessionOrigin(request, context: context, configuration: configuration)
        let prepared = sessions.prepareSession(
            contract: .openID,
            binding: Self.binding(client: client.id, scope: stored.scope),
            metadata: SessionMetadata(
                channel: Self.channel(client.id),
                userAgent: origin.userAgent,
                clientAddress: origin.clientAddress
            )
        )
        switch try await store.redeemAuthorizationCode(
            codeHash: codeHash,
            startingSession: prepared.record,
            now: clock.now
        ) {
        case .redeemed(let redeemed):
            let sessionID = prepared.record.sessionID
            let access = try issuer.issue(
                userID: user.id,
                sessionID: sessionID,
                openID: (client.id, stored.scope)
            )
            let idToken = try idToken(
                user: user,
                clientID: client.id,
                scope: scope,
                nonce: redeemed.nonce,
                authTime: redeemed.authTime,
                sessionID: sessionID,
                accessToken: access.token
            )
            await audit.append(
                .signIn,
                userID: user.id,
                actor: .user,
                channel: Self.channel(client.id),
                sessionID: sessionID,
                details: ["account": "returning", "via": "openid"]
            )
            context.requestLog?.identify(user: user.id, session: sessionID)
            context.logger.info("OpenID sign-in", metadata: ["client": "\(client.id)", "user": "\(user.id)"])
            return try Self.noStore(
                TokenAnswer(
                    access_token: access.token,
                    expires_in: access.expiresIn,
                    refresh_token: prepared.refreshToken,
                    id_token: idToken,
                    scope: stored.scope
                )
            )
        case .replayed(let replayed, let endedSession):
            // RFC 6749 §4.1.2: a code used twice; what its first use issued is revoked.
            let ended = endedSession.map { [$0] } ?? []
            await sessions.noteEnded(ended, userID: replayed.userID, by: .system, reason: "code_replayed")
            await refused(replayed.userID, client: client, reason: "code_replayed")
            context.logger.warning(
                "OpenID authorization code replayed: its session revoked",
                metadata: ["client": "\(client.id)", "user": "\(replayed.userID)"]
            )
            throw OAuthError.invalidGrant(
                "the authorization code was already used; the tokens it issued have been revoked"
            )
        case .expired:
            throw OAuthError.invalidGrant("the authorization code has expired")
        case .notFound:
            throw OAuthError.invalidGrant("the authorization code is unknown")
        }
    }

    /// RFC 7636 §4.6: `BASE64URL(SHA256(code_verifier)) == code_challenge`. A code without a challenge takes no
    /// verifier (a verifier then means the request was not the one that got the code).
    static func checkVerifier(_ verifier: String?, challenge: String?) throws(OAuthError) {
        guard let challenge else {
            if verifier != nil {
                throw OAuthError.invalidGrant("code_verifier given for a code that was requested without PKCE")
            }
            return
        }
        guard let verifier else { throw OAuthError.invalidGrant("code_verifier is missing") }
        let unreserved = verifier.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: "~")
        }
        guard (43...128).contains(verifier.utf8.count), unreserved else {
            throw OAuthError.invalidRequest("code_verifier must be 43 to 128 unreserved characters")
        }
        let computed = Base64URL.encode(Array(SHA256.hash(data: Array(verifier.utf8))))
        guard constantTimeEquals(computed, challenge) else {
            throw OAuthError.invalidGrant("code_verifier does not match the code_challenge")
        }
    }
}
