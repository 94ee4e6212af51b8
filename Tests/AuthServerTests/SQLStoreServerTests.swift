import AccountStore
import AccountStoreSQL
import Foundation
import HTTPTypes
import Logging
import SiwaTesting
import Testing

/// The server end to end on the SQL stores that `siwa serve` uses: SQLite always, PostgreSQL when
/// `SIWA_TEST_POSTGRES_URL` is set (scripts/test sets it).
@Suite("Server on SQL stores")
struct SQLStoreServerTests {
    enum Backend: String, CaseIterable, Sendable {
        case sqlite, postgres
    }

    static var backends: [Backend] {
        ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"] == nil ? [.sqlite] : [.sqlite, .postgres]
    }

    /// Opens a new store on `backend` for `body` and shuts it down afterwards, also when `body` throws: on SQLite in a
    /// file of a temporary folder `<name>-<UUID>`, removed with the database's other files; on PostgreSQL in a schema
    /// of its own, named after `name`.
    static func withStore<R>(
        _ backend: Backend,
        name: String = "siwa-server",
        _ body: (SQLAccountStore) async throws -> R
    ) async throws -> R {
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        return try await withTemporaryFolder(name) { folder in
            let store: SQLAccountStore
            switch backend {
            case .sqlite:
                let path = folder.url.appendingPathComponent("siwa.sqlite").path
                store = try await SQLAccountStore.sqlite(path: path, logger: logger)
            case .postgres:
                let schema =
                    name.replacingOccurrences(of: "-", with: "_") + "_"
                    + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
                store = try await SQLAccountStore.postgres(
                    url: try #require(ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"]),
                    schema: schema,
                    logger: logger
                )
            }
            return try await withClosing(store, close: { await $0.shutdown() }, body)
        }
    }

    @Test(arguments: backends)
    func signInRefreshReuseAndLogout(backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            try await ServerHarness.run(store: store) { harness in
                let first = try await harness.signIn("sql@example.com", givenName: "Sequel")
                #expect(first.status == .ok)
                #expect(first.json["isNewUser"] as? Bool == true)
                let again = try await harness.signIn("sql@example.com")
                #expect(again.json["isNewUser"] as? Bool == false)
                #expect(again.json.user.string("givenName") == "Sequel")

                let refreshToken = try #require(again.json.string("refreshToken"))
                let rotated = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": refreshToken])
                #expect(rotated.status == .ok)
                harness.clock.advance(by: 10)  // past the grace window
                let reuse = try await harness.call(.post, "/auth/refresh", json: ["refreshToken": refreshToken])
                #expect(reuse.json.string("error") == "refresh_token_reused")
                let access = try #require(rotated.json.string("accessToken"))
                #expect(
                    try await harness.call(.get, "/api/me", bearer: access).json.string("error") == "session_revoked"
                )

                let other = try await harness.signIn("sql@example.com")
                let otherAccess = try #require(other.json.string("accessToken"))
                #expect(try await harness.call(.get, "/api/me", bearer: otherAccess).status == .ok)
                #expect(try await harness.call(.post, "/auth/logout", bearer: otherAccess).status == .noContent)
                #expect(try await harness.call(.get, "/api/me", bearer: otherAccess).status == .unauthorized)
            }
        }
    }

    @Test(arguments: backends)
    func concurrentFirstSignInsCreateOneAccount(backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            try await ServerHarness.run(store: store) { harness in
                var tokens: [String] = []
                for _ in 0..<20 {
                    tokens.append(
                        try #require(try await harness.appleCredential("sqlrace@example.com").string("identityToken"))
                    )
                }
                let answers = try await withThrowingTaskGroup(of: (String?, Bool?).self) { group in
                    for token in tokens {
                        group.addTask {
                            let json = try await harness.call(
                                .post,
                                "/auth/apple/native",
                                json: ["identityToken": token]
                            ).json
                            return (json.user.string("id"), json["isNewUser"] as? Bool)
                        }
                    }
                    var answers: [(String?, Bool?)] = []
                    for try await answer in group { answers.append(answer) }
                    return answers
                }
                #expect(answers.count == 20)
                #expect(Set(answers.compactMap(\.0)).count == 1)
                #expect(answers.filter { $0.1 == true }.count == 1)
                #expect(try await store.users(limit: 100, after: nil).count == 1)
            }
        }
    }
}
