import AccountStore
import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import JWTKit
import NIOCore
import SiwaTesting
import Testing

/// siwa as an OpenID provider over real HTTP with the emulator as Apple: discovery and keys (checked with jwt-kit),
/// the authorization-code flow with PKCE, the token endpoint's grants and refusals, userinfo, logout, revocation,
/// and Apple's account lifecycle reaching a relying party's session.
@Suite("OpenID provider")
struct OpenIDProviderTests {
    private func run(
        configuration: AuthServerConfiguration = RelyingParty.configuration(),
        _ body: @escaping @Sendable (ServerHarness) async throws -> Void
    ) async throws {
        try await ServerHarness.run(configuration: configuration, web: true, body)
    }

    /// The claims jwt-kit checks on siwa's access tokens.
    struct AccessTokenPayload: JWTPayload {
        var iss: IssuerClaim
        var aud: AudienceClaim
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var sid: String
        var client_id: String?

        func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
        }
    }

    /// The claims jwt-kit checks on an ID token.
    struct IDTokenPayload: JWTPayload {
        var iss: IssuerClaim
        var aud: AudienceClaim
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var nonce: String?

        func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
        }
    }

    /// jwt-kit's keys, found from the issuer URL alone: discovery, then its `jwks_uri`.
    private func keysThroughDiscovery(_ harness: ServerHarness) async throws -> (JWTKeyCollection, [String: Any]) {
        let discovery = try await harness.call(.get, "/.well-known/openid-configuration")
        #expect(discovery.status == .ok)
        let jwksURI = try #require(discovery.json["jwks_uri"] as? String)
        #expect(jwksURI == harness.serverURL + "/.well-known/jwks.json")
        let jwks = try await harness.browser(.get, String(jwksURI.dropFirst(harness.serverURL.count)))
        let keys = try await JWTKeyCollection().add(jwksJSON: jwks.body)
        return (keys, discovery.json)
    }

    // MARK: Discovery

    @Test func discoveryDescribesTheProviderAndItsKeysVerifyAccessTokens() async throws {
        try await run { harness in
            let (keys, discovery) = try await keysThroughDiscovery(harness)
            let base = harness.serverURL
            #expect(discovery["issuer"] as? String == base)
            #expect(discovery["authorization_endpoint"] as? String == base + "/oauth/authorize")
            #expect(discovery["token_endpoint"] as? String == base + "/oauth/token")
            #expect(discovery["userinfo_endpoint"] as? String == base + "/oauth/userinfo")
            #expect(discovery["end_session_endpoint"] as? String == base + "/oauth/logout")
            #expect(discovery["revocation_endpoint"] as? String == base + "/oauth/revoke")
            #expect(discovery["response_types_supported"] as? [String] == ["code"])
            #expect(discovery["grant_types_supported"] as? [String] == ["authorization_code", "refresh_token"])
            #expect(discovery["code_challenge_methods_supported"] as? [String] == ["S256"])
            #expect(discovery["id_token_signing_alg_values_supported"] as? [String] == ["RS256", "ES256"])
            #expect(discovery["subject_types_supported"] as? [String] == ["public"])
            #expect(discovery["scopes_supported"] as? [String] == ["openid", "email", "profile"])
            #expect(
                discovery["token_endpoint_auth_methods_supported"] as? [String]
                    == ["client_secret_basic", "client_secret_post", "none"]
            )
            #expect((discovery["claims_supported"] as? [String])?.contains("is_private_email") == true)

            // siwa's own access token (a native sign-in) verifies with the keys discovery names.
            let signIn = try await harness.signIn("discovery@example.com")
            let token = try #require(signIn.json["accessToken"] as? String)
            let payload = try await keys.verify(token, as: AccessTokenPayload.self)
            #expect(payload.iss.value == base)
            #expect(payload.aud.value == ["siwa"])
            #expect(payload.client_id == nil)
        }
    }

    // MARK: The flow

    @Test func authorizationCodeFlowGivesVerifiableTokensUserInfoAndRotatingRefresh() async throws {
        try await run { harness in
            let pkce = PKCE()
            let path = ServerHarness.authorizePath(.a, pkce: pkce)
            let (query, location, browser) = try await harness.openIDSignIn(path, email: "flow@example.com")
            #expect(location.hasPrefix(RelyingParty.a.redirectURI + "?"))
            #expect(query["state"] == "state-123")
            #expect(query["iss"] == harness.serverURL)
            let code = try #require(query["code"])

            let answer = try await harness.redeem(code, .a, verifier: pkce.verifier)
            try #require(answer.status == .ok, "token: \(answer.json)")
            #expect(answer.headers[.cacheControl] == "no-store")
            #expect(answer.json["token_type"] as? String == "Bearer")
            #expect(answer.json["expires_in"] as? Int == 900)
            #expect(answer.json["scope"] as? String == "openid email profile")
            let access = try #require(answer.json["access_token"] as? String)
            let refresh = try #require(answer.json["refresh_token"] as? String)
            let idToken = try #require(answer.json["id_token"] as? String)

            // Both tokens verify with the keys found through discovery.
            let (keys, _) = try await keysThroughDiscovery(harness)
            let accessPayload = try await keys.verify(access, as: AccessTokenPayload.self)
            #expect(accessPayload.client_id == RelyingParty.a.id)
            let idPayload = try await keys.verify(idToken, as: IDTokenPayload.self)
            #expect(idPayload.aud.value == [RelyingParty.a.id])
            // RS256 by default (OpenID Connect's required algorithm), by the current key's RSA companion; the access
            // token stays ES256.
            let idHeader = try Self.header(of: idToken)
            #expect(idHeader["alg"] as? String == "RS256")
            #expect((idHeader["kid"] as? String)?.hasSuffix(".rs") == true)
            #expect(try Self.header(of: access)["alg"] as? String == "ES256")
            #expect(idPayload.iss.value == harness.serverURL)
            #expect(idPayload.nonce == "nonce-456")
            let claims = try ServerHarness.claims(of: idToken)
            let userID = try #require(claims["sub"] as? String)
            #expect(claims["email"] as? String == "flow@example.com")
            #expect(claims["email_verified"] as? Bool == true)
            #expect(claims["is_private_email"] as? Bool == false)
            #expect(claims["name"] as? String == "Jane Appleseed")
            #expect(claims["amr"] as? [String] == ["apple"])
            #expect(claims["auth_time"] is Int)
            #expect(claims["at_hash"] is String)
            #expect(accessPayload.sub.value == userID)

            // userinfo, by GET and POST.
            for method in [HTTPRequest.Method.get, .post] {
                let info = try await harness.call(method, "/oauth/userinfo", bearer: access)
                #expect(info.status == .ok)
                #expect(info.json["sub"] as? String == userID)
                #expect(info.json["email"] as? String == "flow@example.com")
                #expect(info.json["name"] as? String == "Jane Appleseed")
            }
            let noToken = try await harness.call(.get, "/oauth/userinfo")
            #expect(noToken.status == .unauthorized)

            // The session is a normal siwa session on the relying party's channel, and the sign-in is audited.
            let user = try #require(UserID(userID))
            let sessions = try await harness.store.sessions(userID: user, now: harness.clock.now, limit: 10)
            #expect(sessions.contains { $0.metadata.channel?.rawValue == "oidc:rp-a" })
            let events = try await harness.store.auditEvents(AuditEventFilter(userID: user), limit: 20, after: nil)
            #expect(events.items.contains { $0.type == .signIn && $0.channel?.rawValue == "oidc:rp-a" })

            // Refresh rotates; the old refresh token presented again is reuse and ends the family.
            let rotated = try await harness.refresh(refresh, .a)
            try #require(rotated.status == .ok, "refresh: \(rotated.json)")
            let newRefresh = try #require(rotated.json["refresh_token"] as? String)
            #expect(newRefresh != refresh)
            let newAccess = try #require(rotated.json["access_token"] as? String)
            #expect(try await harness.call(.get, "/oauth/userinfo", bearer: newAccess).status == .ok)
            harness.clock.advance(by: 10)  // past the reuse grace
            let reused = try await harness.refresh(refresh, .a)
            #expect(reused.status == .badRequest)
            #expect(reused.json["error"] as? String == "invalid_grant")
            let afterReuse = try await harness.refresh(newRefresh, .a)
            #expect(afterReuse.json["error"] as? String == "invalid_grant", "reuse ended the whole family")
            #expect(try await harness.call(.get, "/oauth/userinfo", bearer: newAccess).status == .unauthorized)

            // The browser still has its siwa session: the next authorization is a code at once, no Apple.
            let again = try await harness.authorize(ServerHarness.authorizePath(.b), browser: browser)
            #expect(again["code"] != nil)
        }
    }

    /// userinfo answers what the token's scope grants: `openid` alone gives the subject, no email or name (the
    /// scope travels in the verified access token's claims).
    @Test func userInfoAnswersOnlyWhatTheScopeGrants() async throws {
        try await run { harness in
            let pkce = PKCE()
            let path = ServerHarness.authorizePath(.a, scope: "openid", pkce: pkce)
            let (query, _, _) = try await harness.openIDSignIn(path, email: "narrow@example.com")
            let answer = try await harness.redeem(try #require(query["code"]), .a, verifier: pkce.verifier)
            let access = try #require(answer.json["access_token"] as? String)
            for _ in 0..<2 {  // the second answer comes from the verified-token cache
                let info = try await harness.call(.get, "/oauth/userinfo", bearer: access)
                #expect(info.status == .ok)
                #expect(info.json["sub"] is String)
                #expect(info.json["email"] == nil && info.json["name"] == nil, "\(info.json)")
            }
        }
    }

    @Test func anExpiredBrowserSessionIsRenewedAndPromptLoginSignsInAgain() async throws {
        try await run { harness in
            let (_, _, browser) = try await harness.openIDSignIn(ServerHarness.authorizePath(.a))
            harness.clock.advance(by: 901)  // the session cookie's access token has expired; the refresh cookie lives
            let renewed = try await harness.browser(.get, ServerHarness.authorizePath(.a), cookies: browser.cookies)
            #expect(renewed.status == .found, "\(renewed.body)")
            #expect(ServerHarness.query(of: try #require(renewed.location))["code"] != nil)
            #expect(renewed.cookie("siwa_session") != nil && renewed.cookie("siwa_refresh") != nil)

            let login = try await harness.browser(
                .get,
                ServerHarness.authorizePath(.a, extra: [("prompt", "login")]),
                cookies: ["siwa_session": try #require(renewed.cookie("siwa_session"))]
            )
            #expect(login.status == .seeOther)
            let signIn = try #require(login.location)
            #expect(signIn.hasPrefix("/auth/apple/authorize?returnUrl="))
            #expect(!signIn.removingPercentEncoding!.contains("prompt=login"), "the sign-in satisfies prompt=login")
        }
    }

    @Test func aPublicClientMustUsePKCEAndAuthenticatesWithItsIDAlone() async throws {
        try await run { harness in
            let pkce = PKCE()
            let (query, _, browser) = try await harness.openIDSignIn(
                ServerHarness.authorizePath(.publicApp, pkce: pkce)
            )
            let answer = try await harness.redeem(try #require(query["code"]), .publicApp, verifier: pkce.verifier)
            #expect(answer.status == .ok, "\(answer.json)")
            #expect(answer.json["refresh_token"] is String)

            let withoutPKCE = try await harness.authorize(ServerHarness.authorizePath(.publicApp), browser: browser)
            #expect(withoutPKCE["error"] == "invalid_request")
            #expect(withoutPKCE["code"] == nil)
        }
    }

    // MARK: Refusals at authorize

    @Test func anUnregisteredRedirectURIOrUnknownClientIsAPageNeverARedirect() async throws {
        try await run { harness in
            let wrongURI = try await harness.browser(
                .get,
                ServerHarness.authorizePath(.a, redirectURI: "https://attacker.example.com/callback")
            )
            #expect(wrongURI.status == .badRequest)
            #expect(wrongURI.location == nil)
            #expect(wrongURI.headers[.contentType]?.hasPrefix("text/html") == true)
            #expect(wrongURI.body.contains("invalid_redirect_uri"))

            let otherClientsURI = try await harness.browser(
                .get,
                ServerHarness.authorizePath(.a, redirectURI: RelyingParty.b.redirectURI)
            )
            #expect(otherClientsURI.status == .badRequest && otherClientsURI.location == nil)

            var unknown = RelyingParty.a
            unknown.id = "nobody"
            let unknownClient = try await harness.browser(.get, ServerHarness.authorizePath(unknown))
            #expect(unknownClient.status == .badRequest && unknownClient.location == nil)
            #expect(unknownClient.body.contains("invalid_client"))
        }
    }

    @Test func otherAuthorizeErrorsGoBackToTheRegisteredURIWithState() async throws {
        try await run { harness in
            func refusal(_ path: String) async throws -> [String: String] {
                let answer = try await harness.browser(.get, path)
                try #require(answer.status == .found, "\(answer.status) \(answer.body)")
                let location = try #require(answer.location)
                #expect(location.hasPrefix(RelyingParty.a.redirectURI + "?"))
                return ServerHarness.query(of: location)
            }
            let noOpenID = try await refusal(ServerHarness.authorizePath(.a, scope: "email"))
            #expect(noOpenID["error"] == "invalid_scope" && noOpenID["state"] == "state-123")
            #expect(noOpenID["error_description"] != nil)
            let token = try await refusal(ServerHarness.authorizePath(.a, extra: [("response_type", "token")]))
            #expect(token["error"] == "invalid_request", "response_type given twice")
            let plain = try await refusal(
                ServerHarness.authorizePath(.a, extra: [("code_challenge", PKCE().challenge)])
            )
            #expect(plain["error"] == "invalid_request", "the plain PKCE method is refused")
            let none = try await refusal(ServerHarness.authorizePath(.a, extra: [("prompt", "none")]))
            #expect(none["error"] == "login_required" && none["state"] == "state-123")
        }
    }

    // MARK: Refusals at the token endpoint

    @Test func aWrongPKCEVerifierIsRefusedAndTheCodeStaysForTheRightOne() async throws {
        try await run { harness in
            let pkce = PKCE()
            let (query, _, _) = try await harness.openIDSignIn(ServerHarness.authorizePath(.a, pkce: pkce))
            let code = try #require(query["code"])
            let wrong = try await harness.redeem(code, .a, verifier: PKCE().verifier)
            #expect(wrong.status == .badRequest)
            #expect(wrong.json["error"] as? String == "invalid_grant")
            #expect((wrong.json["error_description"] as? String)?.contains("code_verifier") == true)
            let missing = try await harness.redeem(code, .a)
            #expect(missing.json["error"] as? String == "invalid_grant")
            let wrongURI = try await harness.redeem(
                code,
                .a,
                verifier: pkce.verifier,
                redirectURI: "https://rp-a.example.com/other"
            )
            #expect(wrongURI.json["error"] as? String == "invalid_grant")
            #expect(try await harness.redeem(code, .a, verifier: pkce.verifier).status == .ok)
        }
    }

    @Test func aReplayedCodeIsRefusedAndRevokesWhatItIssued() async throws {
        try await run { harness in
            let (query, _, _) = try await harness.openIDSignIn(ServerHarness.authorizePath(.a))
            let code = try #require(query["code"])
            let first = try await harness.redeem(code, .a)
            try #require(first.status == .ok)
            let access = try #require(first.json["access_token"] as? String)
            let refresh = try #require(first.json["refresh_token"] as? String)

            let replay = try await harness.redeem(code, .a)
            #expect(replay.status == .badRequest)
            #expect(replay.json["error"] as? String == "invalid_grant")
            #expect(try await harness.call(.get, "/oauth/userinfo", bearer: access).status == .unauthorized)
            #expect(try await harness.refresh(refresh, .a).json["error"] as? String == "invalid_grant")
        }
    }

    @Test func aWrongClientSecretIsInvalidClient() async throws {
        try await run { harness in
            let (query, _, _) = try await harness.openIDSignIn(ServerHarness.authorizePath(.a))
            let code = try #require(query["code"])
            let fields = [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", RelyingParty.a.redirectURI),
            ]
            let basic = try await harness.tokenRequest(fields, basic: (RelyingParty.a.id, "wrong"))
            #expect(basic.status == .unauthorized)
            #expect(basic.json["error"] as? String == "invalid_client")
            #expect(basic.headers[.wwwAuthenticate]?.hasPrefix("Basic") == true)
            let post = try await harness.tokenRequest(
                fields + [("client_id", RelyingParty.a.id), ("client_secret", "wrong")]
            )
            #expect(post.status == .unauthorized)
            #expect(post.json["error"] as? String == "invalid_client")
            let none = try await harness.tokenRequest(fields + [("client_id", RelyingParty.a.id)])
            #expect(none.json["error"] as? String == "invalid_client", "a confidential client needs its secret")
            let asB = try await harness.tokenRequest(
                fields,
                basic: (RelyingParty.b.id, try #require(RelyingParty.b.secret))
            )
            #expect(asB.json["error"] as? String == "invalid_grant", "the code belongs to client A")

            // client_secret_post with the right secret works, and the code was not used up by the refusals.
            let right = try await harness.tokenRequest(
                fields + [("client_id", RelyingParty.a.id), ("client_secret", try #require(RelyingParty.a.secret))]
            )
            #expect(right.status == .ok, "\(right.json)")
        }
    }

    @Test func anExpiredCodeIsRefused() async throws {
        try await run { harness in
            let (query, _, _) = try await harness.openIDSignIn(ServerHarness.authorizePath(.a))
            harness.clock.advance(by: 61)
            let expired = try await harness.redeem(try #require(query["code"]), .a)
            #expect(expired.status == .badRequest)
            #expect(expired.json["error"] as? String == "invalid_grant")
            #expect((expired.json["error_description"] as? String)?.contains("expired") == true)
        }
    }

    @Test func clientBCannotUseClientAsRefreshToken() async throws {
        try await run { harness in
            let (query, _, _) = try await harness.openIDSignIn(ServerHarness.authorizePath(.a))
            let tokens = try await harness.redeem(try #require(query["code"]), .a)
            let refresh = try #require(tokens.json["refresh_token"] as? String)
            let asB = try await harness.refresh(refresh, .b)
            #expect(asB.status == .badRequest)
            #expect(asB.json["error"] as? String == "invalid_grant")
            #expect(try await harness.refresh(refresh, .a).status == .ok, "B's attempt did not spend A's token")
            let onSiwasRoute = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": refresh])
            #expect(onSiwasRoute.status == .unauthorized, "nor does siwa's own refresh route take it")
        }
    }

    @Test func unsupportedGrantsAndBadBodiesAreRefusedInTheSpecsShape() async throws {
        try await run { harness in
            let secret = try #require(RelyingParty.a.secret)
            let grant = try await harness.tokenRequest([("grant_type", "password")], basic: (RelyingParty.a.id, secret))
            #expect(grant.status == .badRequest && grant.json["error"] as? String == "unsupported_grant_type")
            // The grants the token endpoint answers are the ones it names, here and in discovery.
            #expect(
                grant.json["error_description"] as? String == "grant_type must be authorization_code or refresh_token",
                "\(grant.json)"
            )
            let missing = try await harness.tokenRequest([], basic: (RelyingParty.a.id, secret))
            #expect(missing.json["error"] as? String == "invalid_request")
            let json = try await harness.call(.post, "/oauth/token", json: ["grant_type": "authorization_code"])
            #expect(json.status == .badRequest && json.json["error"] as? String == "invalid_request")
        }
    }

    @Test func theOpenIDRoutesSpendFromTheClientsRateLimitBudget() async throws {
        var configuration = RelyingParty.configuration()
        configuration.authRateLimit = .init(requestsPerSecond: 0.001, burst: 3)
        try await run(configuration: configuration) { harness in
            for _ in 0..<3 {
                let authorize = try await harness.browser(.get, ServerHarness.authorizePath(.a))
                #expect(authorize.status == .seeOther)
            }
            let token = try await harness.tokenRequest([("grant_type", "refresh_token"), ("refresh_token", "x")])
            #expect(token.status == .tooManyRequests)
            #expect(try await harness.browser(.get, "/oauth/authorize").status == .tooManyRequests)
            #expect(try await harness.browser(.get, "/oauth/logout").status == .tooManyRequests)
            let discovery = try await harness.browser(.get, "/.well-known/openid-configuration")
            #expect(discovery.status == .ok, "reads are not limited")
        }
    }

    // MARK: Lifecycle, logout, revocation

    @Test func accountDeletionEndsTheRelyingPartysSession() async throws {
        try await run { harness in
            let (query, _, _) = try await harness.openIDSignIn(ServerHarness.authorizePath(.a))
            let tokens = try await harness.redeem(try #require(query["code"]), .a)
            let access = try #require(tokens.json["access_token"] as? String)
            let refresh = try #require(tokens.json["refresh_token"] as? String)
            // The relying party's token is no siwa session: it cannot delete the account (nor reach /api/me or the
            // admin API); the user's own siwa session can.
            let refused = try await harness.call(.delete, "/api/me", bearer: access)
            #expect(refused.status == .unauthorized)
            #expect(refused.json["error"] as? String == "relying_party_token")
            #expect(try await harness.call(.get, "/api/me", bearer: access).status == .unauthorized)
            #expect(try await harness.call(.get, "/admin/api/users", bearer: access).status == .unauthorized)
            let own = try await harness.signIn("rp-user@example.com")
            let ownToken = try #require(own.json["accessToken"] as? String)
            #expect(own.json.user["id"] as? String == (try ServerHarness.claims(of: access)["sub"] as? String))
            #expect(try await harness.call(.delete, "/api/me", bearer: ownToken).status == .noContent)
            #expect(try await harness.refresh(refresh, .a).json["error"] as? String == "invalid_grant")
            #expect(try await harness.call(.get, "/oauth/userinfo", bearer: access).status == .unauthorized)
        }
    }

    @Test func disablingOrEndingConsentEndsTheRelyingPartysSession() async throws {
        try await run { harness in
            for ending in ["disable", "consent"] {
                let (query, _, _) = try await harness.openIDSignIn(
                    ServerHarness.authorizePath(.a),
                    email: "\(ending)@example.com"
                )
                let tokens = try await harness.redeem(try #require(query["code"]), .a)
                let refresh = try #require(tokens.json["refresh_token"] as? String)
                let access = try #require(tokens.json["access_token"] as? String)
                let sub = try #require(try ServerHarness.claims(of: access)["sub"] as? String)
                let user = try #require(UserID(sub))
                // What `siwa users disable` and Apple's consent-revoked notification do in the store.
                if ending == "disable" {
                    _ = try await harness.store.disableUser(id: user, now: harness.clock.now)
                } else {
                    try await harness.store.endAppleConsent(userID: user, now: harness.clock.now)
                }
                #expect(try await harness.refresh(refresh, .a).json["error"] as? String == "invalid_grant", "\(ending)")
                harness.browserCookies.clear()
            }
        }
    }

    @Test func rpInitiatedLogoutEndsBothSessionsAndReturnsOnlyToAnAllowedURI() async throws {
        try await run { harness in
            let (query, _, browser) = try await harness.openIDSignIn(ServerHarness.authorizePath(.a))
            let tokens = try await harness.redeem(try #require(query["code"]), .a)
            let idToken = try #require(tokens.json["id_token"] as? String)
            let refresh = try #require(tokens.json["refresh_token"] as? String)

            let offList = try await harness.browser(
                .get,
                "/oauth/logout?"
                    + ServerHarness.formEncode([
                        ("id_token_hint", idToken), ("post_logout_redirect_uri", "https://attacker.example.com/"),
                    ]),
                cookies: browser.cookies
            )
            #expect(offList.status == .badRequest && offList.location == nil)
            #expect(try await harness.refresh(refresh, .a).status == .ok, "a refused logout ends nothing")

            let forged = try await harness.browser(.get, "/oauth/logout?id_token_hint=eyJhbGciOiJub25lIn0.e30.")
            #expect(forged.status == .badRequest && forged.location == nil)

            let logout = try await harness.browser(
                .get,
                "/oauth/logout?"
                    + ServerHarness.formEncode([
                        ("id_token_hint", idToken), ("post_logout_redirect_uri", RelyingParty.a.logoutURI),
                        ("state", "bye-1"),
                    ]),
                cookies: browser.cookies
            )
            #expect(logout.status == .seeOther)
            #expect(logout.location == RelyingParty.a.logoutURI + "?state=bye-1")
            #expect(logout.setCookies["siwa_session"]?.contains("Max-Age=0") == true)
            // The browser's siwa session ended: authorize asks for a sign-in again.
            let afterwards = try await harness.browser(.get, ServerHarness.authorizePath(.a), cookies: browser.cookies)
            #expect(afterwards.location?.hasPrefix("/auth/apple/authorize") == true)
        }
    }

    @Test func logoutWithoutAHintAsksTheUserFirst() async throws {
        try await run { harness in
            let (_, _, browser) = try await harness.openIDSignIn(ServerHarness.authorizePath(.a))
            let asked = try await harness.browser(.get, "/oauth/logout", cookies: browser.cookies)
            #expect(asked.status == .ok)
            #expect(asked.body.contains(#"<form method="post" action="/oauth/logout">"#))
            #expect(try await harness.authorize(ServerHarness.authorizePath(.a), browser: browser)["code"] != nil)

            let crossSite = try await harness.browser(
                .post,
                "/oauth/logout",
                form: [("confirm", "1")],
                cookies: browser.cookies,
                headers: [.origin: "https://attacker.example.com"]
            )
            #expect(crossSite.status == .forbidden)
            let confirmed = try await harness.browser(
                .post,
                "/oauth/logout",
                form: [("confirm", "1")],
                cookies: browser.cookies,
                headers: [.origin: harness.serverURL]
            )
            #expect(confirmed.status == .ok && confirmed.body.contains("Signed out"))
            let afterwards = try await harness.browser(.get, ServerHarness.authorizePath(.a), cookies: browser.cookies)
            #expect(afterwards.location?.hasPrefix("/auth/apple/authorize") == true)
        }
    }

    /// Any ID token issued here verifies, an attacker's own too: a link carrying one must not sign another user's
    /// browser out unasked.
    @Test func aHintOfAnotherUserStillAsksTheBrowsersUser() async throws {
        try await run { harness in
            let (attackerQuery, _, _) = try await harness.openIDSignIn(
                ServerHarness.authorizePath(.a),
                email: "attacker@example.com"
            )
            let attackerTokens = try await harness.redeem(try #require(attackerQuery["code"]), .a)
            let attackerIDToken = try #require(attackerTokens.json["id_token"] as? String)
            harness.browserCookies.clear()
            let (_, _, victim) = try await harness.openIDSignIn(
                ServerHarness.authorizePath(.a),
                email: "victim@example.com"
            )
            let link = try await harness.browser(
                .get,
                "/oauth/logout?" + ServerHarness.formEncode([("id_token_hint", attackerIDToken)]),
                cookies: victim.cookies
            )
            #expect(link.status == .ok)
            #expect(link.body.contains(#"<form method="post" action="/oauth/logout">"#), "asked first")
            #expect(link.setCookies["siwa_session"] == nil, "the victim's cookies are left alone")
            #expect(try await harness.authorize(ServerHarness.authorizePath(.a), browser: victim)["code"] != nil)

            // An access token is no ID token hint.
            let access = try #require(attackerTokens.json["access_token"] as? String)
            let asHint = try await harness.browser(
                .get,
                "/oauth/logout?" + ServerHarness.formEncode([("id_token_hint", access)])
            )
            #expect(asHint.status == .badRequest)
        }
    }

    @Test func revocationEndsTheRefreshFamilyAndAnswers200ForUnknownTokens() async throws {
        try await run { harness in
            let (query, _, _) = try await harness.openIDSignIn(ServerHarness.authorizePath(.a))
            let tokens = try await harness.redeem(try #require(query["code"]), .a)
            let refresh = try #require(tokens.json["refresh_token"] as? String)
            let access = try #require(tokens.json["access_token"] as? String)
            let secretA = try #require(RelyingParty.a.secret)
            let secretB = try #require(RelyingParty.b.secret)

            let unknown = try await harness.tokenRequest(
                [("token", "not-a-token")],
                basic: (RelyingParty.a.id, secretA),
                path: "/oauth/revoke"
            )
            #expect(unknown.status == .ok)
            let byB = try await harness.tokenRequest(
                [("token", refresh), ("token_type_hint", "refresh_token")],
                basic: (RelyingParty.b.id, secretB),
                path: "/oauth/revoke"
            )
            #expect(byB.status == .ok)
            let rotated = try await harness.refresh(refresh, .a)
            #expect(rotated.status == .ok, "another client cannot revoke A's token")
            let latest = try #require(rotated.json["refresh_token"] as? String)
            let unauthenticated = try await harness.tokenRequest([("token", latest)], path: "/oauth/revoke")
            #expect(unauthenticated.status == .unauthorized)

            let revoked = try await harness.tokenRequest(
                [("token", latest), ("token_type_hint", "refresh_token")],
                basic: (RelyingParty.a.id, secretA),
                path: "/oauth/revoke"
            )
            #expect(revoked.status == .ok)
            #expect(try await harness.refresh(latest, .a).json["error"] as? String == "invalid_grant")
            #expect(try await harness.call(.get, "/oauth/userinfo", bearer: access).status == .unauthorized)
        }
    }

    /// A rotated refresh token presented to the revocation endpoint is reuse, as at the token endpoint: its family
    /// ends, the newest token of it too, and the answer is 200 as RFC 7009 asks.
    @Test func revokingARotatedRefreshTokenEndsItsFamily() async throws {
        try await run { harness in
            let (query, _, _) = try await harness.openIDSignIn(ServerHarness.authorizePath(.a))
            let tokens = try await harness.redeem(try #require(query["code"]), .a)
            let first = try #require(tokens.json["refresh_token"] as? String)
            let rotated = try await harness.refresh(first, .a)
            let latest = try #require(rotated.json["refresh_token"] as? String)
            let access = try #require(rotated.json["access_token"] as? String)
            let revoked = try await harness.tokenRequest(
                [("token", first), ("token_type_hint", "refresh_token")],
                basic: (RelyingParty.a.id, try #require(RelyingParty.a.secret)),
                path: "/oauth/revoke"
            )
            #expect(revoked.status == .ok)
            #expect(
                try await harness.refresh(latest, .a).json["error"] as? String == "invalid_grant",
                "the family ended"
            )
            #expect(try await harness.call(.get, "/oauth/userinfo", bearer: access).status == .unauthorized)
        }
    }

    /// A JWT's header, unverified.
    static func header(of jwt: String) throws -> [String: Any] {
        let first = try #require(jwt.split(separator: ".").first)
        var base64 = String(first).replacing("-", with: "+").replacing("_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let data = try #require(Data(base64Encoded: base64))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }
}
