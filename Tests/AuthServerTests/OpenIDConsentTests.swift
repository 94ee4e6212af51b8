import AccountStore
import AuthServer
import Foundation
import HTTPTypes
import Testing

/// A public relying party (a native or single-page app, whose redirect URI any app could claim) gets a code only once
/// the user has allowed it on siwa's consent page (RFC 8252 §8.6), which is remembered per user and client; the form
/// must come from this site, from the browser session the page was made for, for the same client.
@Suite("OpenID consent for public clients")
struct OpenIDConsentTests {
    /// A second public client, to show that a consent and its form are the client's own.
    static let otherApp = RelyingParty(
        id: "rp-other-app",
        secret: nil,
        redirectURI: "com.example.other:/callback",
        logoutURI: "com.example.other:/signed-out"
    )

    /// A second redirect URI of the public app: a consent given for the first says nothing about it.
    static let secondRedirect = "com.example.rp:/second"

    private func run(_ body: @escaping @Sendable (ServerHarness) async throws -> Void) async throws {
        var named = RelyingParty.publicApp.client
        named.name = "Example Notes"
        named.redirectURIs.append(Self.secondRedirect)
        let configuration = RelyingParty.configuration(extra: [Self.otherApp.client])
        var adjusted = configuration
        adjusted.openID.clients = configuration.openID.clients.map { $0.id == named.id ? named : $0 }
        try await ServerHarness.run(configuration: adjusted, web: true, body)
    }

    /// Signs in through the public app and returns its consent page and the browser.
    private func consentPage(
        _ harness: ServerHarness,
        scope: String = "openid email profile",
        pkce: PKCE = PKCE()
    ) async throws -> (page: WebPage, browser: BrowserSession) {
        let (page, browser) = try await harness.openIDSignInPage(
            ServerHarness.authorizePath(.publicApp, scope: scope, pkce: pkce),
            email: "consent@example.com"
        )
        try #require(page.status == .ok, "a consent page: \(page.status) \(page.location ?? "")")
        return (page, browser)
    }

