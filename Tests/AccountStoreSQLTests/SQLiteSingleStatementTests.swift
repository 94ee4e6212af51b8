import AccountStore
import AppleSignIn
import SQLiteNIO
import Testing

@testable import AccountStoreSQL

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// SQLite's single-statement sign-in and refresh (`SQLiteStatements`), run directly on a connection: the triggers do
/// the work themselves. (The store falls back to its transaction when a trigger cannot run, so its own tests would
/// pass with broken triggers too.)
@Suite struct SQLiteSingleStatementTests {
    @Test func theTriggersSignInAndRotateOnTheirOwn() async throws {
        try await StoreHarness.withSQLitePath { path in
            let now = Date(timeIntervalSince1970: 1_767_225_600)
            let apple = AppleUserID("001.trigger.1")
            let user = try await StoreHarness.withSQLiteStore(path: path) { store in
                try await store.signIn(AppleSignInFacts(appleUserID: apple, clientID: "com.example.app"), now: now).user
            }
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            do {
                for statement in SQLiteStatements.connectionSetup { _ = try await connection.query(statement, []) }
                let milliseconds = try SQLValue.milliseconds(now)
                let session = SessionID()
                let first = SQLValue.hex(Array(repeating: 1, count: 32))
                let eventID = UUID().uuidString.lowercased()
                _ = try await connection.query(
                    """
                    INSERT INTO returning_sign_ins (
                        client_id, email, email_verified, is_private_email, given_name, family_name, now,
                        apple_user_id, email_key, given_name_key, family_name_key, session_id, refresh_token_hash,
                        issued_at, expires_at, channel, user_agent, client_address, event_id
                    ) VALUES (?, ?, 1, 0, ?, NULL, ?, ?, ?, ?, NULL, ?, ?, ?, ?, 'web', 'Agent/1', '192.0.2.1', ?)
                    """,
                    [
                        .text("com.example.app"), .text("T@example.com"), .text("Tia"), .integer(Int(milliseconds)),
                        .text(apple.rawValue), .text("t@example.com"), .text("tia"), .text(session.description),
                        .text(first), .integer(Int(milliseconds)), .integer(Int(milliseconds) + 3_600_000),
                        .text(eventID),
                    ]
                )
                let account = try await connection.query(
                    "SELECT email, email_key, given_name, given_name_key FROM users WHERE id = ?",
                    [.text(user.id.description)]
                )
                #expect(account.first?.column("email")?.string == "T@example.com", "the trigger updated the account")
                #expect(account.first?.column("email_key")?.string == "t@example.com", "and its search keys")
                #expect(account.first?.column("given_name")?.string == "Tia")
                #expect(account.first?.column("given_name_key")?.string == "tia")
                let metadata = try await connection.query(
                    "SELECT channel, user_agent, client_address FROM sessions WHERE id = ?",
                    [.text(session.description)]
                )
                #expect(metadata.first?.column("user_agent")?.string == "Agent/1", "the session has its metadata")
                let event = try await connection.query(
                    "SELECT type, user_id, session_id, channel FROM audit_events WHERE id = ?",
                    [.text(eventID)]
                )
                #expect(event.first?.column("type")?.string == "sign_in", "and the sign-in its audit event")
                #expect(event.first?.column("user_id")?.string == user.id.description)
                #expect(event.first?.column("channel")?.string == "web")
                let stored = try await connection.query(
                    "SELECT session_id FROM refresh_tokens WHERE hash = ?",
                    [.text(first)]
                )
                #expect(stored.first?.column("session_id")?.string == session.description, "and stored the session")

                func rotate(_ presented: String, to next: String) async throws -> String? {
                    try await connection.query(
                        """
                        INSERT INTO refresh_rotations (presented_hash, next_hash, now, issued_at, expires_at)
                        VALUES (?, ?, ?, ?, ?)
                        RETURNING (SELECT session_id FROM refresh_tokens WHERE hash = ? AND used_at IS NULL) AS s
                        """,
                        [
                            .text(presented), .text(next), .integer(Int(milliseconds)), .integer(Int(milliseconds)),
                            .integer(Int(milliseconds) + 3_600_000), .text(next),
                        ]
                    ).first?.column("s")?.string
                }
                let second = SQLValue.hex(Array(repeating: 2, count: 32))
                #expect(try await rotate(first, to: second) == session.description, "the current token rotates")
                let third = SQLValue.hex(Array(repeating: 3, count: 32))
                #expect(try await rotate(first, to: third) == nil, "a used token does not rotate again")
                try await connection.close().get()
            } catch {
                try await connection.close().get()
                throw error
            }
        }
    }
}
