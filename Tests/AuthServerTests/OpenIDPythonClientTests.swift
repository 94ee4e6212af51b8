import AccountStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import SiwaTesting
import Testing

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
}
