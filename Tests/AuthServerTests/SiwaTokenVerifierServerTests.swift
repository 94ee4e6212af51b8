import AuthServer
import Foundation
import SiwaTesting
import SiwaTokenVerifier
import SiwaTokenVerifierAsyncHTTPClient
import Testing

/// The token verifier for other Swift services against siwa itself, from its issuer URL alone (discovery, then the
/// key set): siwa's own access tokens, and those its OpenID provider issues to another app (with `client_id` and
/// `scope`).
@Suite("SiwaTokenVerifier against siwa")
struct SiwaTokenVerifierServerTests {
    @Test func siwasAccessTokensVerifyFromTheIssuerURLAlone() async throws {
        // Relying party A takes ES256 ID tokens, signed like access tokens: only their type tells them apart.
        var configuration = RelyingParty.configuration()
        configuration.openID.clients[0].idTokenSigningAlgorithm = .es256
        try await ServerHarness.run(configuration: configuration, web: true) { harness in
            let verifier = SiwaTokenVerifier(
                issuer: harness.serverURL,
                audience: "siwa",
                transport: AsyncHTTPClientKeyTransport(),
                now: { harness.clock.now }  // siwa's clock: the tokens' times are the harness's
            )
            let answer = try await harness.signIn("verified@example.com")
            let access = try #require(answer.json["accessToken"] as? String)
            let claims = try await verifier.verify(access)
            #expect(claims.subject == answer.json.user["id"] as? String)
            #expect(claims.sessionID == (try AdminAPITests.sessionID(access)))
            #expect(claims.issuer == harness.serverURL)
            #expect(claims.clientID == nil)
            #expect(claims.kind == .session)

            // An access token the OpenID provider issued to relying party A.
            let pkce = PKCE()
            let (query, _, _) = try await harness.openIDSignIn(
                ServerHarness.authorizePath(.a, pkce: pkce),
                email: "rp-verified@example.com"
            )
            let tokens = try await harness.redeem(try #require(query["code"]), .a, verifier: pkce.verifier)
            let rpAccess = try #require(tokens.json["access_token"] as? String)
            let rpClaims = try await verifier.verify(rpAccess)
            #expect(rpClaims.clientID == RelyingParty.a.id)
            #expect(rpClaims.scopes.contains("openid"))
            #expect(rpClaims.kind == .relyingParty)

            // The ID token is no access token, whatever audience a verifier is made for: its own client's included.
            let idToken = try #require(tokens.json["id_token"] as? String)
            for audience in ["siwa", RelyingParty.a.id] {
                let forAudience = SiwaTokenVerifier(
                    issuer: harness.serverURL,
                    audience: audience,
                    transport: AsyncHTTPClientKeyTransport(),
                    now: { harness.clock.now }
                )
                do throws(SiwaTokenError) {
                    _ = try await forAudience.verify(idToken)
                    Issue.record("an ID token verified as an access token for audience \(audience)")
                } catch {
                    #expect(error.code == .wrongTokenType, "\(error)")
                }
            }

            // A verifier made for another issuer (here siwa's URL with a trailing slash: the same discovery document)
            // refuses siwa's keys: the document names siwa's issuer, not the one asked for.
            let impostor = SiwaTokenVerifier(
                issuer: harness.serverURL + "/",
                audience: "siwa",
                transport: AsyncHTTPClientKeyTransport(),
                now: { harness.clock.now }
            )
            do throws(SiwaTokenError) {
                _ = try await impostor.verify(access)
                Issue.record("a verifier for another issuer accepted siwa's token")
            } catch {
                #expect(error.code == .keysUnavailable)
                #expect(error.message.contains("names issuer"), "\(error)")
            }
        }
    }
}
