import AuthServer
import Foundation
import HTTPTypes
import Testing

/// The OpenID provider's authorization-code flow in headless Chromium: a relying party sends the browser to siwa, siwa
/// signs it in with Apple (the emulator's consent page, its self-submitting `form_post`) and returns it to the relying
/// party with a code that redeems. Skipped without `SIWA_TEST_CHROMEDRIVER` (`scripts/with-chromium` sets it).
@Suite(
    "OpenID provider in a browser",
    .enabled(
        if: ProcessInfo.processInfo.environment["SIWA_TEST_CHROMEDRIVER"] != nil,
        "SIWA_TEST_CHROMEDRIVER is not set: run through scripts/with-chromium (scripts/test does)"
    )
)
struct OpenIDBrowserTests {
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
        let adjust: @Sendable (inout AuthServerConfiguration) -> Void = { configuration in
            configuration.openID.clients.append(party(configuration.publicURL).client)
        }
        try await ServerHarness.run(configuration: RelyingParty.configuration(), web: true, adjust: adjust) { harness in
            let rp = party(harness.serverURL)
            let pkce = PKCE()
            let browser = try await WebDriverSession.startForTest(
                suite: "OpenIDBrowserTests",
                javaScript: true,
                log: "chromedriver-oidc.log"
            )
            do {
                try await browser.navigate(to: harness.serverURL + ServerHarness.authorizePath(rp, pkce: pkce))
                try await browser.wait(for: "Apple's consent page") { url, _ in url.hasPrefix(harness.emulatorURL) }
                try await browser.type("chromium-rp@example.com", into: "#email")
                try await browser.type("Chro", into: "#given_name")
                try await browser.click(#"button[value="continue"]"#)
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
                await browser.quit()
            } catch {
                await browser.quit()
                throw error
            }
        }
    }
}
