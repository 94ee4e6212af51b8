import AccountStore
import Foundation
import HTTPTypes
import Testing

/// The web sign-in in a real browser: headless Chromium, driven over WebDriver, against the server and the emulator on
/// loopback. `scripts/test` (through `scripts/with-chromium`) installs Chromium and sets `SIWA_TEST_CHROMEDRIVER`;
/// without it the suite is skipped.
@Suite(
    "Web sign-in in a browser",
    .enabled(
        if: ProcessInfo.processInfo.environment["SIWA_TEST_CHROMEDRIVER"] != nil,
        "SIWA_TEST_CHROMEDRIVER is not set: run through scripts/with-chromium (scripts/test does)"
    )
)
struct WebBrowserTests {
    private func browser(javaScript: Bool = true, log: String) async throws -> WebDriverSession {
        try await WebDriverSession.startForTest(suite: "WebBrowserTests", javaScript: javaScript, log: log)
    }

    private func screenshot(_ browser: WebDriverSession, _ name: String) async throws {
        try await browser.screenshot(named: name, suite: "WebBrowserTests")
    }

    @Test func signInWithHideMyEmailSignInAgainAndSignOut() async throws {
        try await ServerHarness.run(configuration: WebSignInTests.configuration(), web: true) { harness in
            let login = harness.serverURL + "/login"

            // First sign-in, with JavaScript (Apple's form_post page submits itself).
            let first = try await browser(log: "chromedriver-first.log")
            do {
                try await first.navigate(to: login)
                try await first.wait(for: "the login page") { _, source in source.contains("Sign in with Apple") }
                try await screenshot(first, "1-login.png")
                try await first.click("a.apple-button")
                try await first.wait(for: "the consent page") { url, _ in url.hasPrefix(harness.emulatorURL) }
                try await first.type("browser@example.com", into: "#email")
                try await first.type("Brow", into: "#given_name")
                try await first.click(#"input[name="hide_email"][value="true"]"#)
                try await screenshot(first, "2-consent.png")
                try await first.click(#"button[value="continue"]"#)
                try await first.wait(for: "the signed-in page") { url, source in
                    url == login && source.contains("Sign out")
                }
                try await screenshot(first, "3-signed-in.png")
                let source = try await first.pageSource()
                #expect(source.contains("Hello, Brow Appleseed"))
                #expect(source.contains("@privaterelay.appleid.com"))
                #expect(source.contains("Relay address"))
                #expect(!source.contains("browser@example.com"))
                let cookies = try await first.cookies()
                #expect(cookies["siwa_session"] != nil)
                #expect(cookies["siwa_refresh"] != nil)
                await first.quit()
            } catch {
                await first.quit()
                throw error
            }

            // Second sign-in in a fresh browser without JavaScript: the whole flow still works (Apple's page shows
            // its Continue button), and Apple's callback carries no name this time.
            let second = try await browser(javaScript: false, log: "chromedriver-second.log")
            do {
                try await second.navigate(to: login)
                try await second.click("a.apple-button")
                try await second.wait(for: "the consent page") { url, _ in url.hasPrefix(harness.emulatorURL) }
                try await second.type("browser@example.com", into: "#email")
                try await second.type("Renamed", into: "#given_name")
                try await second.click(#"input[name="hide_email"][value="true"]"#)
                try await second.click(#"button[value="continue"]"#)
                try await second.wait(for: "Apple's form_post page") { _, source in
                    source.contains("apple-form-post")
                }
                let formPost = try await second.pageSource()
                #expect(formPost.contains(#"name="id_token""#))
                #expect(!formPost.contains(#"name="user""#))  // no name prompt the second time
                try await second.click("#apple-form-post button")
                try await second.wait(for: "the signed-in page") { url, source in
                    url == login && source.contains("Sign out")
                }
                let source = try await second.pageSource()
                #expect(source.contains("Hello, Brow Appleseed"))
                #expect(!source.contains("Renamed"))
                try await screenshot(second, "4-signed-in-again.png")

                // Sign out ends the session.
                let cookies = try await second.cookies()
                let session = try #require(cookies["siwa_session"])
                try await second.click("form[action=\"/auth/logout\"] button")
                try await second.wait(for: "the signed-out page") { url, source in
                    url.hasPrefix(login) && source.contains("You have signed out")
                }
                try await screenshot(second, "5-signed-out.png")
                #expect(try await second.pageSource().contains("Sign in with Apple"))
                #expect(try await second.cookies()["siwa_session"] == nil)
                let me = try await harness.browser(.get, "/api/me", cookies: ["siwa_session": session])
                #expect(me.status == .unauthorized)
                await second.quit()
            } catch {
                await second.quit()
                throw error
            }
            #expect(try await harness.store.users(limit: 10, after: nil).count == 1)
        }
    }

    /// Apple's `form_post` as production sees it: a POST from another site. Chromium takes the server on `localhost`
    /// and the emulator on `127.0.0.1` for two sites (a site ignores the port, not the host), so the callback carries
    /// no `SameSite=Lax` cookie; only the flow cookie (`SameSite=None; Secure`, which browsers keep on loopback) binds
    /// it to this browser, and the sign-in completes. (The test above runs both on `127.0.0.1`: one site.)
    @Test func aCrossSiteFormPostSignsIn() async throws {
        let configuration = WebSignInTests.configuration()
        let onLocalhost: @Sendable (Int) -> String = { "http://localhost:\($0)" }
        try await ServerHarness.run(configuration: configuration, web: true, publicOrigin: onLocalhost) { harness in
            #expect(URL(string: harness.serverURL)?.host == "localhost")
            #expect(URL(string: harness.emulatorURL)?.host == "127.0.0.1")
            let browser = try await browser(log: "chromedriver-cross-site.log")
            do {
                try await browser.signInWithApple(
                    from: harness.serverURL + "/login",
                    emulatorURL: harness.emulatorURL,
                    email: "cross-site@example.com",
                    givenName: "Cross"
                )
                try await screenshot(browser, "6-cross-site-signed-in.png")
                #expect(try await browser.pageSource().contains("Hello, Cross Appleseed"))
                #expect(try await browser.cookies()["siwa_session"] != nil)
                await browser.quit()
            } catch {
                await browser.quit()
                throw error
            }
            #expect(try await harness.store.users(limit: 10, after: nil).count == 1)
        }
    }

    /// Login CSRF in real browsers: the attacker consents in their own browser and keeps Apple's `form_post` form; a
    /// victim's browser (another profile, which never started the flow) submits it to the callback. The server refuses
    /// it and the victim is not signed in as anyone.
    @Test func aConsentedFormReplayedFromAnotherBrowserProfileIsRefused() async throws {
        try await ServerHarness.run(configuration: WebSignInTests.configuration(), web: true) { harness in
            let attacker = try await browser(javaScript: false, log: "chromedriver-attacker.log")
            var fields: [(String, String)] = []
            do {
                try await attacker.navigate(to: harness.serverURL + "/login")
                try await attacker.click("a.apple-button")
                try await attacker.wait(for: "the consent page") { url, _ in url.hasPrefix(harness.emulatorURL) }
                try await attacker.type("attacker@example.com", into: "#email")
                try await attacker.click(#"button[value="continue"]"#)
                try await attacker.wait(for: "Apple's form_post page") { _, source in
                    source.contains("apple-form-post")
                }
                let page = try await attacker.pageSource()
                fields = WebPage(status: .ok, headers: [:], body: page).hiddenFieldsOrEmpty
                #expect(try await attacker.cookies()["siwa_flow"] != nil, "the flow is bound to the attacker's browser")
                await attacker.quit()
            } catch {
                await attacker.quit()
                throw error
            }
            #expect(fields.contains { $0.0 == "id_token" } && fields.contains { $0.0 == "state" })

            let victim = try await browser(javaScript: false, log: "chromedriver-victim.log")
            do {
                // The attacker's page: the kept form, posting cross-site to the callback.
                let inputs = fields.map { name, value in
                    #"<input type="hidden" name="\#(name)" value="\#(Self.escape(value))">"#
                }.joined()
                let html =
                    #"<form method="post" action="\#(harness.serverURL)/auth/apple/callback">"#
                    + inputs + #"<button id="go">Continue</button></form>"#
                try await victim.navigate(
                    to: "data:text/html;charset=utf-8,"
                        + html.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                )
                try await victim.click("#go")
                try await victim.wait(for: "the callback's answer") { url, _ in url.contains("/auth/apple/callback") }
                let answer = try await victim.pageSource()
                try await screenshot(victim, "csrf-refused.png")
                #expect(answer.contains("flow_not_started_here"))
                let cookies = try await victim.cookies()
                #expect(cookies["siwa_session"] == nil && cookies["siwa_refresh"] == nil, "the victim is not signed in")
                await victim.quit()
            } catch {
                await victim.quit()
                throw error
            }
            #expect(try await harness.store.users(limit: 10, after: nil).isEmpty)
        }
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}

extension WebPage {
    /// The hidden fields of the page's form, or none.
    var hiddenFieldsOrEmpty: [(String, String)] { (try? hiddenFields()) ?? [] }
}
