import AccountStore
import AppleSignIn
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import SiwaTesting
import Synchronization
import Testing

@testable import AuthServer

/// Apple refusing siwa's client secret (`invalid_client`: a `.p8` revoked in the portal, a wrong key id) is raised at
/// the first refused call, in `/readyz`, the metrics, the console and one log line, and stays raised until Apple
/// accepts a call for that client id again.
@Suite("Apple credential health")
struct AppleCredentialHealthTests {
    @Test func aRefusedCodeExchangeRaisesItInReadinessMetricsAndConsole() async throws {
        // The server's client secrets name a key id the emulator's team does not have.
        try await ServerHarness.run(metrics: true, appleKeyID: "KEYREVOKED") { harness in
            let before = try await harness.call(.get, "/readyz")
            #expect(Self.appleState(before.json) == "ok")
            #expect(try await harness.metrics().body.contains("siwa_apple_credentials_failing 0"))

            // The sign-in stands: the identity token verifies without the client secret.
            let admin = try await harness.signIn("admin@example.com")
            #expect(admin.status == .ok)

            let ready = try await harness.call(.get, "/readyz")
            #expect(ready.status == .ok)
            let apple = try #require(ready.json["appleCredentials"] as? [String: Any])
            #expect(apple["state"] as? String == "failing")
            #expect(apple["call"] as? String == "exchange")
            #expect(apple["clientIds"] as? [String] == [ServerHarness.bundleID])
            #expect(apple["since"] is String)

            let metrics = try await harness.metrics().body
            #expect(metrics.contains("siwa_apple_credentials_failing 1"))
            #expect(metrics.contains(#"siwa_apple_invalid_client_total{call="exchange"} 1"#))

            let token = try #require(admin.json["accessToken"] as? String)
            let id = try #require((admin.json["user"] as? [String: Any])?["id"] as? String)
            try await harness.store.grantAdmin(AdminSubject(try #require(UserID(id))), by: .operator, now: Date())
            for path in ["/admin", "/admin/users", "/admin/audit"] {
                let page = try await Self.page(harness, path, bearer: token)
                #expect(page.contains(#"id="apple-credentials-failing""#), "\(path)")
                #expect(page.contains("siwa doctor --apple"))
            }
            let overview = try await Self.page(harness, "/admin", bearer: token)
            #expect(overview.contains(#"<dd id="apple-credentials"><span class="badge warn">refused</span>"#))
            #expect(overview.contains(#"<dt>siwa's signing key</dt><dd id="signing-key"><code>"#))
            #expect(overview.contains("created <time"))
            #expect(overview.contains(#"<dd id="data-key"><code>"#))
        }
    }

    @Test func itStaysRaisedUntilACallForThatClientSucceeds() async throws {
        try await ServerHarness.run(metrics: true) { harness in
            // Apple refuses every client secret, as once the team's key is revoked in the developer portal.
            try await harness.emulator("/emulator/faults", ["endpoint": "token", "mode": "invalid_client"])
            #expect(try await harness.signIn("first@example.com").status == .ok)
            #expect(try await harness.signIn("second@example.com").status == .ok)
            #expect(Self.appleState(try await harness.call(.get, "/readyz").json) == "failing")
            let raised = try await harness.metrics().body
            #expect(raised.contains("siwa_apple_credentials_failing 1"))
            #expect(raised.contains(#"siwa_apple_invalid_client_total{call="exchange"} 2"#))

            // The key is fixed: the next exchange succeeds and clears it.
            try await harness.emulator("/emulator/faults", ["endpoint": "token", "mode": "off"])
            let admin = try await harness.signIn("admin@example.com")
            #expect(admin.status == .ok)
            #expect(Self.appleState(try await harness.call(.get, "/readyz").json) == "ok")
            #expect(try await harness.metrics().body.contains("siwa_apple_credentials_failing 0"))

            let token = try #require(admin.json["accessToken"] as? String)
            let id = try #require((admin.json["user"] as? [String: Any])?["id"] as? String)
            try await harness.store.grantAdmin(AdminSubject(try #require(UserID(id))), by: .operator, now: Date())
            let overview = try await Self.page(harness, "/admin", bearer: token)
            #expect(!overview.contains(#"id="apple-credentials-failing""#))
            #expect(overview.contains(#"<dd id="apple-credentials"><span class="badge">not refused</span>"#))
        }
    }

    @Test func aRefusedRevocationAtAccountDeletionRaisesIt() async throws {
        try await ServerHarness.run(metrics: true) { harness in
            let user = try await harness.signIn("leaving@example.com")
            let token = try #require(user.json["accessToken"] as? String)
            #expect(Self.appleState(try await harness.call(.get, "/readyz").json) == "ok")

            try await harness.emulator("/emulator/faults", ["endpoint": "revoke", "mode": "invalid_client"])
            // The account is deleted all the same; the revocation stays queued.
            #expect(try await harness.call(.delete, "/api/me", bearer: token).status == .noContent)
            let ready = try await harness.call(.get, "/readyz")
            let apple = try #require(ready.json["appleCredentials"] as? [String: Any])
            #expect(apple["state"] as? String == "failing")
            #expect(apple["call"] as? String == "revoke")
            #expect(try await harness.metrics().body.contains(#"siwa_apple_invalid_client_total{call="revoke"} 1"#))
        }
    }

    @Test func oneErrorLineAtRaisingAndOneNoticeAtClearing() throws {
        let capture = LogRedactionTests.Capture()
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        let metrics = ServerMetrics()
        let health = AppleCredentialHealth(metrics: metrics, clock: clock, logger: capture.logger(level: .info))
        let app = try ClientID(validating: "com.example.app", setting: "test")
        let web = try ClientID(validating: "com.example.web", setting: "test")
        func answer(_ call: AppleAPIAnswer.Call, _ client: ClientID, _ code: AppleSignInError.Code?) -> AppleAPIAnswer {
            AppleAPIAnswer(call: call, clientID: client, error: code.map { AppleSignInError($0, "test") }, date: nil)
        }

        health.observe(answer(.validate, app, .invalidClient))
        clock.advance(by: 60)
        health.observe(answer(.revoke, app, .invalidClient))
        health.observe(answer(.exchange, web, .invalidClient))
        // Apple unreachable or failing tells nothing about the secret.
        health.observe(answer(.validate, app, .appleServerError))
        #expect(health.failing.map(\.clientID) == [app, web])
        #expect(health.failing.first?.call == .validate)
        #expect(health.failing.first?.since == Date(timeIntervalSince1970: 1_800_000_000))

        // `invalid_grant` comes only once Apple accepted the secret.
        health.observe(answer(.validate, app, .invalidGrant))
        #expect(health.failing.map(\.clientID) == [web])
        #expect(health.isFailing)
        health.observe(answer(.exchange, web, nil))
        #expect(!health.isFailing)

        let lines = capture.lines.withLock { $0 }
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.first?.contains(#""level":"error""#) == true)
        #expect(lines.first?.contains("siwa doctor --apple") == true)
        #expect(lines.first?.contains(#""client_id":"com.example.app""#) == true)
        #expect(lines.last?.contains(#""level":"notice""#) == true)
        let exposition = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(exposition.contains("siwa_apple_credentials_failing 0"))
        #expect(exposition.contains(#"siwa_apple_invalid_client_total{call="revoke"} 1"#))
        #expect(exposition.contains(#"siwa_apple_invalid_client_total{call="validate"} 1"#))
    }

    // MARK: Helpers

    private static func appleState(_ json: [String: Any]) -> String? {
        (json["appleCredentials"] as? [String: Any])?["state"] as? String
    }

    private static func page(_ harness: ServerHarness, _ path: String, bearer: String) async throws -> String {
        let response = try await harness.server.execute(
            uri: path,
            method: .get,
            headers: [.authorization: "Bearer \(bearer)"],
            body: nil
        )
        #expect(response.status == .ok, "\(path)")
        return String(buffer: response.body)
    }
}
