import AccountStore
import AppleSignIn
import SQLKit
import Testing

@testable import AccountStoreSQL

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Schema version 7: a refresh token reaches its account through its session. `refresh_tokens` keeps `user_id`, but
/// no index starts with it and no foreign key ties it to `users` (every sign-in and refresh paid a page write for the
/// index, and the foreign key needs one), and deleting or anonymising an account still removes its tokens. Run on a
/// new database and on one upgraded from version 4 (whose table SQLite rebuilt).
enum RefreshTokenKeyScenario {
    static func check(_ store: SQLAccountStore) async throws {
        let flavor = store.connections.flavor
        let (firstColumns, references) = try await store.read("read the refresh tokens' schema") { database in
            switch flavor {
            case .sqlite:
                (
                    try await strings(
                        database,
                        """
                        SELECT info.name AS value FROM pragma_index_list('refresh_tokens') AS list
                        JOIN pragma_index_info(list.name) AS info WHERE info.seqno = 0
                        """
                    ),
                    try await strings(
                        database,
                        #"SELECT DISTINCT "table" AS value FROM pragma_foreign_key_list('refresh_tokens')"#
                    )
                )
            case .postgres:
                (
                    try await strings(
                        database,
                        """
                        SELECT attribute.attname::text AS value FROM pg_index AS index
                        JOIN pg_attribute AS attribute
                            ON attribute.attrelid = index.indrelid AND attribute.attnum = index.indkey[0]
                        WHERE index.indrelid = 'refresh_tokens'::regclass
                        """
                    ),
                    try await strings(
                        database,
                        """
                        SELECT DISTINCT confrelid::regclass::text AS value FROM pg_constraint
                        WHERE conrelid = 'refresh_tokens'::regclass AND contype = 'f'
                        """
                    )
                )
            }
        }
        #expect(firstColumns == ["expires_at", "hash", "session_id"], "no index starts with user_id")
        #expect(references == ["sessions"], "the token's only foreign key is its session's")

        // Three accounts with two sessions each, one of them rotated once; one account deleted, one anonymised.
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        func token(_ sessionID: SessionID, _ userID: UserID) -> RefreshTokenRecord {
            RefreshTokenRecord(
                hash: (0..<32).map { _ in UInt8.random(in: 0...255) },
                sessionID: sessionID,
                userID: userID,
                issuedAt: now,
                expiresAt: now.addingTimeInterval(3_600)
            )
        }
        var users: [UserID] = []
        for _ in 0..<3 {
            let facts = AppleSignInFacts(
                appleUserID: AppleUserID("001.\(UUID().uuidString.lowercased())"),
                clientID: "com.example.app"
            )
            let user = try await store.signIn(facts, now: now).user
            users.append(user.id)
            for session in 0..<2 {
                let first = token(SessionID(), user.id)
                try await store.createSession(firstToken: first, now: now)
                guard session == 0 else { continue }
                #expect(
                    try await store.rotateRefreshToken(
                        presentedHash: first.hash,
                        next: token(first.sessionID, user.id),
                        now: now
                    ) == .rotated(sessionID: first.sessionID, userID: user.id)
                )
            }
        }
        #expect(try await tokenCounts(store, of: users) == [users[0]: 3, users[1]: 3, users[2]: 3])
        _ = try await store.deleteUser(id: users[1], mode: .delete, appleRevocationDueAt: nil, now: now)
        _ = try await store.deleteUser(id: users[2], mode: .anonymise, appleRevocationDueAt: nil, now: now)
        #expect(
            try await tokenCounts(store, of: users) == [users[0]: 3],
            "the removed accounts' tokens are gone, the other's kept"
        )
    }

    /// The stored refresh tokens of `users`, per account.
    private static func tokenCounts(_ store: SQLAccountStore, of users: [UserID]) async throws -> [UserID: Int] {
        let rows = try await store.read("count refresh tokens") { database in
            try await database.raw("SELECT user_id, COUNT(*) AS count FROM refresh_tokens GROUP BY user_id").all()
                .map { row in
                    (try row.decode(column: "user_id", as: String.self), try row.decode(column: "count", as: Int.self))
                }
        }
        var counts: [UserID: Int] = [:]
        for (user, count) in rows {
            let user = try #require(UserID(user))
            if users.contains(user) { counts[user] = count }
        }
        return counts
    }

    /// The sorted values of a query's `value` column.
    private static func strings(_ database: any SQLDatabase, _ query: SQLQueryString) async throws -> [String] {
        try await database.raw(query).all().map { try $0.decode(column: "value", as: String.self) }.sorted()
    }
}
