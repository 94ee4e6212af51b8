import AccountStore
import AccountStoreSQL
import AuthServer
import Foundation
import HTTPTypes
import Logging
import SiwaTesting
import Testing

/// Two instances of the server on one PostgreSQL database: what one ends (a logout, a reuse, an operator's disabling
/// or deletion from another process) the other refuses at once, by the store's announcements alone: the poll is set to
/// ten minutes, so a refusal within the test's bound cannot come from it.
@Suite(
    "Server: endings reach the other instances at once",
    .enabled(
        if: ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"] != nil,
        "set SIWA_TEST_POSTGRES_URL, or run under scripts/with-postgres (scripts/test does)"
    )
)
struct SharedStoreAnnouncementTests {
    static let configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .seconds(600))

    /// Asks instance `server` with `token` until it is refused (401), for at most `bound`; returns how long it took.
    static func refused(
        _ token: String,
        by server: ServerHarness,
        within bound: Duration = .seconds(10)
    ) async throws -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        while clock.now - start < bound {
            if try await server.call(.get, "/api/me", bearer: token).status == .unauthorized {
                return clock.now - start
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        Issue.record("still accepted after \(bound): the ending was not announced")
        return bound
    }

    @Test func anEndingOnOneInstanceIsRefusedByTheOtherAtOnce() async throws {
        let url = try #require(ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"])
        let schema = "announce_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        // Each instance has its store (its pool and its listening connection); the operator's is a third process's.
        var stores: [SQLAccountStore] = []
        for _ in 0..<3 { stores.append(try await SQLAccountStore.postgres(url: url, schema: schema, logger: logger)) }
        let (storeA, storeB, operatorStore) = (stores[0], stores[1], stores[2])
        do {
            try await ServerHarness.run(store: storeA, configuration: Self.configuration) { a in
                try await ServerHarness.run(store: storeB, configuration: Self.configuration, dataKey: a.dataKey) { b in
                    // A logout on A.
                    let first = try await a.signIn("announced@example.com")
                    let token = try #require(first.json.string("accessToken"))
                    #expect(try await b.call(.get, "/api/me", bearer: token).status == .ok, "B accepts A's token")
                    #expect(try await a.call(.post, "/auth/logout", bearer: token).status == .noContent)
                    let logout = try await Self.refused(token, by: b)

                    // Refresh-token reuse on A ends the session everywhere.
                    let second = try await a.signIn("announced@example.com")
                    let access = try #require(second.json.string("accessToken"))
                    let refreshToken = try #require(second.json.string("refreshToken"))
                    #expect(
                        try await a.call(.post, "/auth/refresh", json: ["refreshToken": refreshToken]).status == .ok
                    )
                    a.clock.advance(by: 10)  // past the grace window
                    _ = try await a.call(.post, "/auth/refresh", json: ["refreshToken": refreshToken])
                    let reuse = try await Self.refused(access, by: b)

                    // An operator's command in another process (its own store): disabling, then deleting.
                    let third = try await a.signIn("announced@example.com")
                    let disabledToken = try #require(third.json.string("accessToken"))
                    let userID = try #require(third.json.user.string("id").flatMap(UserID.init))
                    #expect(try await b.call(.get, "/api/me", bearer: disabledToken).status == .ok)
                    _ = try await operatorStore.disableUser(id: userID, now: Date())
                    let disabling = try await Self.refused(disabledToken, by: b)
                    _ = try await operatorStore.enableUser(id: userID, now: Date())

                    let fourth = try await a.signIn("announced@example.com")
                    let deletedToken = try #require(fourth.json.string("accessToken"))
                    #expect(try await b.call(.get, "/api/me", bearer: deletedToken).status == .ok)
                    _ = try await operatorStore.deleteUser(
                        id: userID,
                        mode: .delete,
                        appleRevocationDueAt: nil,
                        now: Date()
                    )
                    let deletion = try await Self.refused(deletedToken, by: b)
                    print(
                        "ending to refusal on the other instance: logout \(logout), reuse \(reuse), "
                            + "disabling \(disabling), deletion \(deletion)"
                    )
                }
            }
        } catch {
            for store in stores { await store.shutdown() }
            throw error
        }
        for store in stores { await store.shutdown() }
    }
}
