import AccountStore
import AccountStoreSQL
import Foundation
import HTTPTypes
import Logging
import Testing

/// The web flow on the SQLite store that `siwa serve` uses by default: the state lives in the database.
@Suite("Web sign-in on SQLite")
struct WebSQLStoreTests {
    @Test func fullFlowAndReplayOnSQLite() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "siwa-web-\(UUID().uuidString).sqlite"
        ).path
        let store = try await SQLAccountStore.sqlite(path: path, logger: logger)
        do {
            try await ServerHarness.run(store: store, configuration: WebSignInTests.configuration(), web: true) {
                harness in
                let start = try await harness.startWebSignIn(returnURL: "/account")
                let post = try await harness.consent(
                    at: try #require(start.location),
                    email: "sql-web@example.com",
                    givenName: "Quinn"
                )
                let callback = try await harness.postCallback(post)
                #expect(callback.status == .seeOther)
                #expect(callback.location == "/account")
                let me = try await harness.browser(
                    .get,
                    "/api/me",
                    cookies: ["siwa_session": try #require(callback.cookie("siwa_session"))]
                )
                #expect(me.body.contains(#""givenName":"Quinn""#))
                let replay = try await harness.postCallback(post)
                #expect(replay.status == .badRequest)
                #expect(replay.body.contains("<code>state_already_used</code>"))
            }
        } catch {
            await store.shutdown()
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
        await store.shutdown()
        try? FileManager.default.removeItem(atPath: path)
    }
}