    @Test func aPublicClientIsAllowedOnceAndRemembered() async throws {
        try await run { harness in
            let pkce = PKCE()
            let (page, browser) = try await consentPage(harness, scope: "openid email", pkce: pkce)
            #expect(page.location == nil, "no code before the user allows it")
            #expect(page.body.contains("Allow \u{201C}Example Notes\u{201D} to sign you in?"), "the app's name")
            #expect(page.body.contains("consent@example.com"), "what the e-mail scope gives, with the user's own")
            #expect(!page.body.contains("Your name"), "profile was not asked for")
            #expect(page.body.contains("com.example.rp:/callback"), "where the browser goes next")
            #expect(page.headers[HTTPField.Name("X-Frame-Options")!] == "DENY", "never framed (clickjacking)")
            let policy = try #require(page.headers[.contentSecurityPolicy])
            #expect(policy.contains("form-action 'self' com.example.rp:"), "the redirect after the form is allowed")
            #expect(policy.contains("frame-ancestors 'none'"))

            let allowed = try await harness.decide("allow", on: page, browser: browser)
            #expect(allowed.status == .seeOther)
            let location = try #require(allowed.location)
            #expect(location.hasPrefix(RelyingParty.publicApp.redirectURI + "?"))
            let query = ServerHarness.query(of: location)
            #expect(query["state"] == "state-123" && query["iss"] == harness.serverURL)
            let tokens = try await harness.redeem(try #require(query["code"]), .publicApp, verifier: pkce.verifier)
            #expect(tokens.status == .ok, "\(tokens.json)")
            #expect(tokens.json["scope"] as? String == "openid email")

            // Remembered: the same scopes (or fewer) come straight back.
            let again = try await harness.authorize(
                ServerHarness.authorizePath(.publicApp, scope: "openid", state: "again", pkce: PKCE()),
                browser: browser
            )
            #expect(again["code"] != nil && again["state"] == "again")
            let silent = try await harness.authorize(
                ServerHarness.authorizePath(
                    .publicApp,
                    scope: "openid email",
                    state: "silent",
                    pkce: PKCE(),
                    extra: [("prompt", "none")]
                ),
                browser: browser
            )
            #expect(silent["code"] != nil, "prompt=none succeeds once allowed")

            // More scopes, or prompt=consent, ask again.
            let wider = try await harness.browser(
                .get,
                ServerHarness.authorizePath(.publicApp, pkce: PKCE()),
                cookies: browser.cookies
            )
            #expect(wider.status == .ok && wider.body.contains("Your name"), "profile is new: the page again")
            let forced = try await harness.browser(
                .get,
                ServerHarness.authorizePath(.publicApp, scope: "openid", pkce: PKCE(), extra: [("prompt", "consent")]),
                cookies: browser.cookies
            )
            #expect(forced.status == .ok && forced.body.contains(#"value="allow""#), "prompt=consent asks again")
            #expect(!forced.body.contains(#"name="prompt""#), "the form does not carry prompt back")

            // The consent is the store's, for every instance, and in the audit log.
            let user = try #require(try await harness.store.users(email: "consent@example.com").first)
            let stored = try await harness.store.clientConsent(
                userID: user.id,
                clientID: RelyingParty.publicApp.id,
                redirectURI: RelyingParty.publicApp.redirectURI
            )
            #expect(stored?.scope == "openid email")
            let events = try await harness.store.auditEvents(
                AuditEventFilter(userID: user.id, types: [.clientConsentGranted]),
                limit: 10,
                after: nil
            ).items
            #expect(events.count == 1 && events.first?.details["client"] == RelyingParty.publicApp.id)
        }
    }

    /// Any app can claim a public client's scheme: allowing the client at one of its redirect URIs leaves the others
    /// asking, and prompt=none there is consent_required.
    @Test func aConsentIsForTheRedirectURIThePageNamed() async throws {
        try await run { harness in
            let (page, browser) = try await consentPage(harness, scope: "openid")
            let allowed = try await harness.decide("allow", on: page, browser: browser)
            #expect(allowed.location?.hasPrefix(RelyingParty.publicApp.redirectURI + "?") == true)

            var second = RelyingParty.publicApp
            second.redirectURI = Self.secondRedirect
            let elsewhere = try await harness.browser(
                .get,
                ServerHarness.authorizePath(second, scope: "openid", pkce: PKCE()),
                cookies: browser.cookies
            )
            #expect(elsewhere.status == .ok && elsewhere.body.contains(#"value="allow""#), "asked again")
            #expect(elsewhere.body.contains(Self.secondRedirect), "naming where the answer goes")
            let silent = try await harness.authorize(
                ServerHarness.authorizePath(
                    second,
                    scope: "openid",
                    state: "s",
                    pkce: PKCE(),
                    extra: [("prompt", "none")]
                ),
                browser: browser
            )
            #expect(silent["error"] == "consent_required" && silent["code"] == nil, "\(silent)")
            let first = try await harness.authorize(
                ServerHarness.authorizePath(.publicApp, scope: "openid", state: "f", pkce: PKCE()),
                browser: browser
            )
            #expect(first["code"] != nil, "the first redirect URI stays allowed")

            let user = try #require(try await harness.store.users(email: "consent@example.com").first)
            let events = try await harness.store.auditEvents(
                AuditEventFilter(userID: user.id, types: [.clientConsentGranted]),
                limit: 10,
                after: nil
            ).items
            #expect(events.first?.details["redirect_uri"] == RelyingParty.publicApp.redirectURI)
        }
    }

    @Test func withoutConsentPromptNoneIsConsentRequiredAndDecliningIsAccessDenied() async throws {
        try await run { harness in
            let (page, browser) = try await consentPage(harness)
            let silent = try await harness.authorize(
                ServerHarness.authorizePath(.publicApp, state: "silent", pkce: PKCE(), extra: [("prompt", "none")]),
                browser: browser
            )
            #expect(silent["error"] == "consent_required" && silent["code"] == nil && silent["state"] == "silent")

            let declined = try await harness.decide("deny", on: page, browser: browser)
            #expect(declined.status == .seeOther)
            let query = ServerHarness.query(of: try #require(declined.location))
            #expect(query["error"] == "access_denied" && query["code"] == nil && query["state"] == "state-123")
            let user = try #require(try await harness.store.users(email: "consent@example.com").first)
            #expect(
                try await harness.store.clientConsent(
                    userID: user.id,
                    clientID: RelyingParty.publicApp.id,
                    redirectURI: RelyingParty.publicApp.redirectURI
                ) == nil
            )
            let next = try await harness.browser(
                .get,
                ServerHarness.authorizePath(.publicApp, pkce: PKCE()),
                cookies: browser.cookies
            )
            #expect(next.status == .ok && next.location == nil, "declining is not remembered: asked again")

            let undecided = try await harness.decide("maybe", on: next, browser: browser)
            #expect(undecided.status == .badRequest && undecided.location == nil)
        }
    }

    /// A consent form is worth one decision about exactly what its page showed: re-posted with a wider scope, another
    /// PKCE challenge or another page's nonce it is refused, and the same form posted twice gives one code. (The token
    /// binds the redirect URI too; the public client here registers one, so another is refused before any token.)
    @Test func aConsentFormIsAcceptedOnceForExactlyWhatItShowed() async throws {
        try await run { harness in
            let (page, browser) = try await consentPage(harness, scope: "openid")
            let user = try #require(try await harness.store.users(email: "consent@example.com").first)
            for (replaced, what) in [
                (["scope": "openid email profile"], "a wider scope"),
                (["code_challenge": PKCE().challenge], "another PKCE challenge"),
                (["consent_nonce": "AAAAAAAAAAAAAAAAAAAAAA"], "another page's nonce"),
            ] {
                let answer = try await harness.decide("allow", on: page, browser: browser, replacing: replaced)
                #expect(answer.status == .forbidden || answer.status == .badRequest, "\(what): \(answer.status)")
                #expect(answer.location == nil, "\(what)")
                #expect(
                    try await harness.store.clientConsent(
                        userID: user.id,
                        clientID: RelyingParty.publicApp.id,
                        redirectURI: RelyingParty.publicApp.redirectURI
                    ) == nil,
                    "\(what)"
                )
            }
            let allowed = try await harness.decide("allow", on: page, browser: browser)
            #expect(allowed.status == .seeOther)
            #expect(ServerHarness.query(of: try #require(allowed.location))["code"] != nil)
            let again = try await harness.decide("allow", on: page, browser: browser)
            #expect(again.status == .forbidden, "the same form twice: \(again.status)")
            #expect(again.location == nil, "no second code")
            let consent = try await harness.store.clientConsent(
                userID: user.id,
                clientID: RelyingParty.publicApp.id,
                redirectURI: RelyingParty.publicApp.redirectURI
            )
            #expect(consent?.scope == "openid", "only what the page showed is remembered")
        }
    }

