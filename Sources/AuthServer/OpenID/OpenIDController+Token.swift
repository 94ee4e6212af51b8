import AccountStore
import AppleSignIn
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

extension OpenIDController {
    /// The answer of the token endpoint (RFC 6749 §5.1, OpenID Connect Core §3.1.3.3).
    struct TokenAnswer: Encodable {
        var access_token: String
        var token_type = "Bearer"
        var expires_in: Int
        var refresh_token: String?
        var id_token: String?
        var scope: String
    }

    // MARK: Token

    /// `POST /oauth/token`: `authorization_code` (client authenticated, code single use and unexpired, same
    /// `redirect_uri`, PKCE S256 verifier) and `refresh_token` (rotating, bound to the client). Errors in RFC 6749
    /// §5.2's shape.
    @Sendable func token(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let form = try await Self.form(request, limit: configuration.maximumBodySize)
        let client = try authenticateClient(request, form: form)
        switch form["grant_type"] {
        case "authorization_code":
            return try await redeem(form, client: client, request: request, context: context)
        case "refresh_token":
            return try await refresh(form, client: client, context: context)
        case nil:
            throw OAuthError.invalidRequest("grant_type is missing")
        default:
            throw OAuthError.unsupportedGrantType("grant_type must be authorization_code or refresh_token")
        }
    }

    private func redeem(
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

    private func refresh(
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

    /// A rotated refresh token presented at the token endpoint, whichever contract or client it belongs to, is reuse:
    /// its session ends and the reuse is audited, as on every other route; the answer is `invalid_grant`.
    private func refuseIfReused(_ refreshToken: String) async throws {
        do {
            try await sessions.refuseIfReused(refreshToken)
        } catch let error as AuthServerError {
            if error.status == .serviceUnavailable { throw OAuthError.temporarilyUnavailable(error.message) }
            throw OAuthError.invalidGrant(error.message)
        }
    }

    // MARK: Revocation

    /// `POST /oauth/revoke` (RFC 7009): the client authenticates; a refresh token or access token it was issued ends
    /// its session (the whole refresh family). Always 200 for a token that is unknown, malformed or another
    /// client's, so that the answer tells nothing about it.
    @Sendable func revoke(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let form = try await Self.form(request, limit: configuration.maximumBodySize)
        let client = try authenticateClient(request, form: form)
        guard let token = form["token"], !token.isEmpty else { throw OAuthError.invalidRequest("token is missing") }
        if let hint = form["token_type_hint"], hint != "refresh_token", hint != "access_token" {
            throw OAuthError(
                status: .badRequest,
                error: "unsupported_token_type",
                errorDescription: "token_type_hint must be refresh_token or access_token"
            )
        }
        if SessionContract.of(token) == .openID {
            if let binding = SessionContract.binding(of: token), Self.unbind(binding)?.clientID == client.id {
                // A rotated token is reuse, which ends its session too; RFC 7009's answer is 200 either way.
                let reused = try await sessions.revoke(refreshToken: token)
                context.logger.info(
                    reused ? "OpenID rotated refresh token revoked: its session ended" : "OpenID refresh token revoked",
                    metadata: ["client": "\(client.id)"]
                )
            }
        } else if let claims = issuer.signedClaims(token), claims["client_id"]?.stringValue == client.id,
            let userID = claims["sub"]?.stringValue.flatMap(UserID.init),
            let sessionID = claims["sid"]?.stringValue.flatMap(SessionID.init)
        {
            try await sessions.endSession(sessionID, userID: userID)
            context.logger.info("OpenID access token's session revoked", metadata: ["client": "\(client.id)"])
        }
        return Response(status: .ok, headers: [.cacheControl: "no-store", .contentLength: "0"])
    }

    // MARK: Client authentication

    /// The client of a token or revocation request (RFC 6749 §2.3.1): HTTP Basic (`client_secret_basic`), or
    /// `client_id` and `client_secret` in the form (`client_secret_post`), or `client_id` alone for a public client
    /// (`none`). One method per request.
    /// - Throws: 401 `invalid_client` for an unknown client, a wrong or missing secret, or a secret sent by a public
    ///   client; 400 `invalid_request` for two methods at once or a malformed header.
    func authenticateClient(_ request: Request, form: [String: String]) throws(OAuthError) -> OpenIDClient {
        let basic = try Self.basicCredentials(request)
        let usedBasic = basic != nil
        if basic != nil, form["client_secret"] != nil {
            throw OAuthError.invalidRequest("use one client authentication method: HTTP Basic or client_secret")
        }
        let id = basic?.id ?? form["client_id"]
        let secret = basic?.secret ?? form["client_secret"]
        guard let id else { throw OAuthError.invalidClient("client authentication is missing", usedBasic: false) }
        if let formID = form["client_id"], formID != id {
            throw OAuthError.invalidRequest("client_id differs from the authenticated client")
        }
        guard let client = openID.client(id) else {
            throw OAuthError.invalidClient("unknown client", usedBasic: usedBasic)
        }
        if client.isPublic {
            guard secret == nil || secret == "" else {
                throw OAuthError.invalidClient("a public client has no secret", usedBasic: usedBasic)
            }
            return client
        }
        guard let secret, client.acceptsSecret(secret) else {
            throw OAuthError.invalidClient("client authentication failed", usedBasic: usedBasic)
        }
        return client
    }

    /// `Authorization: Basic base64(urlencode(id):urlencode(secret))`, or `nil` when the request has no Basic header.
    static func basicCredentials(_ request: Request) throws(OAuthError) -> (id: String, secret: String)? {
        guard let header = request.headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic" else { return nil }
        guard let data = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
            let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":"),
            let id = formDecode(text[..<colon]), let secret = formDecode(text[text.index(after: colon)...])
        else { throw OAuthError.invalidClient("the Basic authorization header is malformed", usedBasic: true) }
        return (id, secret)
    }

    private static func formDecode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    // MARK: Helpers

    /// A form body (`application/x-www-form-urlencoded`), each parameter at most once (RFC 6749 §3.2).
    static func form(_ request: Request, limit: Int) async throws -> [String: String] {
        let type = request.headers[.contentType]?.split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased()
        guard type == "application/x-www-form-urlencoded" else {
            throw OAuthError.invalidRequest("send the parameters as application/x-www-form-urlencoded")
        }
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: limit)
        } catch {
            throw OAuthError(
                status: .contentTooLarge,
                error: "invalid_request",
                errorDescription: "the request body is larger than \(limit) bytes"
            )
        }
        guard let form = FormURLEncoding.decode(body.readableBytesView) else {
            throw OAuthError.invalidRequest("a parameter is given twice or wrongly encoded")
        }
        return form
    }

    /// What a relying party's refresh tokens are bound to: the client and the granted scope.
    static func binding(client: String, scope: String) -> String {
        client + " " + scope
    }

    /// The client and scope of a binding.
    static func unbind(_ binding: String) -> (clientID: String, scope: String)? {
        guard let space = binding.firstIndex(of: " ") else { return nil }
        return (String(binding[..<space]), String(binding[binding.index(after: space)...]))
    }

    /// Records a refused OpenID sign-in in the audit log.
    func refused(_ userID: UserID, client: OpenIDClient, reason: String) async {
        await audit.append(
            .signInRefused,
            userID: userID,
            actor: .system,
            channel: Self.channel(client.id),
            reason: reason
        )
    }
}
