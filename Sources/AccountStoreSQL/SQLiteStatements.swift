import SQLiteNIO

/// SQLite's single-statement forms of a returning user's sign-in and of a refresh.
///
/// SQLiteNIO prepares every statement anew and runs each on its thread pool (a hop there and back), and SQLite takes
/// one writer at a time, so the statements inside a write transaction are what bounds the write rate. Here each of
/// the two writes on the request path is one `INSERT` into a temporary view whose `INSTEAD OF` trigger does the work,
/// atomically (one statement commits on its own). The views and triggers are `TEMP`: every connection creates them
/// when it opens, they are not part of the stored schema, and they change nothing in the database file. The answer
/// (the account, the new token's session) is then read by a plain `SELECT`, outside the write lock.
///
/// A connection whose schema cache predates the tables (opened before a migration, here or in another process)
/// cannot compile the triggers: SQLite reloads a stale schema for a statement's own tables, but not for those of the
/// trigger it fires, and answers "no such table" (or "no such column", for a column a later migration added). ``isStaleSchema(_:)`` recognises that answer; the caller then takes
/// the general path (nothing was written), whose plain statements make SQLite reload the schema.
enum SQLiteStatements {
    /// The sign-in view's columns after the account update's (``SQLAccountUpdate/Value``).
    static let returningSignInColumns = [
        "session_id", "refresh_token_hash", "issued_at", "expires_at", "channel", "user_agent", "client_address",
        "event_id",
    ]

    /// Whether `error` is a trigger compiled against a stale schema cache (see above).
    static func isStaleSchema(_ error: any Error) -> Bool {
        let message: String
        if let error = error as? SQLiteWriterError, error.primaryCode == 1 {  // SQLITE_ERROR
            message = error.message
        } else if let error = error as? SQLiteError, error.reason == .error {
            message = error.message
        } else {
            return false
        }
        return message.hasPrefix("no such table") || message.hasPrefix("no such column")
    }

    /// A returning user's sign-in: its values in the order of ``SQLAccountUpdate/Value`` and then
    /// ``returningSignInColumns`` (the caller binds them by position).
    static let returningSignIn = """
        INSERT INTO returning_sign_ins (
            client_id, email, email_verified, is_private_email, given_name, family_name, now,
            apple_user_id, email_key, given_name_key, family_name_key, session_id, refresh_token_hash,
            issued_at, expires_at, channel, user_agent, client_address, event_id
        ) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)
        """

    /// The account of a session (`?1`), after the sign-in that started it.
    static let userOfSession = """
        SELECT \(SQLRecords.userColumns) FROM users WHERE id = (SELECT user_id FROM sessions WHERE id = ?1)
        """

    /// A refresh token's rotation: the presented hash, the next hash, now, and the next token's issue and expiry
    /// times. Its one row names the successor's session and user, or holds NULLs when nothing rotated. The successor
    /// must be the one this statement inserted (its issue time is this rotation's): siwa derives successors from the
    /// presented token, so a token presented again names a successor that a rotation before it already stored, and
    /// finding that one current must not pass for a rotation.
    static let refreshRotation = """
        INSERT INTO refresh_rotations (presented_hash, next_hash, now, issued_at, expires_at)
        VALUES (?1, ?2, ?3, ?4, ?5)
        RETURNING
            (SELECT session_id FROM refresh_tokens WHERE hash = ?2 AND used_at IS NULL AND issued_at = ?4) AS session_id,
            (SELECT user_id FROM refresh_tokens WHERE hash = ?2 AND used_at IS NULL AND issued_at = ?4) AS user_id
        """

    /// Created on the writer's connection when it opens (temporary objects belong to their connection).
    static let connectionSetup: [String] = [
        """
        CREATE TEMP VIEW IF NOT EXISTS returning_sign_ins (
            \(SQLAccountUpdate.Value.allCases.map(\.column).joined(separator: ", ")),
            \(returningSignInColumns.joined(separator: ", "))
        ) AS SELECT \(
            Array(
                repeating: "NULL",
                count: SQLAccountUpdate.Value.allCases.count + returningSignInColumns.count
            ).joined(separator: ", ")
        )
        WHERE 0
        """,
        // A returning user: the account's update, then the session, its first refresh token and the sign-in's audit
        // event (not for a disabled account: the caller then finds no session and takes the general path). No account
        // with this Apple user id: nothing changes.
        """
        CREATE TEMP TRIGGER IF NOT EXISTS returning_sign_in INSTEAD OF INSERT ON returning_sign_ins BEGIN
            \(SQLAccountUpdate.sql { "NEW.\($0.column)" });
            INSERT INTO sessions (id, user_id, created_at, channel, user_agent, client_address)
            SELECT NEW.session_id, id, NEW.now, NEW.channel, NEW.user_agent, NEW.client_address FROM users
            WHERE apple_user_id = NEW.apple_user_id AND disabled_at IS NULL;
            INSERT INTO refresh_tokens (hash, session_id, user_id, issued_at, expires_at)
            SELECT NEW.refresh_token_hash, NEW.session_id, id, NEW.issued_at, NEW.expires_at
            FROM users WHERE apple_user_id = NEW.apple_user_id AND disabled_at IS NULL;
            \(SQLAuditLog.returningSignIn(
                id: "NEW.event_id", now: "NEW.now", channel: "NEW.channel", clientID: "NEW.client_id",
                sessionID: "NEW.session_id",
                from: "users WHERE apple_user_id = NEW.apple_user_id AND disabled_at IS NULL"
            ));
        END
        """,
        """
        CREATE TEMP VIEW IF NOT EXISTS refresh_rotations (presented_hash, next_hash, now, issued_at, expires_at)
        AS SELECT NULL, NULL, NULL, NULL, NULL WHERE 0
        """,
        // The successor is inserted only while the presented token is current and its session live, and the presented
        // token is marked used only when its successor was inserted. Writers take turns, so two rotations of one
        // token cannot both see it current.
        """
        CREATE TEMP TRIGGER IF NOT EXISTS refresh_rotation INSTEAD OF INSERT ON refresh_rotations BEGIN
            INSERT INTO refresh_tokens (hash, session_id, user_id, issued_at, expires_at)
            SELECT NEW.next_hash, session_id, user_id, NEW.issued_at, NEW.expires_at FROM refresh_tokens
            WHERE hash = NEW.presented_hash AND used_at IS NULL AND expires_at > NEW.now
                AND EXISTS (
                    SELECT 1 FROM sessions
                    WHERE sessions.id = refresh_tokens.session_id AND sessions.revoked_at IS NULL
                );
            UPDATE refresh_tokens SET used_at = NEW.now
            WHERE hash = NEW.presented_hash AND used_at IS NULL
                AND EXISTS (SELECT 1 FROM refresh_tokens AS successor WHERE successor.hash = NEW.next_hash);
        END
        """,
    ]
}
