import Foundation
import HTTPTypes
import HummingbirdCore
import Logging
import Synchronization
import Testing

@testable import AuthServer
@testable import SiwaCLI

/// A debug JSON log of a native sign-in, a refresh, an OpenID Connect sign-in with its token, refresh, userinfo and
/// logout calls, and a token sent in a query, holds none of the tokens, codes or secrets those calls carried.
@Suite("Server: logs never carry credentials")
struct LogRedactionTests {
    /// Every line a logger wrote, as `SIWA_LOG_FORMAT=json` writes it.
    final class Capture: Sendable {
        let lines = Mutex<[String]>([])
        /// The lines' format: `SIWA_LOG_FORMAT=json`'s (the default here) or `text`'s, with a fixed time.
        let format: LogFormat

        init(format: LogFormat = .json) {
            self.format = format
        }

        var logger: Logger { logger(level: .trace) }

        func logger(level: Logger.Level) -> Logger {
            var logger = Logger(label: "siwa") { label in Handler(label: label, capture: self) }
            logger.logLevel = level
            return logger
        }

        struct Handler: LogHandler {
            let label: String
            let capture: Capture
            var logLevel: Logger.Level = .trace
            var metadata: Logger.Metadata = [:]
            var metadataProvider: Logger.MetadataProvider?

            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }

            func log(event: LogEvent) {
                let line =
                    switch capture.format {
                    case .json:
                        String(
                            decoding: JSONLogHandler.line(
                                event,
                                label: label,
                                metadata: metadata,
                                provider: metadataProvider,
                                now: (0, 0)
                            ),
                            as: UTF8.self
                        )
                    case .text:
                        TextLogHandler.line(
                            event,
                            label: label,
                            metadata: metadata,
                            provider: metadataProvider,
                            time: "2026-12-01T00:00:00+0000"
                        )
                    }
                capture.lines.withLock { $0.append(line) }
            }
        }
    }

    /// The credentials the flows carried, by what they are.
    final class Seen: Sendable {
        let values = Mutex<[String: String]>([:])

        func add(_ name: String, _ value: Any?) {
            if let value = value as? String, !value.isEmpty { values.withLock { $0[name] = value } }
        }
    }

    @Test func aDebugLogOfEveryFlowHoldsNoCredential() async throws {
        let capture = Capture()
        let seen = Seen()
        @Sendable func saw(_ name: String, _ value: Any?) { seen.add(name, value) }
        try await ServerHarness.run(configuration: RelyingParty.configuration(), web: true, logger: capture.logger) {
            harness in
            // Native sign-in with the Apple credential, then a refresh.
            let credential = try await harness.appleCredential("logged@example.com", givenName: "Log")
            saw("identity token", credential["identityToken"])
            saw("authorization code", credential["authorizationCode"])
            let native = try await harness.call(
                .post,
                "/auth/apple/native",
                json: [
                    "identityToken": credential["identityToken"] as? String ?? "",
                    "authorizationCode": credential["authorizationCode"] as? String ?? "",
                ]
            )
            try #require(native.status == .ok)
            saw("access token", native.json["accessToken"])
            saw("refresh token", native.json["refreshToken"])
            let refreshed = try await harness.call(
                .post,
                "/auth/refresh",
                json: ["refreshToken": native.json["refreshToken"] as? String ?? ""]
            )
            saw("rotated refresh token", refreshed.json["refreshToken"])
            // A client that puts its token in the query (wrong, and still never logged).
            let access = try #require(native.json["accessToken"] as? String)
            _ = try await harness.browser(.get, "/api/me?access_token=\(access)&Client_Secret=hunter2-secret-value")
            saw("client secret in a query", "hunter2-secret-value")

            // An OpenID Connect sign-in, its code, tokens, refresh, userinfo and RP-initiated logout.
            let pkce = PKCE()
            let signIn = try await harness.openIDSignIn(ServerHarness.authorizePath(.a, pkce: pkce))
            let code = try #require(signIn.query["code"])
            saw("OpenID code", code)
            saw("PKCE verifier", pkce.verifier)
            let tokens = try await harness.redeem(code, .a, verifier: pkce.verifier)
            try #require(tokens.status == .ok)
            saw("relying party's access token", tokens.json["access_token"])
            saw("ID token", tokens.json["id_token"])
            saw("relying party's refresh token", tokens.json["refresh_token"])
            saw("client secret", RelyingParty.a.secret)
            let rpRefreshed = try await harness.refresh(tokens.json["refresh_token"] as? String ?? "", .a)
            saw("relying party's rotated refresh token", rpRefreshed.json["refresh_token"])
            _ = try await harness.call(.get, "/oauth/userinfo", bearer: tokens.json["access_token"] as? String)
            let hint = try #require(tokens.json["id_token"] as? String)
            let logout = try await harness.browser(
                .get,
                "/oauth/logout?id_token_hint=\(hint)&post_logout_redirect_uri="
                    + (RelyingParty.a.logoutURI.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            )
            #expect(logout.status == .seeOther, "\(logout.status) \(logout.body)")

            // A public client's consent page and its form.
            let appPKCE = PKCE()
            let (page, browser) = try await harness.openIDSignInPage(
                ServerHarness.authorizePath(.publicApp, pkce: appPKCE),
                email: "consent-log@example.com"
            )
            try #require(page.status == .ok, "the consent page")
            saw("consent form token", try #require(try page.hiddenFields().first { $0.0 == "consent_token" }?.1))
            saw("browser session cookie", browser.cookies["siwa_session"])
            let allowed = try await harness.decide("allow", on: page, browser: browser)
            saw("public client's code", try #require(allowed.location.map(ServerHarness.query(of:))?["code"]))
            saw("public client's PKCE verifier", appPKCE.verifier)
        }
        let lines = capture.lines.withLock { $0 }
        let log = lines.joined(separator: "\n")
        #expect(log.contains("id_token_hint=***"), "the logout's path was logged, redacted")
        #expect(log.contains("access_token=***"))
        for (name, value) in seen.values.withLock({ $0 }) {
            let leaking = lines.filter { $0.contains(value) }
            #expect(leaking.isEmpty, "the \(name) is in the log:\n\(leaking.prefix(3).joined(separator: "\n"))")
        }
    }

    @Test(arguments: [
        ("/oauth/logout?id_token_hint=a.b.c&state=s", "/oauth/logout?id_token_hint=***&state=s"),
        ("/cb?code=xyz&x=1", "/cb?code=***&x=1"),
        ("/p?ID%5FTOKEN=abc&Refresh_Token=def&flag", "/p?ID%5FTOKEN=***&Refresh_Token=***&flag"),
        ("/p?client_secret=s&password=p&code_verifier=v", "/p?client_secret=***&password=***&code_verifier=***"),
        ("/login?returnUrl=%2Fadmin", "/login?returnUrl=%2Fadmin"),
        ("/healthz", "/healthz"),
    ])
    func credentialParametersAreRedacted(_ uri: String, _ logged: String) {
        #expect(LoggedURI.redacting(.init(uri)) == logged)
    }
}