    @Test func aConsentFormFromAnotherSiteSessionOrClientIsRefused() async throws {
        try await run { harness in
            let (page, browser) = try await consentPage(harness)
            let user = try #require(try await harness.store.users(email: "consent@example.com").first)
            func expectRefused(_ answer: WebPage, _ what: Comment) async throws {
                #expect(answer.status == .forbidden, what)
                #expect(answer.location == nil, what)
                #expect(answer.headers[.contentType]?.hasPrefix("text/html") == true, what)
                #expect(
                    try await harness.store.clientConsent(
                        userID: user.id,
                        clientID: RelyingParty.publicApp.id,
                        redirectURI: RelyingParty.publicApp.redirectURI
                    ) == nil,
                    what
                )
            }

            try await expectRefused(
                try await harness.decide("allow", on: page, browser: browser, origin: "https://attacker.example"),
                "a cross-site form (the browser sends the victim's cookies with it)"
            )
            try await expectRefused(
                try await harness.decide("allow", on: page, browser: browser, origin: ""),
                "a form without Origin or Referer"
            )
            try await expectRefused(
                try await harness.decide("allow", on: page, browser: browser, replacing: ["consent_token": ""]),
                "a form without its token"
            )

            // A token of another browser session: the attacker's own consent page, replayed in the victim's browser.
            let (attackersPage, _) = try await harness.openIDSignInPage(
                ServerHarness.authorizePath(.publicApp, pkce: PKCE()),
                email: "attacker@example.com"
            )
            let attackersToken = try #require(attackersPage.hiddenFields().first { $0.0 == "consent_token" }?.1)
            try await expectRefused(
                try await harness.decide(
                    "allow",
                    on: page,
                    browser: browser,
                    replacing: ["consent_token": attackersToken]
                ),
                "another session's token"
            )

            // The token of this session's page for one app, posted for another.
            try await expectRefused(
                try await harness.decide(
                    "allow",
                    on: page,
                    browser: browser,
                    replacing: [
                        "client_id": Self.otherApp.id, "redirect_uri": Self.otherApp.redirectURI,
                    ]
                ),
                "a token made for another client"
            )
            #expect(
                try await harness.store.clientConsent(
                    userID: user.id,
                    clientID: Self.otherApp.id,
                    redirectURI: Self.otherApp.redirectURI
                ) == nil,
                "nor the other client allowed"
            )

