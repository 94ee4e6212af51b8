import AccountStore
import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import SiwaTesting
import Testing

/// The operator console in a real browser (headless Chromium over WebDriver; the console has no script): an admin
/// signs in through the emulator's consent page, finds an account by email, ends one of its sessions, disables,
/// enables and deletes it, and reads each step in the audit log; a user without the role gets 403 on the console and
/// the API. The screenshots in `docs/admin/` are this test's (`.build/test-output/AdminConsoleBrowserTests`), made on
/// the emulator's data. Skipped without `SIWA_TEST_CHROMEDRIVER` (`scripts/with-chromium` sets it).
@Suite(
    "Admin console in a browser",
    .enabled(
        if: ProcessInfo.processInfo.environment["SIWA_TEST_CHROMEDRIVER"] != nil,
        "SIWA_TEST_CHROMEDRIVER is not set: run through scripts/with-chromium (scripts/test does)"
    )
)
struct AdminConsoleBrowserTests {
    static let suite = "AdminConsoleBrowserTests"
    static let phone = (width: 390, height: 1400)
    static let desktop = (width: 1400, height: 1100)

    @Test func anAdminFindsAUserEndsASessionDisablesEnablesAndDeletesThem() async throws {
        try await ServerHarness.run(configuration: WebSignInTests.configuration(), web: true) { harness in
            // The emulator's data: a week of sign-ins (the clock set back a day at a time), then a user with two
            // sessions (two phones), a few others, and refused sign-ins.
            let today = harness.clock.now
            for daysAgo in (1...6).reversed() {
                harness.clock.set(today.addingTimeInterval(-Double(daysAgo) * 86_400))
                for person in 0..<(daysAgo % 3 + 1) {
                    let email = "early\(person)@example.com"
                    #expect(try await harness.signIn(email, givenName: "Early\(person)").status == .ok)
                }
                #expect(
                    try await harness.signIn("day\(daysAgo)@example.com", hideEmail: daysAgo.isMultiple(of: 2)).status
                        == .ok
                )
                if daysAgo.isMultiple(of: 3) {
                    _ = try await harness.call(.post, "/auth/apple/native", json: ["identityToken": "not-a-token"])
                }
            }
            harness.clock.set(today)
            let first = try await harness.signIn("ann.lee@example.com", givenName: "Ann")
            harness.clock.advance(by: 300)  // the second phone, five minutes later
            let second = try await harness.signIn("ann.lee@example.com")
            let keptToken = try #require(second.json["accessToken"] as? String)
            let endedToken = try #require(first.json["accessToken"] as? String)
            let endedSession = try AdminAPITests.sessionID(endedToken)
            let ann = try #require(first.json.user["id"] as? String)
            for (email, name) in [("bo@example.com", "Bo"), ("cy@example.com", "Cy")] {
                #expect(try await harness.signIn(email, givenName: name).status == .ok)
            }
            _ = try await harness.call(.post, "/auth/apple/native", json: ["identityToken": "not-a-token"])

            let browser = try await WebDriverSession.startForTest(suite: Self.suite, log: "chromedriver-admin.log")
            do {
                try await browser.setWindowSize(width: Self.desktop.width, height: Self.desktop.height)

                // No session: the console sends the browser through Sign in with Apple and back.
                try await browser.navigate(to: harness.serverURL + "/admin")
                try await browser.wait(for: "the consent page") { url, _ in url.hasPrefix(harness.emulatorURL) }
                try await browser.type("admin@example.com", into: "#email")
                try await browser.type("Ada", into: "#given_name")
                try await browser.click(#"button[value="continue"]"#)
                try await browser.wait(for: "the 403 page") { url, source in
                    url == harness.serverURL + "/admin" && source.contains("does not hold the admin role")
                }
                let adminID = try #require(try await harness.store.users(email: "admin@example.com").first?.id)

                // An operator grants the role (`siwa users grant-admin`); the same browser session now sees the console.
                #expect(try await harness.store.grantAdmin(AdminSubject(adminID), by: .operator, now: Date()))
                try await browser.navigate(to: harness.serverURL + "/admin")
                try await browser.wait(for: "the overview") { _, source in
                    source.contains("Sign-ins per day by channel")
                }

                // Find the user by an email prefix, open them.
                try await browser.navigate(to: harness.serverURL + "/admin/users")
                try await browser.type("ANN.L", into: "#q")
                try await browser.click("form.search button")
                try await browser.wait(for: "the search result") { url, source in
                    url.contains("q=ANN.L") && source.contains(#"href="/admin/users/\#(ann)""#)
                }
                #expect(!(try await browser.pageSource()).contains("bo@example.com"), "only the accounts that match")
                try await browser.click(#"a[href="/admin/users/\#(ann)"]"#)
                try await browser.wait(for: "the user page") { _, source in
                    source.contains("ann.lee@example.com") && source.contains(endedSession)
                }
                try await screenshots(browser, "user")

                harness.clock.advance(by: 20)
                // End one session: its access token is refused at once, the other session still works.
                let sessionForm = #"form:has(input[name="session"][value="\#(endedSession)"])"#
                try await browser.click(sessionForm + #" input[name="confirm"]"#)
                try await browser.click(sessionForm + " button")
                try await browser.wait(for: "the session ended") { _, source in
                    source.contains("Done: session ended.")
                }
                #expect(try await harness.call(.get, "/api/me", bearer: endedToken).status == .unauthorized)
                #expect(try await harness.call(.get, "/api/me", bearer: keptToken).status == .ok)

                harness.clock.advance(by: 20)
                // Disable: the next sign-in is refused with a clear error; enable lets the account back in.
                try await act(browser, "disable", done: "Done: account disabled.")
                let refused = try await harness.signIn("ann.lee@example.com")
                #expect(refused.status == .forbidden)
                #expect(refused.json["error"] as? String == "account_disabled")
                #expect(try await harness.call(.get, "/api/me", bearer: keptToken).status == .unauthorized)
                harness.clock.advance(by: 20)
                try await act(browser, "enable", done: "Done: account enabled.")
                #expect(try await harness.signIn("ann.lee@example.com").status == .ok)

                harness.clock.advance(by: 20)
                // Each step is in the account's audit log.
                try await browser.navigate(to: harness.serverURL + "/admin/audit?user=\(ann)")
                try await browser.wait(for: "the audit log") { _, source in source.contains("Account enabled") }
                let audit = try await browser.pageSource()
                for words in ["Session ended", "Account disabled", "Account enabled", "Sign-in refused", "Signed in"] {
                    #expect(audit.contains("<td>\(words)</td>"), "\(words) in the audit log")
                }
                #expect(audit.contains("admin <a href=\"/admin/users/\(adminID)\">"), "the admin, by name, linked")
                #expect(audit.contains("reason <code>disabled</code>"))
                try await screenshots(browser, "audit")

                harness.clock.advance(by: 20)
                // Delete: Apple's token is revoked (the emulator records it) and the deletion is audited.
                try await browser.navigate(to: harness.serverURL + "/admin/users/\(ann)")
                try await browser.wait(for: "the user page") { _, source in source.contains("Delete account") }
                try await browser.click(#"form[action$="/delete"] input[name="confirm"]"#)
                try await browser.click(#"form[action$="/delete"] button"#)
                try await browser.wait(for: "the deletion") { url, _ in url.contains("/admin/users?deleted=\(ann)") }
                let revocations = try await harness.emulatorLog().filter { $0["endpoint"] as? String == "revoke" }
                #expect(!revocations.isEmpty, "the emulator recorded Apple's revocation")
                try await browser.navigate(to: harness.serverURL + "/admin/audit?user=\(ann)")
                try await browser.wait(for: "the deletion in the audit log") { _, source in
                    source.contains("<td>Account deleted</td>")
                        && source.contains("<td>Apple token revoked (confirmed)</td>")
                }

                // The overview counts what happened (every account, the refused sign-in).
                try await browser.navigate(to: harness.serverURL + "/admin")
                try await browser.wait(for: "the overview") { _, source in
                    source.contains("Refused sign-ins per day by reason")
                }
                try await screenshots(browser, "overview")
                await browser.quit()
            } catch {
                await browser.quit()
                throw error
            }

            // A signed-in user without the role: 403 on the console and on the API.
            let bo = try await harness.signIn("bo@example.com")
            let boToken = try #require(bo.json["accessToken"] as? String)
            let api = try await harness.call(.get, "/admin/api/users", bearer: boToken)
            #expect(api.status == .forbidden)
            #expect(api.json["error"] as? String == "admin_required")
            let page = try await harness.server.execute(
                uri: "/admin",
                method: .get,
                headers: [.authorization: "Bearer \(boToken)"],
                body: nil
            )
            #expect(page.status == .forbidden)
        }
    }

    /// Ticks the confirmation of the account action `action` on the user page and submits it.
    private func act(_ browser: WebDriverSession, _ action: String, done: String) async throws {
        try await browser.click(#"form[action$="/\#(action)"] input[name="confirm"]"#)
        try await browser.click(#"form[action$="/\#(action)"] button"#)
        try await browser.wait(for: done) { _, source in source.contains(done) }
    }

    /// Screenshots of the page at a desktop's width and a phone's, back to the desktop after.
    private func screenshots(_ browser: WebDriverSession, _ name: String) async throws {
        try await browser.screenshots(named: name, suite: Self.suite, desktop: Self.desktop, phone: Self.phone)
    }
}
