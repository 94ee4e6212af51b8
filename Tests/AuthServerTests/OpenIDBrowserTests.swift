import AuthServer
import Foundation
import HTTPTypes
import Testing

/// The OpenID provider's authorization-code flow in headless Chromium: a relying party sends the browser to siwa, siwa
/// signs it in with Apple (the emulator's consent page, its self-submitting `form_post`) and returns it to the relying
/// party with a code that redeems; a public client's consent page on the way. Skipped without
/// `SIWA_TEST_CHROMEDRIVER` (`scripts/with-chromium` sets it).
@Suite(
    "OpenID provider in a browser",
    .enabled(
        if: ProcessInfo.processInfo.environment["SIWA_TEST_CHROMEDRIVER"] != nil,
        "SIWA_TEST_CHROMEDRIVER is not set: run through scripts/with-chromium (scripts/test does)"
    )
)
struct OpenIDBrowserTests {
    /// Runs a server with the relying party `party` makes from the public URL, opens Chromium at its authorization
    /// request and signs in at the emulator as `email` (`givenName`, when given), then hands over.
    private func signIn(
        _ party: @escaping @Sendable (_ publicURL: String) -> RelyingParty,
        name: String? = nil,
        email: String,
        givenName: String? = nil,
        log: String,
        _ body: @escaping @Sendable (ServerHarness, RelyingParty, PKCE, WebDriverSession) async throws -> Void
    ) async throws {
        let adjust: @Sendable (inout AuthServerConfiguration) -> Void = { configuration in
            var client = party(configuration.publicURL).client
            client.name = name
            configuration.openID.clients.append(client)
        }
        try await ServerHarness.run(configuration: RelyingParty.configuration(), web: true, adjust: adjust) { harness in
            let rp = party(harness.serverURL)
            let pkce = PKCE()
            let browser = try await WebDriverSession.startForTest(
                suite: "OpenIDBrowserTests",
                javaScript: true,
                log: log
            )
            do {
                try await browser.navigate(to: harness.serverURL + ServerHarness.authorizePath(rp, pkce: pkce))
                try await browser.wait(for: "Apple's consent page") { url, _ in url.hasPrefix(harness.emulatorURL) }
                try await browser.type(email, into: "#email")
                if let givenName { try await browser.type(givenName, into: "#given_name") }
                try await browser.click(#"button[value="continue"]"#)
                try await body(harness, rp, pkce, browser)
                await browser.quit()
            } catch {
                await browser.quit()
                throw error
            }
        }
    }

    @Test func aRelyingPartySignsInThroughSiwaInChromium() async throws {
        // The relying party's redirect URI is a page of the server itself, so that the browser can load it.
        let party = { @Sendable (publicURL: String) in
            RelyingParty(
                id: "rp-browser",
                secret: "secret-of-the-browser-rp-0123456789",
                redirectURI: publicURL + "/rp/callback",
                logoutURI: publicURL + "/login"
            )
        }
        try await signIn(party, email: "chromium-rp@example.com", givenName: "Chro", log: "chromedriver-oidc.log") {
            harness,
            rp,
            pkce,
            browser in
            try await browser.wait(for: "the relying party's redirect URI") { url, _ in
                url.hasPrefix(rp.redirectURI + "?")
            }
            try await browser.screenshot(named: "oidc-redirected.png", suite: "OpenIDBrowserTests")
            let query = ServerHarness.query(of: try await browser.currentURL())
            #expect(query["state"] == "state-123")
            let code = try #require(query["code"])
            let tokens = try await harness.redeem(code, rp, verifier: pkce.verifier)
            #expect(tokens.status == .ok, "\(tokens.json)")
            let idToken = try #require(tokens.json["id_token"] as? String)
            let claims = try ServerHarness.claims(of: idToken)
            #expect(claims["email"] as? String == "chromium-rp@example.com")
            #expect(claims["name"] as? String == "Chro Appleseed")
            #expect(claims["nonce"] as? String == "nonce-456")

            // Signed in at siwa now: a second authorization in the same browser comes straight back.
            try await browser.navigate(to: harness.serverURL + ServerHarness.authorizePath(rp, state: "second"))
            try await browser.wait(for: "the second redirect") { url, _ in url.contains("state=second") }
            #expect(ServerHarness.query(of: try await browser.currentURL())["code"] != nil)
        }
    }

    @Test func aPublicClientsConsentPageIsAllowedInChromium() async throws {
        // Another origin than the server's (localhost, not 127.0.0.1, a name this browser does not resolve: the URL it
        // tried is what counts): Chromium checks the consent form's `form-action` against the redirect that answers it,
        // which must then name the client's redirect URI.
        let party = { @Sendable (publicURL: String) in
            RelyingParty(
                id: "rp-browser-app",
                secret: nil,
                redirectURI: publicURL.replacing("127.0.0.1", with: "localhost") + "/rp/app-callback",
                logoutURI: publicURL + "/login"
            )
        }
        try await signIn(
            party,
            name: "Example Notes",
            email: "chromium-app@example.com",
            log: "chromedriver-oidc-consent.log"
        ) { harness, rp, pkce, browser in
            try await browser.wait(for: "siwa's consent page") { _, source in
                source.contains("Example Notes") && source.contains(#"value="allow""#)
            }
            try await browser.screenshot(named: "oidc-consent.png", suite: "OpenIDBrowserTests")
            try await browser.click(#"button[value="allow"]"#)
            try await browser.wait(for: "the app's redirect URI") { url, _ in url.hasPrefix(rp.redirectURI + "?") }
            let query = ServerHarness.query(of: try await browser.currentURL())
            let tokens = try await harness.redeem(try #require(query["code"]), rp, verifier: pkce.verifier)
            #expect(tokens.status == .ok, "\(tokens.json)")

            // Remembered: the next authorization in this browser comes straight back. The redirect URI's host does not
            // resolve in this browser (loopback only), so the navigation ends in an error page at that URL.
            _ = try? await browser.navigate(
                to: harness.serverURL + ServerHarness.authorizePath(rp, state: "second", pkce: PKCE())
            )
            try await browser.wait(for: "the second redirect") { url, _ in url.contains("state=second") }
            #expect(ServerHarness.query(of: try await browser.currentURL())["code"] != nil)
        }
    }
}