            // A confidential client has no consent page to post.
            let confidential = try await harness.decide(
                "allow",
                on: page,
                browser: browser,
                replacing: ["client_id": RelyingParty.a.id, "redirect_uri": RelyingParty.a.redirectURI]
            )
            #expect(confidential.status == .badRequest && confidential.location == nil)

            // The genuine form still works afterwards.
            let allowed = try await harness.decide("allow", on: page, browser: browser)
            #expect(allowed.status == .seeOther && allowed.location.map(ServerHarness.query(of:))?["code"] != nil)
        }
    }

    /// A consent page left open past its access token's 15 minutes: the browser has dropped the expired access cookie
    /// and still holds its refresh cookie, which renews the session as the `GET` does, so Allow answers with a code
    /// instead of sending the user through Apple again. From another site, the refresh cookie renews nothing.
    @Test func aConsentPageLeftOpenPastItsAccessTokenIsAllowedWithTheRefreshCookie() async throws {
        try await run { harness in
            let (page, browser) = try await consentPage(harness)
            let refreshName = RelyingParty.configuration().web.refreshCookieName
            let refreshOnly = BrowserSession(cookies: browser.cookies.filter { $0.key == refreshName })
            try #require(refreshOnly.cookies.count == 1, "the browser's refresh cookie: \(browser.cookies.keys)")

            let crossSite = try await harness.decide(
                "allow",
                on: page,
                browser: refreshOnly,
                origin: "https://attacker.example"
            )
            #expect(crossSite.status == .forbidden, "a cross-site form renews nothing")

            let allowed = try await harness.decide("allow", on: page, browser: refreshOnly)
            #expect(allowed.status == .seeOther)
            let location = try #require(allowed.location)
            #expect(location.hasPrefix(RelyingParty.publicApp.redirectURI + "?"), "\(location)")
            #expect(ServerHarness.query(of: location)["code"] != nil)
            let setCookies = allowed.headers[values: .setCookie].joined(separator: "\n")
            #expect(setCookies.contains("\(refreshName)="), "the renewed session's cookies")
        }
    }

    @Test func aConsentFormWithoutASessionSignsInAgainAndComesBack() async throws {
        try await run { harness in
            let (page, _) = try await consentPage(harness)
            let answer = try await harness.decide("allow", on: page, browser: BrowserSession(cookies: [:]))
            #expect(answer.status == .seeOther)
            let location = try #require(answer.location)
            #expect(location.hasPrefix("/auth/apple/authorize?returnUrl="))
            let returnURL = try #require(ServerHarness.query(of: location)["returnUrl"])
            #expect(returnURL.hasPrefix("/oauth/authorize?") && returnURL.contains("client_id=rp-app"))
            #expect(!returnURL.contains("consent_token") && !returnURL.contains("decision"))
        }
    }
}
