import AccountStore
import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import SiwaTesting
import Testing

@testable import SiwaCLI

/// siwa's OpenID provider driven by independent libraries from PyPI (`scripts/with-python-client` installs them):
/// PyJWT's `PyJWKClient` verifies siwa's access tokens found through discovery alone, and Authlib's `OAuth2Session`
/// completes the authorization-code flow with PKCE, validates the ID token, calls userinfo, refreshes and logs out.
@Suite("Server: OpenID Connect with Python's Authlib and PyJWT")
struct OpenIDPythonClientTests {
    static let python = PythonClientScript.python
    static let script = PythonClientScript("oidc_client.py")

    static func run(_ arguments: [String]) async throws -> [String: Any] {
        try await script.run(arguments)
    }

    @Test(.enabled(if: python != nil, "set SIWA_TEST_PYTHON (scripts/with-python-client does) to run PyJWT"))
    func pyJWKClientVerifiesAccessTokensThroughDiscovery() async throws {
        try await ServerHarness.run(configuration: RelyingParty.configuration(), web: true) { harness in
            let signIn = try await harness.signIn("pyjwt@example.com")
            let token = try #require(signIn.json["accessToken"] as? String)
            let verified = try await Self.run(["verify-access-token", harness.serverURL, token, "siwa"])
            let user = try #require(signIn.json["user"] as? [String: Any])
            #expect(verified["sub"] as? String == user["id"] as? String)
        }
    }

    @Test(.enabled(if: python != nil, "set SIWA_TEST_PYTHON (scripts/with-python-client does) to run Authlib"))
    func authlibCompletesTheCodeFlowValidatesTheIDTokenRefreshesAndLogsOut() async throws {
        try await ServerHarness.run(configuration: RelyingParty.configuration(), web: true) { harness in
            let party = RelyingParty.a
            let answer = try await Self.run([
                "authlib-flow", harness.serverURL, party.id, try #require(party.secret), party.redirectURI,
                party.logoutURI, "authlib@example.com",
            ])
            #expect(answer["email"] as? String == "authlib@example.com")
            #expect(answer["refreshed"] as? Bool == true)
            #expect(answer["loggedOut"] as? Bool == true)
            let sub = try #require(answer["sub"] as? String)
            #expect(try await harness.store.users(email: "authlib@example.com").map(\.id.description) == [sub])
        }
    }

    /// OpenID Connect Back-Channel Logout 1.0 with a relying party of its own: it signs in through siwa with Authlib,
    /// its account is deleted, and the logout token siwa posts (from the outbox, through the real webhook transport)
    /// is verified by pyoidc's `BackChannelLogoutRequest` and by PyJWT claim by claim, and ends the relying party's
    /// session of that `sid`.
    @Test(.enabled(if: python != nil, "set SIWA_TEST_PYTHON (scripts/with-python-client does) to run pyoidc"))
    func aRelyingPartyEndsItsSessionOnTheLogoutToken() async throws {
        let folder = try TemporaryFolder("siwa-backchannel")
        let rpPort = try freeLoopbackPort()
        let party = RelyingParty(
            id: "rp-backchannel",
            secret: "secret-of-backchannel-0123456789-abcdef",
            redirectURI: "https://rp-backchannel.example.com/callback",
            logoutURI: "https://rp-backchannel.example.com/signed-out"
        )
        var client = party.client
        client.backchannelLogoutURI = URL(string: "http://127.0.0.1:\(rpPort)/backchannel-logout")
        var configuration = RelyingParty.configuration(extra: [client])
        configuration.webhooks.allowsPlainHTTPToLoopback = true
        configuration.webhooks.pollInterval = .milliseconds(100)
        configuration.webhooks.transport = HTTPWebhookTransport()
        try await ServerHarness.run(configuration: configuration, web: true) { harness in
            let stateFile = folder.path + "/rp-state.json"
            async let answer = Self.run([
                "backchannel-rp", harness.serverURL, party.id, try #require(party.secret), party.redirectURI,
                "backchannel@example.com", String(rpPort), stateFile,
            ])
            var state: [String: Any]?
            for _ in 0..<1_200 where state == nil {
                if let data = FileManager.default.contents(atPath: stateFile) {
                    state = try JSONSerialization.jsonObject(with: data) as? [String: Any]
                } else {
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            let signedIn = try #require(state, "the relying party never signed in")
            let userID = try #require((signedIn["sub"] as? String).flatMap(UserID.init))
            // The harness's clock stood still since it started; the logout token's iat and exp come from it, and the
            // relying party checks them against real time: on a loaded machine the sign-in alone can outlast exp.
            harness.clock.set(Date())
            let deleted = try await harness.store.deleteUser(
                id: userID,
                mode: .delete,
                appleRevocationDueAt: nil,
                by: .operator,
                now: harness.clock.now
            )
            #expect(deleted != nil)
            let verified = try await answer
            #expect(verified["ended"] as? Bool == true)
            #expect(verified["sid"] as? String == signedIn["sid"] as? String)
            #expect(verified["alg"] as? String == "RS256", "signed as the client's ID tokens are")
            let ended = try await harness.store.lifecycleEvents(after: nil, limit: 100).first {
                $0.type == .sessionEnded && $0.sessionChannel == .openID(party.id)
            }
            #expect(verified["jti"] as? String == ended?.id.lowercasedText, "the jti is the event's id")
            let deliveries = try await harness.store.webhookDeliveries(
                endpoint: "backchannel:\(party.id)",
                state: nil,
                before: nil,
                limit: 10
            )
            #expect(deliveries.count == 1, "only the relying party's session, not the browser's")
        }
    }
}
