import AccountStore
import AppleSignIn
import AuthServer
import Crypto
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

/// The web flow over real HTTP: authorize redirect, the emulator's consent and `form_post`, the callback, cookies,
/// return URLs (web and Android), CSRF, logout, the login page and the domain-association file.
@Suite("Web sign-in")
struct WebSignInTests {
    static let androidPackage = "com.example.android"

    static func configuration(
        domainAssociation: String? = nil,
        allowedReturnOrigins: [String] = ["https://app.example.com"]
    ) -> AuthServerConfiguration {
        AuthServerConfiguration(
            authRateLimit: nil,
            storeRefreshInterval: .milliseconds(200),
            web: WebSignInConfiguration(
                allowedReturnOrigins: allowedReturnOrigins,
                allowedAndroidPackages: [androidPackage],
                domainAssociation: domainAssociation
            )
        )
    }

    private func run(
        store: any AccountStore = InMemoryAccountStore(),
        configuration: AuthServerConfiguration = WebSignInTests.configuration(),
        servicesIDConfigured: Bool = true,
        _ body: @escaping @Sendable (ServerHarness) async throws -> Void
    ) async throws {
        try await ServerHarness.run(
            store: store,
            configuration: configuration,
            web: true,
            servicesIDConfigured: servicesIDConfigured,
            body
        )
    }

    private func userCount(_ harness: ServerHarness) async throws -> Int {
        try await harness.store.users(limit: 1000, after: nil).count
    }

    // MARK: Authorize

