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

    /// `POST /oauth/token`: the client authenticates, then the grant its `grant_type` names answers (``grants``: one
    /// file each in `Grants/`). Errors in RFC 6749 §5.2's shape.
    @Sendable func token(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let form = try await Self.form(request, limit: configuration.maximumBodySize)
        let client = try authenticateClient(request, form: form)
        guard let type = form["grant_type"] else { throw OAuthError.invalidRequest("grant_type is missing") }
        guard let grant = Self.grants.first(where: { $0.type == type }) else {
            throw OAuthError.unsupportedGrantType("grant_type must be \(Self.grantTypesInWords)")
        }
        return try await grant.answer(form, client: client, request: request, context: context, by: self)
    }

    /// A rotated refresh token presented at the token endpoint, whichever contract or client it belongs to, is reuse:
    /// its session ends and the reuse is audited, as on every other route; the answer is `invalid_grant`.
    func refuseIfReused(_ refreshToken: String) async throws {
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
            let id = FormURLEncoding.decodeComponent(text[..<colon]),
            let secret = FormURLEncoding.decodeComponent(text[text.index(after: colon)...])
        else { throw OAuthError.invalidClient("the Basic authorization header is malformed", usedBasic: true) }
        return (id, secret)
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
