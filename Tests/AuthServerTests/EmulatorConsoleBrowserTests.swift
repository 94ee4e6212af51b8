import AppleSignIn
import AppleSignInAsyncHTTPClient
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

/// The emulator's console in a real browser (headless Chromium over WebDriver, JavaScript on but the console has
/// none): sign in natively, copy the token, revoke consent, switch a fault, read the log; at a phone's width and a
/// desktop's. Skipped without `SIWA_TEST_CHROMEDRIVER` (`scripts/with-chromium` sets it).
@Suite(
    "Emulator console in a browser",
    .enabled(
        if: ProcessInfo.processInfo.environment["SIWA_TEST_CHROMEDRIVER"] != nil,
        "SIWA_TEST_CHROMEDRIVER is not set: run through scripts/with-chromium (scripts/test does)"
    )
)
struct EmulatorConsoleBrowserTests {
    static let suite = "EmulatorConsoleBrowserTests"
    static let phone = (width: 390, height: 844)
    static let desktop = (width: 1400, height: 1000)

    @Test func signInRevokeConsentSwitchAFaultAndReadTheLog() async throws {
        let clock = ManualWallClock(Date())
        try await ServerHarness.runEmulator(clock: clock) { emulatorURL in
            let browser = try await WebDriverSession.startForTest(suite: Self.suite, log: "chromedriver-console.log")
            do {
                try await browser.setWindowSize(width: Self.desktop.width, height: Self.desktop.height)
                try await browser.navigate(to: emulatorURL + "/")
                try await browser.wait(for: "the console") { _, source in source.contains("Emulator console") }
                #expect(try await browser.pageSource().contains("No Apple ID yet"))

                // Sign in natively: the result page shows the token and code to copy.
                try await browser.type(ServerHarness.bundleID, into: "#sign-in-client")
                try await browser.type("console@example.com", into: "#sign-in-email")
                try await browser.click("#native-sign-in button[type=submit]")
                try await browser.wait(for: "the signed-in page") { _, source in source.contains("Signed in natively") }
                let token = try await browser.value(of: "#identity-token")
                #expect(!(try await browser.value(of: "#authorization-code")).isEmpty)
                let verified = try await Self.verifier(emulatorURL, clock: clock).verify(token)
                #expect(verified.aud.rawValue == ServerHarness.bundleID)
                #expect(verified.email == "console@example.com")
                try await screenshots(browser, "1-signed-in")

                // Back on the console: the Apple ID, its sub and consent granted.
                try await browser.click("#back")
                try await browser.wait(for: "the Apple ID on the console") { _, source in
                    source.contains(#"data-email="console@example.com""#) && source.contains(verified.sub.rawValue)
                        && source.contains(#"<span class="granted">granted</span>"#)
                }
                try await screenshots(browser, "2-console")

                // Revoke consent with the row's button; the console shows it revoked.
                try await browser.click(#"tr[data-client="\#(ServerHarness.bundleID)"] form.revoke button"#)
                try await browser.wait(for: "the revocation page") { _, source in
                    source.contains("consent-revoked") && source.contains("sent to")
                }
                try await browser.click("#back")
                try await browser.wait(for: "consent shown revoked") { _, source in
                    source.contains(#"<span class="revoked">revoked</span>"#)
                }

                // A fault on /auth/token, then off again.
                try await browser.click(#"#fault-token button[value="error"]"#)
                try await browser.wait(for: "the fault on") { url, source in
                    url == emulatorURL + "/" && Self.faultState("token", source) == "error (500) on every call"
                }
                #expect(try await Self.tokenEndpointStatus(emulatorURL) == 500)
                try await browser.navigate(to: emulatorURL + "/#keys")  // scrolls to the keys and faults
                try await screenshots(browser, "3-fault-on")
                try await browser.click(#"#fault-token button[value="off"]"#)
                try await browser.wait(for: "the fault off") { _, source in Self.faultState("token", source) == "off" }
                #expect(try await Self.tokenEndpointStatus(emulatorURL) == 400)  // Apple's answer to an empty form

                // The log as a table, then filtered to native sign-ins.
                try await browser.click("#log-link")
                try await browser.wait(for: "the log table") { _, source in source.contains(#"<table id="log">"#) }
                let log = try await browser.pageSource()
                #expect(log.contains("<td>native-sign-in</td>"))
                #expect(log.contains("consent-revoked: no notification URL"))
                try await browser.click(#"select[name="endpoint"] option[value="native-sign-in"]"#)
                try await browser.click("#log-filter button")
                try await browser.wait(for: "the filtered log") { url, _ in url.contains("endpoint=native-sign-in") }
                let filtered = try await browser.pageSource()
                #expect(filtered.contains("<td>native-sign-in</td>"))
                #expect(!filtered.contains("<td>notification</td>"))
                try await screenshots(browser, "4-log")
                await browser.quit()
            } catch {
                await browser.quit()
                throw error
            }
        }
    }

    /// Screenshots of the page at a desktop's width and a phone's, back to the desktop after.
    private func screenshots(_ browser: WebDriverSession, _ name: String) async throws {
        try await browser.screenshots(named: name, suite: Self.suite, desktop: Self.desktop, phone: Self.phone)
    }

    /// What the console's fault table says about `endpoint`.
    private static func faultState(_ endpoint: String, _ source: String) -> String? {
        guard let row = source.range(of: #"<tr id="fault-\#(endpoint)">"#),
            let cell = source.range(of: #"class="fault-state">"#, range: row.upperBound..<source.endIndex),
            let end = source.range(of: "</td>", range: cell.upperBound..<source.endIndex)
        else { return nil }
        return String(source[cell.upperBound..<end.lowerBound])
    }

    /// siwa's own verifier, pointed at the emulator's keys.
    private static func verifier(_ emulatorURL: String, clock: ManualWallClock) throws -> IdentityTokenVerifier {
        let baseURL = try AppleBaseURL(emulatorURL)
        return IdentityTokenVerifier(
            configuration: try AppleSignInConfiguration(
                bundleIDs: [ClientID(ServerHarness.bundleID)],
                appleBaseURL: baseURL
            ),
            keys: AppleKeyCache(
                source: AppleKeysEndpoint(baseURL: baseURL, transport: AsyncHTTPClientTransport()),
                clock: clock
            ),
            clock: clock
        )
    }

    /// The status of an empty `POST /auth/token` (500 while an error fault is on).
    private static func tokenEndpointStatus(_ emulatorURL: String) async throws -> Int {
        let base = try AppleBaseURL(emulatorURL)
        var request = HTTPRequest(method: .post, scheme: base.scheme, authority: base.authority, path: "/auth/token")
        request.headerFields[.contentType] = "application/x-www-form-urlencoded"
        let answer = try await AsyncHTTPClientTransport().send(request, body: [], timeout: .seconds(10))
        return answer.response.status.code
    }
}
