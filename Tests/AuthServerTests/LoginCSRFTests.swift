import AccountStore
import AuthServer
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

/// Login CSRF: an attacker starts a web flow, consents with their own Apple ID, keeps Apple's auto-submitting form
/// and has a victim's browser post it. The victim must never end up signed in as the attacker.
@Suite("Server: web flows are bound to the browser that started them")
struct LoginCSRFTests {
    /// Every contract on, no rate limit.
    static func configuration() -> AuthServerConfiguration { CompatibilityTests.configuration() }

    /// (start path, callback path) of siwa's flow and of each contract's.
    static let flows = [
        ("/auth/apple/authorize?returnUrl=%2Flogin", "/auth/apple/callback"),
        ("/auth/apple?ReturnUrl=%2Flogin", "/auth/apple"),
        ("/web/auth/siwa/authorize", "/web/auth/siwa/callback"),
    ]

    @Test(arguments: flows)
    func anAttackersConsentedFormIsRefusedInTheVictimsBrowser(start: String, callback: String) async throws {
        try await ServerHarness.run(configuration: Self.configuration(), web: true) { harness in
            // The attacker's browser.
            let started = try await harness.browser(.get, start)
            #expect(started.status == .found, "\(started.body)")
            let binding = try #require(
                started.setCookies["siwa_flow"],
                "the authorize answer binds the flow to the browser"
            )
            #expect(binding.contains("HttpOnly"))
            #expect(binding.contains("SameSite=None"), "Apple's cross-site form_post must carry it")
            #expect(binding.contains("Secure"))
            let post = try await harness.consent(at: try #require(started.location), email: "attacker@example.com")

            // The victim's browser: another profile, which never started this flow.
            let attackersCookies = harness.browserCookies.all
            harness.browserCookies.clear()
            let victim = try await harness.browser(
                .post,
                callback,
                form: post.fields,
                headers: [.origin: harness.emulatorURL]
            )
            #expect(victim.status == .forbidden, "\(victim.body)")
            #expect(victim.body.contains("flow_not_started_here"))
            #expect(victim.headers[.contentType]?.hasPrefix("text/html") == true, "a browser route answers a page")
            #expect(victim.cookie("siwa_session") == nil && victim.cookie("ss-tok") == nil, "no session is set")
            #expect(try await harness.store.users(limit: 10, after: nil).isEmpty, "nobody was signed in")

            // The state is used up: not even the attacker's own browser can finish it now.
            let again = try await harness.browser(
                .post,
                callback,
                form: post.fields,
                cookies: attackersCookies,
                headers: [.origin: harness.emulatorURL]
            )
            #expect(again.status == .badRequest)
            #expect(again.body.contains("state_already_used"))
        }
    }

    @Test func theBrowserThatStartedTheFlowFinishesIt() async throws {
        try await ServerHarness.run(configuration: Self.configuration(), web: true) { harness in
            // Two tabs start a sign-in each; both finish, in either order.
            let first = try await harness.startWebSignIn()
            let second = try await harness.startWebSignIn()
            let firstPost = try await harness.consent(at: try #require(first.location), email: "tabs@example.com")
            let secondPost = try await harness.consent(at: try #require(second.location), email: "tabs@example.com")
            let secondDone = try await harness.postCallback(secondPost)
            #expect(secondDone.status == .seeOther, "\(secondDone.body)")
            let firstDone = try await harness.postCallback(firstPost)
            #expect(firstDone.status == .seeOther, "\(firstDone.body)")
            #expect(firstDone.cookie("siwa_session") != nil)
            #expect(firstDone.setCookies["siwa_flow"]?.contains("Max-Age=0") == true, "the last flow's cookie goes")
        }
    }
}
