import AccountStore
import AppleSignIn
import SQLKit
import SiwaTesting
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
/// new database and on upgraded ones (SQLite edits the table's definition in place).
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

        // Three accounts with two sessions each, one of them rotated once, and a third session started by a returning
        // sign-in (SQLite's trigger, PostgreSQL's prepared statement); one account deleted, one anonymised.
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
            let returning = try await store.signIn(
                facts,
                startingSession: NewSession(
                    sessionID: SessionID(),
                    refreshTokenHash: (0..<32).map { _ in UInt8.random(in: 0...255) },
                    issuedAt: now,
                    expiresAt: now.addingTimeInterval(3_600),
                    metadata: SessionMetadata(channel: .native)
                ),
                now: now
            )
            #expect(!returning.isNewUser && returning.user.id == user.id)
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
        #expect(try await tokenCounts(store, of: users) == [users[0]: 4, users[1]: 4, users[2]: 4])
        _ = try await store.deleteUser(id: users[1], mode: .delete, appleRevocationDueAt: nil, now: now)
        _ = try await store.deleteUser(id: users[2], mode: .anonymise, appleRevocationDueAt: nil, now: now)
        #expect(
            try await tokenCounts(store, of: users) == [users[0]: 4],
            "the removed accounts' tokens are gone, the other's kept"
        )
    }

    /// A store opened at version 6, with its statements (and on SQLite its writer's triggers) already used, while
    /// another instance upgrades the database to version 7: the first one keeps working on the new schema (sign-ins,
    /// rotations, deletions, and the checks of ``check(_:)``). `open` opens a store on the same database.
    static func upgradeWhileOpen(
        _ open: @escaping ((SQLAccountStore) async throws -> Void) async throws -> Void
    ) async throws {
        try await atVersion6 {
            try await open { old in
                _ = try await writeVersion6Tokens(old)
                try await SQLSchema.$migrationTarget.withValue(nil) {
                    try await open { new async throws -> Void in
                        #expect(try await new.appliedSchemaVersion() == SQLAccountStore.schemaVersion)
                    }
                }
                #expect(try await old.appliedSchemaVersion() == SQLAccountStore.schemaVersion)
                try await check(old)
            }
        }
    }

    /// A stored refresh token's row, every column.
    struct TokenRow: Equatable {
        var hash: String
        var sessionID: String
        var userID: String
        var issuedAt: Int64
        var expiresAt: Int64
        var usedAt: Int64?
        var lastCheckedAt: Int64?
    }

    /// Runs `body` with stores that migrate to version 6 only (as the siwa before version 7 did).
    static func atVersion6<R>(_ body: () async throws -> R) async throws -> R {
        try await SQLSchema.$migrationTarget.withValue(6) { try await body() }
    }

    /// Writes, at version 6, an account with one session whose first token was used, checked and rotated: every
    /// column of both tokens holds a value but the successor's `used_at` and `last_checked_at`.
    static func writeVersion6Tokens(_ store: SQLAccountStore) async throws -> [TokenRow] {
        #expect(try await store.appliedSchemaVersion() == 6)
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        // The account as version 6 wrote it: with the statement alone (a sign-in now also writes its event, whose
        // table came later).
        let userID = UserID()
        let created = try SQLValue.milliseconds(now)
        try await store.write("create a version 6 account") { database in
            try await database.raw(
                """
                INSERT INTO users (
                    id, apple_user_id, client_id, email_verified, is_private_email, email_forwarding, created_at,
                    updated_at
                ) VALUES (
                    \(bind: userID.description), '001.version6.tokens', 'com.example.app', 0, 0, 1, \(bind: created),
                    \(bind: created)
                )
                """
            ).run()
        }
        let user = try #require(try await store.user(id: userID))
        let first = RefreshTokenRecord(
            hash: Array(repeating: 0x61, count: 32),
            sessionID: SessionID(),
            userID: user.id,
            issuedAt: now,
            expiresAt: now.addingTimeInterval(3_600)
        )
        try await store.createSession(firstToken: first, now: now)
        let later = now.addingTimeInterval(60)
        try await store.write("mark the first token checked") { database in
            try await database.raw(
                "UPDATE refresh_tokens SET last_checked_at = \(bind: try SQLValue.milliseconds(later))"
            ).run()
        }
        let next = RefreshTokenRecord(
            hash: Array(repeating: 0x62, count: 32),
            sessionID: first.sessionID,
            userID: user.id,
            issuedAt: later,
            expiresAt: later.addingTimeInterval(3_600)
        )
        #expect(
            try await store.rotateRefreshToken(presentedHash: first.hash, next: next, now: later)
                == .rotated(sessionID: first.sessionID, userID: user.id)
        )
        let rows = try await tokenRows(store)
        #expect(rows.count == 2 && rows[0].usedAt != nil && rows[0].lastCheckedAt != nil, "values in every column")
        return rows
    }

    /// Every stored refresh token, by hash.
    static func tokenRows(_ store: SQLAccountStore) async throws -> [TokenRow] {
        try await store.read("read refresh tokens") { database in
            try await database.raw(
                """
                SELECT hash, session_id, user_id, issued_at, expires_at, used_at, last_checked_at
                FROM refresh_tokens ORDER BY hash
                """
            ).all().map { row in
                TokenRow(
                    hash: try row.decode(column: "hash", as: String.self),
                    sessionID: try row.decode(column: "session_id", as: String.self),
                    userID: try row.decode(column: "user_id", as: String.self),
                    issuedAt: try row.decode(column: "issued_at", as: Int64.self),
                    expiresAt: try row.decode(column: "expires_at", as: Int64.self),
                    usedAt: try row.decode(column: "used_at", as: Int64?.self),
                    lastCheckedAt: try row.decode(column: "last_checked_at", as: Int64?.self)
                )
            }
        }
    }

    /// SQLite's `PRAGMA integrity_check`: `["ok"]` for a whole file.
    static func integrityCheck(_ store: SQLAccountStore) async throws -> [String] {
        try await store.read("check the file") { database in
            try await database.raw("PRAGMA integrity_check").all().map {
                try $0.decode(column: "integrity_check", as: String.self)
            }
        }
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
        for user in users { counts[user] = rows.first { $0.0 == user.description }?.1 }
        return counts
    }

    /// The sorted values of a query's `value` column.
    private static func strings(_ database: any SQLDatabase, _ query: SQLQueryString) async throws -> [String] {
        try await database.raw(query).all().map { try $0.decode(column: "value", as: String.self) }.sorted()
    }
}
