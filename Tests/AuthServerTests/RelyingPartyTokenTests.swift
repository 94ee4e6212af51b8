import AccountStore
import AuthServer
import Foundation
import HTTPTypes
import Testing

/// A relying party is a server: it can set any cookie and `Origin` it likes. The access token siwa's OpenID provider
/// gave it is for `/oauth/userinfo` and the team's services, and must be no session on siwa's own routes however it
/// is presented.
@Suite("Server: a relying party's access token is no session")
struct RelyingPartyTokenTests {
    static func configuration() -> AuthServerConfiguration {
        var configuration = RelyingParty.configuration()
        configuration.compatibility = .all
        configuration.notificationRateLimit = nil
        return configuration
    }

    @Test func aRelyingPartysTokenIsRefusedInEverySessionCookie() async throws {
        try await ServerHarness.run(configuration: Self.configuration(), web: true) { harness in
            // The user grants relying party A only `openid`; the user is an admin of siwa.
            let signIn = try await harness.openIDSignIn(ServerHarness.authorizePath(.a, scope: "openid"))
            let redeemed = try await harness.redeem(try #require(signIn.query["code"]), .a)
            let token = try #require(redeemed.json["access_token"] as? String)
            let subject = try #require(ServerHarness.claims(of: token)["sub"] as? String)
            let userID = try #require(UserID(subject))
            #expect(try await harness.store.grantAdmin(AdminSubject(userID), by: .operator, now: Date()))
            let sameSite: HTTPFields = [.origin: harness.serverURL]

            for cookie in ["siwa_session", "ss-tok"] {
                let me = try await harness.browser(.get, "/api/me", cookies: [cookie: token], headers: sameSite)
                #expect(me.status == .unauthorized, "\(cookie) on GET /api/me: \(me.status) \(me.body)")
                #expect(!me.body.contains("email"), "\(cookie) read the user's account")

                let hello = try await harness.browser(.get, "/hello/secure/x", cookies: [cookie: token])
                #expect(hello.status == .unauthorized, "\(cookie) on /hello/secure: \(hello.status) \(hello.body)")

                let otherClient = try await harness.browser(
                    .get,
                    ServerHarness.authorizePath(.b),
                    cookies: [cookie: token]
                )
                #expect(
                    !(otherClient.location ?? "").contains("code="),
                    "\(cookie) got a code for another client: \(otherClient.status) \(otherClient.location ?? "")"
                )

                let console = try await harness.browser(.get, "/admin", cookies: [cookie: token])
                #expect(console.status != .ok, "\(cookie) opened the operator console")

                let delete = try await harness.browser(.delete, "/api/me", cookies: [cookie: token], headers: sameSite)
                #expect(delete.status == .unauthorized, "\(cookie) on DELETE /api/me: \(delete.status) \(delete.body)")
            }
            // The account is still there, and the token still works where it belongs.
            #expect(try await harness.store.user(id: userID)?.status == .active)
            let userInfo = try await harness.call(.get, "/oauth/userinfo", bearer: token)
            #expect(userInfo.status == .ok)
            #expect(userInfo.json["sub"] as? String == userID.description)
        }
    }
}
