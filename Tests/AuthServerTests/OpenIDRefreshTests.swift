import AccountStore
import AuthServer
import Crypto
import Foundation
import HTTPTypes
import Testing

/// The token endpoint's refresh grant against misplaced and rotated tokens, and against a relying party whose scopes
/// the configuration narrowed since it was granted.
@Suite("Server: the OpenID refresh grant")
struct OpenIDRefreshTests {
    /// siwa's own rotated refresh token presented at the token endpoint is reuse: the session it belonged to ends.
    @Test func aRotatedSiwaTokenAtTheTokenEndpointEndsItsSession() async throws {
        try await ServerHarness.run(configuration: RelyingParty.configuration(), web: true) { harness in
            let signedIn = try await harness.signIn("reuse@example.com")
            let first = try #require(signedIn.json["refreshToken"] as? String)
            let rotated = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": first])
            try #require(rotated.status == .ok)
            let current = try #require(rotated.json["refreshToken"] as? String)

            let presented = try await harness.refresh(first, .a)
            #expect(presented.status == .badRequest)
            #expect(presented.json["error"] as? String == "invalid_grant")

            let afterwards = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": current])
            #expect(afterwards.status == .unauthorized, "the session lived on after its rotated token was reused")
            let audit = try await harness.store.auditEvents(AuditEventFilter(), limit: 100, after: nil).items
            #expect(audit.contains { $0.type == .refreshTokenReuse }, "the reuse was audited")
        }
    }

    /// Another client presenting a relying party's rotated token: reuse too.
    @Test func anotherClientPresentingARotatedTokenEndsItsSession() async throws {
        try await ServerHarness.run(configuration: RelyingParty.configuration(), web: true) { harness in
            let (query, _, _) = try await harness.openIDSignIn(ServerHarness.authorizePath(.a))
            let tokens = try await harness.redeem(try #require(query["code"]), .a)
            let first = try #require(tokens.json["refresh_token"] as? String)
            let rotated = try await harness.refresh(first, .a)
            try #require(rotated.status == .ok)
            let current = try #require(rotated.json["refresh_token"] as? String)

            let asB = try await harness.refresh(first, .b)
            #expect(asB.json["error"] as? String == "invalid_grant")
            let afterwards = try await harness.refresh(current, .a)
            #expect(afterwards.status == .badRequest, "the session lived on after another client reused its token")
            #expect(afterwards.json["error"] as? String == "invalid_grant")
        }
    }

    /// Narrowing a client's scopes applies to the refresh tokens it already holds, and removing it stops them.
    @Test func aNarrowedClientIsGrantedNoMoreOnRefresh() async throws {
        let store = InMemoryAccountStore()
        let dataKey = SymmetricKey(size: .bits256)
        let refreshToken = Box()
        try await ServerHarness.run(
            store: store,
            configuration: RelyingParty.configuration(),
            web: true,
            dataKey: dataKey
        ) { harness in
            let (query, _, _) = try await harness.openIDSignIn(ServerHarness.authorizePath(.a))
            let tokens = try await harness.redeem(try #require(query["code"]), .a)
            #expect(tokens.json["scope"] as? String == "openid email profile")
            refreshToken.value = try #require(tokens.json["refresh_token"] as? String)
        }
        var narrowed = RelyingParty.configuration()
        narrowed.openID.clients[0].scopes = ["openid"]
        try await ServerHarness.run(store: store, configuration: narrowed, web: true, dataKey: dataKey) { harness in
            let refreshed = try await harness.refresh(try #require(refreshToken.value), .a)
            try #require(refreshed.status == .ok, "\(refreshed.json)")
            #expect(refreshed.json["scope"] as? String == "openid")
            let access = try #require(refreshed.json["access_token"] as? String)
            #expect(try ServerHarness.claims(of: access)["scope"] as? String == "openid")
            let userInfo = try await harness.call(.get, "/oauth/userinfo", bearer: access)
            #expect(userInfo.status == .ok)
            #expect(userInfo.json["email"] == nil, "userinfo answered a claim the client may no longer have")
            // The next token keeps the narrower grant.
            let next = try await harness.refresh(try #require(refreshed.json["refresh_token"] as? String), .a)
            #expect(next.json["scope"] as? String == "openid")
            refreshToken.value = next.json["refresh_token"] as? String
        }
        var removed = RelyingParty.configuration()
        removed.openID.clients.removeFirst()
        try await ServerHarness.run(store: store, configuration: removed, web: true, dataKey: dataKey) { harness in
            let refreshed = try await harness.refresh(try #require(refreshToken.value), .a)
            #expect(refreshed.status == .unauthorized)
            #expect(refreshed.json["error"] as? String == "invalid_client")
        }
    }

    /// RFC 6750 §2.2: the access token as the form's `access_token`, as pyoidc sends it by default.
    @Test func userInfoTakesTheAccessTokenFromAFormBody() async throws {
        try await ServerHarness.run(configuration: RelyingParty.configuration(), web: true) { harness in
            let (query, _, _) = try await harness.openIDSignIn(ServerHarness.authorizePath(.a))
            let tokens = try await harness.redeem(try #require(query["code"]), .a)
            let access = try #require(tokens.json["access_token"] as? String)
            let byForm = try await harness.browser(.post, "/oauth/userinfo", form: [("access_token", access)])
            #expect(byForm.status == .ok, "\(byForm.body)")
            #expect(byForm.body.contains("\"sub\""))
            // One way per request (RFC 6750 §2): an Authorization header that is no bearer token is not passed over.
            let twoWays = try await harness.browser(
                .post,
                "/oauth/userinfo",
                form: [("access_token", access)],
                headers: [.authorization: "Basic cnAtYTpzZWNyZXQ="]
            )
            #expect(twoWays.status == .unauthorized, "\(twoWays.body)")
            let forged = try await harness.browser(.post, "/oauth/userinfo", form: [("access_token", "forged")])
            #expect(forged.status == .unauthorized)
            #expect(forged.headers[.wwwAuthenticate]?.contains("invalid_token") == true)
        }
    }

    final class Box: @unchecked Sendable {
        // Written by one harness after another, never at once.
        var value: String?
    }
}