    @Test func authorizeRedirectsToAppleWithEveryParameterAndKeepsTheStateHashed() async throws {
        try await run { harness in
            let start = try await harness.startWebSignIn(returnURL: "/account?tab=2")
            #expect(start.status == .found)
            #expect(start.headers[.cacheControl] == "no-store")
            let location = try #require(start.location)
            #expect(location.hasPrefix(harness.emulatorURL + "/auth/authorize?"))
            #expect(location.contains("response_type=code%20id_token"))
            #expect(location.contains("scope=name%20email"))
            let query = ServerHarness.query(of: location)
            #expect(query["client_id"] == ServerHarness.servicesID)
            #expect(query["redirect_uri"] == harness.serverURL + "/auth/apple/callback")
            #expect(query["response_type"] == "code id_token")
            #expect(query["response_mode"] == "form_post")
            #expect(query["scope"] == "name email")
            let state = try #require(query["state"])
            let nonce = try #require(query["nonce"])
            #expect(state.count >= 43)
            #expect(nonce.count >= 43)
            #expect(state != nonce)

            // A second start gets fresh values.
            let again = ServerHarness.query(of: try #require(try await harness.startWebSignIn().location))
            #expect(again["state"] != state)
            #expect(again["nonce"] != nonce)

            // Kept by SHA-256 only: the raw state is not a key.
            let now = harness.clock.now
            #expect(try await harness.store.consumeWebFlowState(stateHash: Array(state.utf8), now: now) == .notFound)
            let outcome = try await harness.store.consumeWebFlowState(
                stateHash: Array(SHA256.hash(data: Array(state.utf8))),
                now: now
            )
            guard case .consumed(let flow) = outcome else {
                Issue.record("expected the saved flow, got \(outcome)")
                return
            }
            #expect(flow.nonce == nonce)
            #expect(flow.returnURL == "/account?tab=2")
            #expect(flow.expiresAt.timeIntervalSince(flow.createdAt) == 600)
        }
    }

    @Test(arguments: [
        "//evil.example", "https://evil.example", "javascript:alert(1)", "%2F%2Fevil.example", "/%2F%2Fevil.example",
        "/%252F%252Fevil.example", "/\\evil.example", "https://app.example.com@evil.example",
        "https://app.example.com.evil.example", "android:com.evil.app", "android:not a package", "",
    ])
    func badReturnURLsAreRefusedWith400(_ returnURL: String) async throws {
        try await run { harness in
            let start = try await harness.startWebSignIn(returnURL: returnURL)
            #expect(start.status == .badRequest)
            #expect(start.location == nil)
            // A browser route: the refusal is a page that names the error, not raw JSON.
            #expect(start.headers[.contentType] == "text/html; charset=utf-8")
            #expect(start.body.contains("<code>invalid_return_url</code>"))
        }
    }

    @Test func theRootIsAPageLinkingTheLoginPageAndTheMachineEndpoints() async throws {
        try await run { harness in
            let home = try await harness.browser(.get, "/")
            #expect(home.status == .ok)
            #expect(home.headers[.contentType] == "text/html; charset=utf-8")
            for link in ["/login", "/.well-known/jwks.json", "/healthz", "/readyz", "/admin"] {
                #expect(home.body.contains(#"href="\#(link)""#), "no link to \(link)")
            }
            #expect(!home.body.contains("<script"))
            #expect(home.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)
        }
    }

    @Test func withoutAServicesIDWebSignInIsNotConfigured() async throws {
        try await run(servicesIDConfigured: false) { harness in
            let start = try await harness.startWebSignIn()
            #expect(start.status == .serviceUnavailable)
            #expect(start.body.contains("<code>web_signin_disabled</code>"))
            let callback = try await harness.browser(.post, "/auth/apple/callback", form: [("state", "x")])
            #expect(callback.status == .serviceUnavailable)
            let login = try await harness.browser(.get, "/login")
            #expect(login.status == .ok)
            #expect(login.body.contains("Web sign-in is not configured"))
            #expect(!login.body.contains(#"class="apple-button"#))
        }
    }

    // MARK: Callback

    @Test func fullFlowSignsInWithTheFirstAuthorizationsNameAndSetsTheSessionCookies() async throws {
        try await run { harness in
            let callback = try await harness.webSignIn(
                email: "ada@example.com",
                givenName: "Ada",
                returnURL: "/account"
            )
            #expect(callback.status == .seeOther)
            #expect(callback.location == "/account")
            for name in ["siwa_session", "siwa_refresh"] {
                let header = try #require(callback.setCookies[name])
                #expect(header.contains("HttpOnly"))
                #expect(header.contains("SameSite=Lax"))
                #expect(header.contains("Path=/"))
                #expect(header.contains("Max-Age=2592000"))
                #expect(!header.contains("Secure"))  // the public URL is http
            }
            let session = try #require(callback.cookie("siwa_session"))
            let me = try await harness.browser(.get, "/api/me", cookies: ["siwa_session": session])
            #expect(me.status == .ok)
            #expect(me.body.contains(#""givenName":"Ada""#))
            #expect(me.body.contains(#""familyName":"Appleseed""#))
            #expect(me.body.contains(#""email":"ada@example.com""#))
            // The code was exchanged with the same redirect_uri.
            let exchanges = try await harness.emulatorLog().filter {
                $0["endpoint"] as? String == "token" && $0["outcome"] as? String == "200"
            }
            #expect(exchanges.count == 1)
            let user = try #require(try await harness.store.users(limit: 10, after: nil).first)
            #expect(try await harness.store.appleToken(userID: user.id)?.clientID == ClientID(ServerHarness.servicesID))

            // The second authorization carries no `user`; the name from the first stays.
            let start = try await harness.startWebSignIn()
            let post = try await harness.consent(
                at: try #require(start.location),
                email: "ada@example.com",
                givenName: "Other"
            )
            #expect(post["user"] == nil)
            let second = try await harness.postCallback(post)
            #expect(second.status == .seeOther)
            #expect(second.location == "/login")
            let again = try await harness.browser(
                .get,
                "/api/me",
                cookies: ["siwa_session": try #require(second.cookie("siwa_session"))]
            )
            #expect(again.body.contains(#""givenName":"Ada""#))
            #expect(try await userCount(harness) == 1)
        }
    }

    @Test func anAllowListedOriginIsAReturnURL() async throws {
        try await run { harness in
            let callback = try await harness.webSignIn(
                email: "origin@example.com",
                returnURL: "https://app.example.com/welcome"
            )
            #expect(callback.status == .seeOther)
            #expect(callback.location == "https://app.example.com/welcome")
        }
    }

    @Test func aReplayedStateIsRefusedAndChangesNothing() async throws {
        try await run { harness in
            let start = try await harness.startWebSignIn()
            let post = try await harness.consent(at: try #require(start.location), email: "replay@example.com")
            #expect(try await harness.postCallback(post).status == .seeOther)
            let replay = try await harness.postCallback(post)
            expectErrorPage(replay, status: .badRequest, code: "state_already_used")
            #expect(replay.setCookies.isEmpty)
            #expect(try await userCount(harness) == 1)
        }
    }

    @Test func anExpiredStateIsRefused() async throws {
        try await run { harness in
            let start = try await harness.startWebSignIn()
            let post = try await harness.consent(at: try #require(start.location), email: "late@example.com")
            harness.clock.advance(by: 601)
            let callback = try await harness.postCallback(post)
            expectErrorPage(callback, status: .badRequest, code: "state_expired")
            #expect(try await userCount(harness) == 0)
        }
    }

    @Test func anUnknownOrMissingStateIsRefused() async throws {
        try await run { harness in
            let start = try await harness.startWebSignIn()
            let post = try await harness.consent(at: try #require(start.location), email: "unknown@example.com")
            let unknown = try await harness.postCallback(post.replacing("state", with: WebAuthorization.randomToken()))
            expectErrorPage(unknown, status: .badRequest, code: "state_not_found")
            let missing = try await harness.postCallback(post.replacing("state", with: nil))
            expectErrorPage(missing, status: .badRequest, code: "invalid_callback")
            let noToken = try await harness.postCallback(post.replacing("id_token", with: nil))
            expectErrorPage(noToken, status: .badRequest, code: "invalid_callback")
            #expect(try await userCount(harness) == 0)
        }
    }

    @Test func aStateFromAnotherFlowFailsTheNonceCheck() async throws {
        try await run { harness in
            let first = try await harness.startWebSignIn()
            let post = try await harness.consent(at: try #require(first.location), email: "victim@example.com")
            let other = ServerHarness.query(of: try #require(try await harness.startWebSignIn().location))
            let callback = try await harness.postCallback(post.replacing("state", with: other["state"]))
            expectErrorPage(callback, status: .badRequest, code: "identity_token_nonce_mismatch")
            #expect(callback.setCookies.keys.allSatisfy { $0 == "siwa_flow" }, "no session cookie")
            #expect(try await userCount(harness) == 0)
        }
    }

    @Test func anIdentityTokenForTheBundleIDIsRefused() async throws {
        try await run { harness in
            let start = try await harness.startWebSignIn()
            let location = try #require(start.location)
            let nonce = try #require(ServerHarness.query(of: location)["nonce"])
            let post = try await harness.consent(at: location, email: "bundle@example.com")
            let native = try await harness.appleCredential("bundle@example.com", nonce: nonce)
            let token = try #require(native.string("identityToken"))
            let callback = try await harness.postCallback(post.replacing("id_token", with: token))
            expectErrorPage(callback, status: .badRequest, code: "identity_token_audience_mismatch")
            #expect(try await userCount(harness) == 0)
        }
    }

    @Test func aForgedIdentityTokenIsRefused() async throws {
        try await run { harness in
            let start = try await harness.startWebSignIn()
            let post = try await harness.consent(at: try #require(start.location), email: "forged@example.com")
            let token = try #require(post["id_token"])
            var parts = token.split(separator: ".").map(String.init)
            let other = try await harness.appleCredential("someone@example.com", clientID: ServerHarness.servicesID)
            parts[2] = String(try #require(other.string("identityToken")).split(separator: ".")[2])
            let callback = try await harness.postCallback(
                post.replacing("id_token", with: parts.joined(separator: "."))
            )
            expectErrorPage(callback, status: .badRequest, code: "identity_token_bad_signature")
            #expect(!callback.body.contains(token))
        }
    }

    @Test func appleUnreachableShows503AndChangesNothing() async throws {
        try await run { harness in
            let start = try await harness.startWebSignIn()
            let post = try await harness.consent(at: try #require(start.location), email: "down@example.com")
            try await harness.emulator("/emulator/faults", ["endpoint": "keys", "mode": "error"])
            let callback = try await harness.postCallback(post)
            expectErrorPage(callback, status: .serviceUnavailable, code: "apple_unavailable")
            #expect(callback.body.contains("try again"))
            #expect(try await userCount(harness) == 0)
        }
    }

    @Test func cancellingReturnsToTheLoginPageWithAMessage() async throws {
        try await run { harness in
            let start = try await harness.startWebSignIn()
            let post = try await harness.consent(
                at: try #require(start.location),
                email: "cancel@example.com",
                action: "cancel"
            )
            #expect(post["error"] == "user_cancelled_authorize")
            let callback = try await harness.postCallback(post)
            #expect(callback.status == .seeOther)
            #expect(callback.location == "/login?cancelled=1")
            let login = try await harness.browser(.get, "/login?cancelled=1")
            #expect(login.body.contains("Sign-in was cancelled"))
            #expect(login.body.contains(#"class="apple-button black""#))
        }
    }

    @Test func anAndroidReturnURLBecomesTheIntentWithTheCallbacksParameters() async throws {
        try await run { harness in
            let start = try await harness.startWebSignIn(returnURL: "android:\(Self.androidPackage)")
            #expect(start.status == .found)
            let post = try await harness.consent(at: try #require(start.location), email: "droid@example.com")
            let callback = try await harness.postCallback(post)
            #expect(callback.status == .seeOther)
            let location = try #require(callback.location)
            #expect(location.hasPrefix("intent://callback?"))
            #expect(location.hasSuffix("#Intent;package=\(Self.androidPackage);scheme=signinwithapple;end"))
            let query = String(location.dropFirst("intent://callback?".count).prefix { $0 != "#" })
            var fields: [String: String] = [:]
            for pair in query.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                fields[parts[0]] = parts[1].removingPercentEncoding
            }
            #expect(fields["code"] == post["code"])
            #expect(fields["id_token"] == post["id_token"])
            #expect(fields["state"] == post["state"])
            #expect(fields["user"] == post["user"])
            #expect(callback.setCookies.keys.allSatisfy { $0 == "siwa_flow" }, "no session cookie")

            // The app finishes with the native route; the Services ID code is exchanged with the callback URL.
            let signedIn = try await harness.call(
                .post,
                "/auth/apple/native",
                json: ["identityToken": post["id_token"] ?? "", "authorizationCode": post["code"] ?? ""]
            )
            #expect(signedIn.status == .ok)
            let user = try #require(try await harness.store.users(limit: 10, after: nil).first)
            #expect(try await harness.store.appleToken(userID: user.id) != nil)
        }
    }

    @Test func anAndroidCancelReachesTheAppAndAnUnlistedPackageIsRefused() async throws {
        try await run { harness in
            let start = try await harness.startWebSignIn(returnURL: "android:\(Self.androidPackage)")
            let post = try await harness.consent(
                at: try #require(start.location),
                email: "droid@example.com",
                action: "cancel"
            )
            let callback = try await harness.postCallback(post)
            #expect(callback.status == .seeOther)
            let state = try #require(post["state"])
            #expect(
                callback.location
                    == "intent://callback?error=user_cancelled_authorize&state=\(state)"
                    + "#Intent;package=\(Self.androidPackage);scheme=signinwithapple;end"
            )
            let unlisted = try await harness.startWebSignIn(returnURL: "android:com.example.other")
            #expect(unlisted.status == .badRequest)
            #expect(unlisted.body.contains("not allowed"))
        }
    }

    // MARK: Cookies, CSRF, logout

    @Test func theSessionCookieAuthenticatesApiMe() async throws {
        try await run { harness in
            #expect(try await harness.browser(.get, "/api/me").status == .unauthorized)
            let bad = try await harness.browser(.get, "/api/me", cookies: ["siwa_session": "not.a.token"])
            #expect(bad.status == .unauthorized)
            let callback = try await harness.webSignIn(email: "cookie@example.com")
            let me = try await harness.browser(
                .get,
                "/api/me",
                cookies: ["siwa_session": try #require(callback.cookie("siwa_session"))]
            )
            #expect(me.status == .ok)
            #expect(me.body.contains(#""email":"cookie@example.com""#))
        }
    }

    @Test func cookieRequestsThatChangeStateNeedThisSitesOrigin() async throws {
        try await run { harness in
            let callback = try await harness.webSignIn(email: "csrf@example.com")
            let cookies = [
                "siwa_session": try #require(callback.cookie("siwa_session")),
                "siwa_refresh": try #require(callback.cookie("siwa_refresh")),
            ]
            for headers: HTTPFields in [
                [:], [.origin: "https://evil.example"], [.origin: "null"],
                [.referer: "https://evil.example/\(harness.serverURL)"], [.origin: harness.serverURL + ".evil.example"],
            ] {
                for path in ["/auth/logout", "/auth/refresh"] {
                    let refused = try await harness.browser(.post, path, cookies: cookies, headers: headers)
                    #expect(refused.status == .forbidden, "\(path) \(headers)")
                    #expect(refused.body.contains(#""error":"csrf_check_failed""#))
                }
            }
            // Still signed in: nothing was changed.
            #expect(try await harness.browser(.get, "/api/me", cookies: cookies).status == .ok)

            // This site's Origin (or Referer) passes: refresh by cookie rotates both cookies and answers the JSON.
            let refreshed = try await harness.browser(
                .post,
                "/auth/refresh",
                cookies: cookies,
                headers: [.referer: harness.serverURL + "/login"]
            )
            #expect(refreshed.status == .ok)
            #expect(refreshed.body.contains(#""accessToken""#))
            let newRefresh = try #require(refreshed.cookie("siwa_refresh"))
            #expect(newRefresh != cookies["siwa_refresh"])
            #expect(refreshed.body.contains(newRefresh))
            // An allow-listed origin passes too; a bearer request needs no Origin.
            let viaApp = try await harness.browser(
                .post,
                "/auth/refresh",
                cookies: ["siwa_refresh": newRefresh],
                headers: [.origin: "https://app.example.com"]
            )
            #expect(viaApp.status == .ok)
            let bearer = try await harness.browser(
                .post,
                "/auth/logout",
                headers: [.authorization: "Bearer \(try #require(viaApp.cookie("siwa_session")))"]
            )
            #expect(bearer.status == .noContent)
        }
    }

    @Test func signingOutByCookieEndsTheSessionAndClearsTheCookies() async throws {
        try await run { harness in
            let callback = try await harness.webSignIn(email: "logout@example.com")
            let cookies = [
                "siwa_session": try #require(callback.cookie("siwa_session")),
                "siwa_refresh": try #require(callback.cookie("siwa_refresh")),
            ]
            // The login page's Sign out form.
            let out = try await harness.browser(
                .post,
                "/auth/logout",
                form: [],
                cookies: cookies,
                headers: [.origin: harness.serverURL]
            )
            #expect(out.status == .seeOther)
            #expect(out.location == "/login?signedout=1")
            for name in ["siwa_session", "siwa_refresh"] {
                #expect(out.setCookies[name]?.contains("Max-Age=0") == true)
            }
            let me = try await harness.browser(.get, "/api/me", cookies: cookies)
            #expect(me.status == .unauthorized)
            #expect(me.body.contains("session_revoked"))
            let refresh = try await harness.call(
                .post,
                "/auth/refresh",
                json: ["refreshToken": cookies["siwa_refresh"]!]
            )
            #expect(refresh.status == .unauthorized)
            let login = try await harness.browser(.get, "/login?signedout=1", cookies: cookies)
            #expect(login.body.contains("You have signed out"))
            #expect(login.body.contains(#"class="apple-button black""#))

            // A script's logout (empty body) answers 204.
            let second = try await harness.webSignIn(email: "logout@example.com")
            let noContent = try await harness.browser(
                .post,
                "/auth/logout",
                cookies: ["siwa_session": try #require(second.cookie("siwa_session"))],
                headers: [.origin: harness.serverURL]
            )
            #expect(noContent.status == .noContent)
            #expect(noContent.setCookies["siwa_session"]?.contains("Max-Age=0") == true)
        }
    }

    @Test func theLoginPageRefreshesAnExpiredAccessCookie() async throws {
        try await run { harness in
            let callback = try await harness.webSignIn(email: "stale@example.com", givenName: "Stale")
            let refresh = try #require(callback.cookie("siwa_refresh"))
            harness.clock.advance(by: 3600)  // the access token (15 minutes) has expired
            let stale = ["siwa_session": try #require(callback.cookie("siwa_session")), "siwa_refresh": refresh]
            #expect(try await harness.browser(.get, "/api/me", cookies: stale).status == .unauthorized)
            let login = try await harness.browser(.get, "/login", cookies: stale)
            #expect(login.status == .ok)
            #expect(login.body.contains("Hello, Stale Appleseed"))
            let newSession = try #require(login.cookie("siwa_session"))
            #expect(try #require(login.cookie("siwa_refresh")) != refresh)
            #expect(try await harness.browser(.get, "/api/me", cookies: ["siwa_session": newSession]).status == .ok)

            // The old refresh cookie is now used: presenting it again after the grace window ends the session and
            // clears the cookies.
            harness.clock.advance(by: 10)
            let reused = try await harness.browser(.get, "/login", cookies: ["siwa_refresh": refresh])
            #expect(reused.body.contains(#"class="apple-button black""#))
            #expect(reused.setCookies["siwa_refresh"]?.contains("Max-Age=0") == true)
        }
    }

    // MARK: Pages

    @Test func theDomainAssociationFileIsServedWhenConfigured() async throws {
        try await run(configuration: Self.configuration(domainAssociation: "apple-association-text\n")) { harness in
            let file = try await harness.browser(.get, "/.well-known/apple-developer-domain-association.txt")
            #expect(file.status == .ok)
            #expect(file.body == "apple-association-text\n")
            #expect(file.headers[.contentType]?.hasPrefix("text/plain") == true)
        }
        try await run { harness in
            let file = try await harness.browser(.get, "/.well-known/apple-developer-domain-association.txt")
            #expect(file.status == .notFound)
            #expect(file.body.contains(#""error":"not_found""#))
        }
    }

    @Test func theLoginPageDrawsTheButtonInEachStyleWithoutScript() async throws {
        var configuration = Self.configuration()
        // The demo's switch between Apple's styles.
        configuration.branding.showsButtonStyles = true
        try await run(configuration: configuration) { harness in
            let page = try await harness.browser(.get, "/login")
            #expect(page.status == .ok)
            #expect(page.headers[.contentType] == "text/html; charset=utf-8")
            let csp = try #require(page.headers[.contentSecurityPolicy])
            #expect(csp.contains("default-src 'none'"))
            #expect(csp.contains("style-src 'sha256-"))
            #expect(!csp.contains("unsafe-inline"))
            #expect(!csp.contains("script-src"))
            #expect(page.body.contains(#"<html lang="en">"#))
            #expect(page.body.contains(#"<meta name="viewport""#))
            #expect(!page.body.contains("<script"))
            #expect(!page.body.contains("http://") && !page.body.contains("https://"))  // no external asset
            #expect(page.body.contains(#"class="apple-button black" href="/auth/apple/authorize?returnUrl=%2Flogin""#))
            #expect(page.body.contains(#"<svg viewBox="0 0 24 24" aria-hidden="true""#))
            #expect(page.body.contains("Sign in with Apple"))
            #expect(page.body.contains(":focus-visible"))
            let white = try await harness.browser(.get, "/login?style=white")
            #expect(white.body.contains(#"class="apple-button white""#))
            #expect(white.body.contains(#"class="button-stage dark""#))
            let outline = try await harness.browser(.get, "/login?style=white-outline")
            #expect(outline.body.contains(#"class="apple-button white-outline""#))
            let unknown = try await harness.browser(.get, "/login?style=%3Cb%3E")
            #expect(unknown.body.contains(#"class="apple-button black""#))

            // The stylesheet's hash is the one the policy names.
            let style = try #require(page.body.firstMatch(of: #/<style>(.*?)</style>/#.dotMatchesNewlines()))
            let hash = Data(SHA256.hash(data: Array(String(style.output.1).utf8))).base64EncodedString()
            #expect(csp.contains("'sha256-\(hash)'"))
        }
    }

    @Test func theSignedInPageShowsNameEmailRelayBadgeAndSignOut() async throws {
        try await run { harness in
            let callback = try await harness.webSignIn(email: "hidden@example.com", givenName: "Hiro", hideEmail: true)
            let page = try await harness.browser(
                .get,
                "/login",
                cookies: ["siwa_session": try #require(callback.cookie("siwa_session"))]
            )
            #expect(page.body.contains("Hello, Hiro Appleseed"))
            #expect(page.body.contains("@privaterelay.appleid.com"))
            #expect(page.body.contains(#"<span class="badge">Relay address</span>"#))
            #expect(page.body.contains(#"<form method="post" action="/auth/logout">"#))
            #expect(page.body.contains(#"<button type="submit" class="secondary">Sign out</button>"#))
            #expect(!page.body.contains(#"class="apple-button"#))

            let shared = try await harness.webSignIn(email: "shared@example.com", givenName: "Sam")
            let sharedPage = try await harness.browser(
                .get,
                "/login",
                cookies: ["siwa_session": try #require(shared.cookie("siwa_session"))]
            )
            #expect(sharedPage.body.contains("shared@example.com"))
            #expect(!sharedPage.body.contains("Relay address"))
        }
    }

    @Test func aHostileNameIsEscaped() async throws {
        try await run { harness in
            let callback = try await harness.webSignIn(
                email: "hostile@example.com",
                givenName: #"<script>alert("x")</script>&'"#
            )
            let page = try await harness.browser(
                .get,
                "/login",
                cookies: ["siwa_session": try #require(callback.cookie("siwa_session"))]
            )
            #expect(!page.body.contains("<script>"))
            #expect(page.body.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"))
        }
    }

    @Test func errorPagesNameTheCodeAndShowNoInternals() async throws {
        try await run { harness in
            let page = try await harness.browser(.post, "/auth/apple/callback", form: [("state", "s"), ("code", "c")])
            expectErrorPage(page, status: .badRequest, code: "invalid_callback")
            #expect(page.body.contains("id_token"))
            let garbage = try await harness.browser(.post, "/auth/apple/callback", body: "%zz=1")
            expectErrorPage(garbage, status: .badRequest, code: "invalid_callback")
            let appleError = try await harness.browser(.post, "/auth/apple/callback", form: [("error", "<b>bad</b>")])
            expectErrorPage(appleError, status: .badRequest, code: "apple_error")
            #expect(appleError.body.contains("&lt;b&gt;bad&lt;/b&gt;"))
        }
    }

    private func expectErrorPage(
        _ page: WebPage,
        status: HTTPResponse.Status,
        code: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(page.status == status, sourceLocation: sourceLocation)
        #expect(page.headers[.contentType] == "text/html; charset=utf-8", sourceLocation: sourceLocation)
        #expect(page.body.contains("<h1>Sign-in failed</h1>"), sourceLocation: sourceLocation)
        #expect(page.body.contains("<code>\(code)</code>"), "\(page.body)", sourceLocation: sourceLocation)
        #expect(page.body.contains(#"<a href="/login">"#), sourceLocation: sourceLocation)
        #expect(!page.body.contains("Error("), sourceLocation: sourceLocation)
    }

    // MARK: Branding

    static func branded(afterSignInURL: String? = "/welcome", logo: Bool = true) -> AuthServerConfiguration {
        var configuration = configuration()
        configuration.branding = BrandingConfiguration(
            productName: "Acme",
            logo: logo
                ? BrandingConfiguration.Logo(
                    bytes: Array(#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"/>"#.utf8),
                    contentType: "image/svg+xml"
                ) : nil,
            buttonStyle: .whiteOutline,
            supportURL: "https://acme.example/help",
            afterSignInURL: afterSignInURL
        )
        return configuration
    }

    /// The login page of a product: its name, its logo (served by siwa), its one button style, its support link, and a
    /// button that brings the browser back to the product's page.
    @Test func theLoginPageSpeaksForTheProduct() async throws {
        try await run(configuration: Self.branded()) { harness in
            let page = try await harness.browser(.get, "/login?style=black")
            #expect(page.body.contains("<h1>Sign in to Acme</h1>"))
            #expect(page.body.contains("<title>Sign in · Acme</title>"))
            #expect(page.body.contains(#"<img src="/branding/logo" alt="Acme""#))
            #expect(page.body.contains(#"<a href="https://acme.example/help">Contact Acme support</a>"#))
            #expect(!page.body.contains("Button style"), "the demo's switch is the demo's")
            #expect(
                page.body.contains(
                    #"class="apple-button white-outline" href="/auth/apple/authorize?returnUrl=%2Fwelcome""#
                ),
                "the configured style, whatever the query says, and back to the product's page"
            )
            let logo = try await harness.browser(.get, "/branding/logo")
            #expect(logo.status == .ok)
            #expect(logo.headers[.contentType] == "image/svg+xml")
            #expect(logo.headers[.contentSecurityPolicy]?.contains("sandbox") == true)
            #expect(logo.body.hasPrefix("<svg"))
        }
        try await run(configuration: Self.branded(logo: false)) { harness in
            let logo = try await harness.browser(.get, "/branding/logo")
            #expect(logo.status == .notFound)
            let page = try await harness.browser(.get, "/login")
            #expect(!page.body.contains("<img"))
        }
    }

    /// After a web sign-in started from the login page, the browser lands on the product's page, not on /login.
    @Test func aSignInFromTheLoginPageLandsOnTheProductsPage() async throws {
        try await run(configuration: Self.branded()) { harness in
            let login = try await harness.browser(.get, "/login")
            let button = try #require(
                login.body.firstMatch(of: #/href="(/auth/apple/authorize\?[^"]+)"/#).map { String($0.output.1) }
            )
            let start = try await harness.browser(.get, button)
            try #require(start.status == .found, "authorize: \(start.body)")
            let post = try await harness.consent(at: try #require(start.location), email: "ann@acme.example")
            let callback = try await harness.postCallback(post)
            #expect(callback.status == .seeOther)
            #expect(callback.location == "/welcome")
            // Straight to the authorize route without a return URL: the same page.
            let direct = try await harness.webSignIn(email: "bo@acme.example", returnURL: "/welcome")
            #expect(direct.location == "/welcome")
        }
    }

    /// A page after sign-in on an origin the flow does not accept would make every sign-in fail: refused at start.
    @Test func anAfterSignInPageOnAnotherOriginIsRefusedAtStart() async throws {
        await #expect(throws: (any Error).self) {
            try await run(configuration: Self.branded(afterSignInURL: "https://elsewhere.example/home")) { _ in }
        }
    }

    /// A disabled account's web sign-in: a page in the product's name that says signing in again will not help and
    /// where to get help.
    @Test func aDisabledAccountsPageSaysWhatToDoInTheProductsName() async throws {
        try await run(configuration: Self.branded()) { harness in
            _ = try await harness.webSignIn(email: "off@acme.example", returnURL: "/welcome")
            let user = try #require(try await harness.store.users(email: "off@acme.example").first)
            _ = try await harness.store.disableUser(id: user.id, now: Date())
            let refused = try await harness.webSignIn(email: "off@acme.example", returnURL: "/welcome")
            #expect(refused.status == .forbidden)
            #expect(refused.body.contains("<h1>Acme could not sign you in</h1>"))
            #expect(refused.body.contains("while your Acme account is disabled"))
            #expect(refused.body.contains(#"<a href="https://acme.example/help">contact support</a>"#))
            #expect(refused.body.contains("<code>account_disabled</code>"))
        }
    }
}
