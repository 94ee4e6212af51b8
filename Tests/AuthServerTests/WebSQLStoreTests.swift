import AccountStore
import AccountStoreSQL
import Foundation
import HTTPTypes
import Testing

/// The web flow on the SQLite store that `siwa serve` uses by default: the state lives in the database.
@Suite("Web sign-in on SQLite")
struct WebSQLStoreTests {
    @Test func fullFlowAndReplayOnSQLite() async throws {
        try await SQLStoreServerTests.withStore(.sqlite, name: "siwa-web") { store in
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
        }
    }
}
