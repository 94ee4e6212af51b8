import AccountStore
import AuthServer
import Foundation
import SiwaTesting
import Testing

/// The product's sign-in in a real browser (headless Chromium over WebDriver), at a phone's width and a desktop's:
/// the page carries the product's name and logo, its one button style and its support link; the sign-in goes through
/// the emulator's consent page and lands on the product's page; a disabled account's page speaks in the product's
/// name. The screenshots in `docs/branding/` are this test's (`.build/test-output/BrandedLoginBrowserTests`).
@Suite(
    "Branded sign-in in a browser",
    .enabled(
        if: ProcessInfo.processInfo.environment["SIWA_TEST_CHROMEDRIVER"] != nil,
        "SIWA_TEST_CHROMEDRIVER is not set: run through scripts/with-chromium (scripts/test does)"
    )
)
struct BrandedLoginBrowserTests {
    static let suite = "BrandedLoginBrowserTests"
    static let phone = (width: 390, height: 844)
    static let desktop = (width: 1280, height: 800)

    /// A logo as a product would have one: a mark and a word, drawn in SVG.
    static let logo = BrandingConfiguration.Logo(
        bytes: Array(
            """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 56" width="200" height="56">\
            <rect x="0" y="4" width="48" height="48" rx="12" fill="#ff5a1f"/>\
            <path d="M14 40 L24 14 L34 40 M18 31 H30" stroke="#fff" stroke-width="5" fill="none" \
            stroke-linecap="round" stroke-linejoin="round"/>\
            <text x="60" y="38" font-family="Helvetica, Arial, sans-serif" font-size="30" font-weight="700" \
            fill="#1d1d1f">Acme</text></svg>
            """.utf8
        ),
        contentType: "image/svg+xml"
    )

    @Test func theProductsSignInLooksLikeTheProductAndLandsOnItsPage() async throws {
        var configuration = WebSignInTests.branded()
        configuration.branding.logo = Self.logo
        try await ServerHarness.run(configuration: configuration, web: true) { harness in
            let browser = try await WebDriverSession.startForTest(suite: Self.suite, log: "chromedriver-branding.log")
            do {
                try await browser.setWindowSize(width: Self.desktop.width, height: Self.desktop.height)
                try await browser.navigate(to: harness.serverURL + "/login")
                try await browser.wait(for: "the product's login page") { _, source in
                    source.contains("Sign in to Acme")
                }
                let source = try await browser.pageSource()
                #expect(source.contains(#"<img src="/branding/logo" alt="Acme""#))
                #expect(source.contains("Contact Acme support"))
                #expect(!source.contains("Button style"))
                // The logo is drawn, not a broken image: the browser loaded it under the page's policy.
                let width = try await browser.execute("return document.querySelector('.logo img').naturalWidth")
                #expect((width as? Int ?? 0) > 0, "the logo loaded: naturalWidth \(String(describing: width))")
                try await browser.screenshots(
                    named: "login",
                    suite: Self.suite,
                    desktop: Self.desktop,
                    phone: Self.phone
                )

                try await browser.click("a.apple-button")
                try await browser.wait(for: "the consent page") { url, _ in url.hasPrefix(harness.emulatorURL) }
                try await browser.type("ann@acme.example", into: "#email")
                try await browser.click(#"button[value="continue"]"#)
                try await browser.wait(for: "the product's page") { url, _ in url.hasSuffix("/welcome") }

                // Disabled: the next sign-in's page says what to do, in the product's name.
                let user = try #require(try await harness.store.users(email: "ann@acme.example").first)
                _ = try await harness.store.disableUser(id: user.id, now: Date())
                try await browser.navigate(to: harness.serverURL + "/auth/apple/authorize?returnUrl=%2Fwelcome")
                try await browser.wait(for: "the consent page") { url, _ in url.hasPrefix(harness.emulatorURL) }
                try await browser.type("ann@acme.example", into: "#email")
                try await browser.click(#"button[value="continue"]"#)
                try await browser.wait(for: "the disabled page") { _, source in
                    source.contains("Acme could not sign you in")
                }
                try await browser.screenshots(
                    named: "disabled",
                    suite: Self.suite,
                    desktop: Self.desktop,
                    phone: Self.phone
                )
                await browser.quit()
            } catch {
                await browser.quit()
                throw error
            }
        }
    }
}
