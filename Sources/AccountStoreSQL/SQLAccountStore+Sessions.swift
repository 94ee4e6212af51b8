public import AccountStore
import SQLKit
import SQLiteNIO

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension SQLAccountStore {
    public func createSession(
        firstToken: RefreshTokenRecord,
        metadata: SessionMetadata,
        now: Date
    ) async throws(StoreError) {
        let sessionID = firstToken.sessionID.description
        let userID = firstToken.userID.description
        let hash = SQLValue.hex(firstToken.hash)
        let issuedAt = try SQLValue.milliseconds(firstToken.issuedAt)
        let expiresAt = try SQLValue.milliseconds(firstToken.expiresAt)
        let now = try SQLValue.milliseconds(now)
        try await write("create a session") { database in
            guard try await database.raw("SELECT id FROM users WHERE id = \(bind: userID)").first() != nil else {
                throw StoreError(.notFound, "create a session: no such user")
            }
            try await Self.insertSession(
                database,
                id: sessionID,
                userID: userID,
                now: now,
                metadata: metadata,
                firstToken: (hash, issuedAt, expiresAt)
            )
        }
    }

    /// Inserts a session and its first refresh token (`createSession`, and the redemption of an authorization code).
    static func insertSession(
        _ database: any SQLDatabase,
        id sessionID: String,
        userID: String,
        now: Int64,
        metadata: SessionMetadata,
        firstToken: (hash: String, issuedAt: Int64, expiresAt: Int64)
    ) async throws {
        try await database.raw(
            """
            INSERT INTO sessions (id, user_id, created_at, channel, user_agent, client_address)
            VALUES (
                \(bind: sessionID), \(bind: userID), \(bind: now), \(bind: metadata.channel?.rawValue),
                \(bind: metadata.userAgent), \(bind: metadata.clientAddress)
            )
            """
        ).run()
        try await database.raw(
            """
            INSERT INTO refresh_tokens (hash, session_id, user_id, issued_at, expires_at)
            VALUES (
                \(bind: firstToken.hash), \(bind: sessionID), \(bind: userID), \(bind: firstToken.issuedAt),
                \(bind: firstToken.expiresAt)
            )
            """
        ).run()
    }

    /// Rotates in one transaction, race-free: the presented token is marked used by a conditional
    /// `UPDATE … WHERE used_at IS NULL … RETURNING`, which at most one concurrent transaction can win. Only when it
    /// changed nothing does the store look at why (unknown, revoked, reused, expired), in the order of
    /// ``InMemoryAccountStore``.
    public func rotateRefreshToken(
        presentedHash: [UInt8],
        next: RefreshTokenSuccessor,
        now: Date,
        reuseGrace: TimeInterval
    ) async throws(StoreError) -> RotationOutcome {
        let graceStart = try SQLValue.milliseconds(now.addingTimeInterval(-max(reuseGrace, 0)))
        let presented = SQLValue.hex(presentedHash)
        let nextHash = SQLValue.hex(next.hash)
        let issuedAt = try SQLValue.milliseconds(next.issuedAt)
        let expiresAt = try SQLValue.milliseconds(next.expiresAt)
        let now = try SQLValue.milliseconds(now)
        // PostgreSQL: the claim and the successor's insert as one prepared statement (one round trip, atomic on its
        // own). No row: the token was not current; the transaction below finds out why.
        if connections.flavor == .postgres {
            let statement = PostgresStatements.RotateRefreshToken(
                now: now,
                presentedHash: presented,
                nextHash: nextHash,
                issuedAt: issuedAt,
                expiresAt: expiresAt
            )
            let rotated = try await postgres("rotate a refresh token") { connection, logger in
                try await connection.lastRow(of: statement, logger: logger)
            }
            if let (sessionID, userID) = rotated {
                return .rotated(sessionID: try SQLValue.sessionID(sessionID), userID: try SQLValue.userID(userID))
            }
        }
        // SQLite: one job on the writer (see SQLiteWriter), one statement prepared once, whose trigger inserts the
        // successor and marks the presented token used (see SQLiteStatements); its RETURNING clause, evaluated after
        // the trigger, reads the successor (current, unlike a used token that the caller might have named as the
        // next), so the answer comes with the write and no failure can fall between them. No successor: the token was
        // not current (or the schema cache is stale, see SQLiteStatements.isStaleSchema); the transaction below finds
        // out why.
        if connections.flavor == .sqlite {
            let binds: [SQLiteData] = [
                .text(presented), .text(nextHash), .integer(Int(now)), .integer(Int(issuedAt)),
                .integer(Int(expiresAt)),
            ]
            let rotated = try await sqliteWriter("rotate a refresh token") { connection -> (String, String)? in
                let row: SQLiteWriter.Row?
                do {
                    row = try connection.run(SQLiteStatements.refreshRotation, binds).first
                } catch  where SQLiteStatements.isStaleSchema(error) {
                    return nil
                }
                guard let row, let sessionID = try row.decode(column: "session_id", as: String?.self),
                    let userID = try row.decode(column: "user_id", as: String?.self)
                else { return nil }
                return (sessionID, userID)
            }
            if let (sessionID, userID) = rotated {
                return .rotated(sessionID: try SQLValue.sessionID(sessionID), userID: try SQLValue.userID(userID))
            }
        }
        let locksSessions = connections.flavor == .postgres
        return try await write("rotate a refresh token") { database in
            let claimed = try await database.raw(
                """
                UPDATE refresh_tokens SET used_at = \(bind: now)
                WHERE hash = \(bind: presented) AND used_at IS NULL AND expires_at > \(bind: now)
                    AND EXISTS (
                        SELECT 1 FROM sessions WHERE sessions.id = refresh_tokens.session_id AND sessions.revoked_at IS NULL
                    )
                RETURNING session_id, user_id
                """
            ).first()
            if let claimed {
                let sessionID = try claimed.decode(column: "session_id", as: String.self)
                let userID = try claimed.decode(column: "user_id", as: String.self)
                try await database.raw(
                    """
                    INSERT INTO refresh_tokens (hash, session_id, user_id, issued_at, expires_at)
                    VALUES (\(bind: nextHash), \(bind: sessionID), \(bind: userID), \(bind: issuedAt), \(bind: expiresAt))
                    """
                ).run()
                return .rotated(sessionID: try SQLValue.sessionID(sessionID), userID: try SQLValue.userID(userID))
            }

            let row = try await database.raw(
                """
                SELECT t.session_id AS session_id, t.user_id AS user_id, t.used_at AS used_at,
                    t.expires_at AS expires_at, s.revoked_at AS revoked_at
                FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id
                WHERE t.hash = \(bind: presented)
                """
            ).first()
            guard let row else { return .notFound }
            let sessionID = try row.decode(column: "session_id", as: String.self)
            let userID = try SQLValue.userID(row.decode(column: "user_id", as: String.self))
            let session = try SQLValue.sessionID(sessionID)
            if try row.decode(column: "revoked_at", as: Int64?.self) != nil {
                return .revoked(sessionID: session, userID: userID)
            }
            let expired = try row.decode(column: "expires_at", as: Int64.self) <= now
            if let usedAt = try row.decode(column: "used_at", as: Int64?.self) {
                if reuseGrace > 0, usedAt > graceStart, !expired {
                    // Presented again within the grace window. The family stays linear: the successor already stored
                    // (the caller derives it from the presented token) is answered as it stands; another one replaces
                    // every current token of the session. On PostgreSQL the session's row is locked first, so that
                    // concurrent presentations take turns and each sees the tokens the one before it wrote.
                    if locksSessions {
                        try await database.raw("SELECT id FROM sessions WHERE id = \(bind: sessionID) FOR UPDATE").run()
                    }
                    if let existing = try await database.raw(
                        "SELECT session_id FROM refresh_tokens WHERE hash = \(bind: nextHash)"
                    ).first() {
                        guard try existing.decode(column: "session_id", as: String.self) == sessionID else {
                            throw StoreError(.duplicate, "next refresh token exists")
                        }
                        return .rotated(sessionID: session, userID: userID)
                    }
                    try await database.raw(
                        """
                        UPDATE refresh_tokens SET used_at = \(bind: now)
                        WHERE session_id = \(bind: sessionID) AND used_at IS NULL
                        """
                    ).run()
                    try await database.raw(
                        """
                        INSERT INTO refresh_tokens (hash, session_id, user_id, issued_at, expires_at)
                        VALUES (\(bind: nextHash), \(bind: sessionID), \(bind: userID.description), \(bind: issuedAt),
                            \(bind: expiresAt))
                        """
                    ).run()
                    return .rotated(sessionID: session, userID: userID)
                }
                let ended = try await database.raw(
                    """
                    UPDATE sessions SET revoked_at = \(bind: now)
                    WHERE id = \(bind: sessionID) AND revoked_at IS NULL
                    RETURNING id, channel
                    """
                ).all().map(SQLEndedSession.init)
                try await SQLLifecycleEvents.append(
                    try SQLLifecycleEvents.ended(
                        ended,
                        userID: userID.description,
                        by: .system,
                        reason: SessionEndReason.reuse,
                        now: now
                    ),
                    to: database
                )
                return .reused(sessionID: session, userID: userID)
            }
            if expired { return .expired }
            // Current now, but not when the update ran: it was not yet visible (a racing rotation's new token).
            return .notFound
        }
    }

    /// One read; a current token whose last check is at least ``SessionRecord/lastUseResolution`` old (at most once
    /// a minute per session) is then marked checked, by one more statement.
    public func checkRefreshToken(presentedHash: [UInt8], now: Date) async throws(StoreError) -> RefreshTokenCheck {
        let presented = SQLValue.hex(presentedHash)
        let now = try SQLValue.milliseconds(now)
        let found = try await read("check a refresh token") { database in
            try await database.raw(
                """
                SELECT t.session_id AS session_id, t.user_id AS user_id, t.used_at AS used_at,
                    t.expires_at AS expires_at, t.last_checked_at AS last_checked_at, s.revoked_at AS revoked_at
                FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id
                WHERE t.hash = \(bind: presented)
                """
            ).first().map { row in
                (
                    sessionID: try row.decode(column: "session_id", as: String.self),
                    userID: try row.decode(column: "user_id", as: String.self),
                    used: try row.decode(column: "used_at", as: Int64?.self) != nil,
                    revoked: try row.decode(column: "revoked_at", as: Int64?.self) != nil,
                    expiresAt: try row.decode(column: "expires_at", as: Int64.self),
                    lastCheckedAt: try row.decode(column: "last_checked_at", as: Int64?.self)
                )
            }
        }
        guard let found else { return .notFound }
        let sessionID = try SQLValue.sessionID(found.sessionID)
        let userID = try SQLValue.userID(found.userID)
        if found.revoked { return .revoked(sessionID: sessionID, userID: userID) }
        if found.used { return .used(sessionID: sessionID, userID: userID) }
        if found.expiresAt <= now { return .expired }
        let resolution = Int64(SessionRecord.lastUseResolution * 1_000)
        if (found.lastCheckedAt ?? Int64.min) <= now - resolution {
            try await writeStatements("record a refresh token's check") { database in
                try await database.raw(
                    """
                    UPDATE refresh_tokens SET last_checked_at = \(bind: now)
                    WHERE hash = \(bind: presented)
                        AND (last_checked_at IS NULL OR last_checked_at <= \(bind: now - resolution))
                    """
                ).run()
            }
        }
        return .current(sessionID: sessionID, userID: userID)
    }

    public func session(
        refreshTokenHash: [UInt8]
    ) async throws(StoreError) -> (sessionID: SessionID, userID: UserID)? {
        let hash = SQLValue.hex(refreshTokenHash)
        return try await read("find a session") { database in
            let row = try await database.raw(
                "SELECT session_id, user_id FROM refresh_tokens WHERE hash = \(bind: hash)"
            ).first()
            guard let row else { return nil }
            return (
                sessionID: try SQLValue.sessionID(row.decode(column: "session_id", as: String.self)),
                userID: try SQLValue.userID(row.decode(column: "user_id", as: String.self))
            )
        }
    }

    @discardableResult
    public func revokeSession(
        _ sessionID: SessionID,
        by actor: AuditActor,
        reason: String,
        now: Date
    ) async throws(StoreError) -> Bool {
        let sessionID = sessionID.description
        let now = try SQLValue.milliseconds(now)
        return try await write("revoke a session") { database in
            let row = try await database.raw(
                """
                UPDATE sessions SET revoked_at = \(bind: now)
                WHERE id = \(bind: sessionID) AND revoked_at IS NULL
                RETURNING user_id, channel
                """
            ).first()
            guard let row else { return false }
            let userID = try row.decode(column: "user_id", as: String.self)
            let ended = SQLEndedSession(id: sessionID, channel: try row.decode(column: "channel", as: String?.self))
            try await SQLLifecycleEvents.append(
                try SQLLifecycleEvents.ended([ended], userID: userID, by: actor, reason: reason, now: now),
                to: database
            )
            return true
        }
    }

    @discardableResult
    public func revokeSessions(
        userID: UserID,
        by actor: AuditActor,
        reason: String,
        now: Date
    ) async throws(StoreError) -> [SessionID] {
        let userID = userID.description
        let now = try SQLValue.milliseconds(now)
        // The closure returns plain strings and the typed conversion happens outside it: Swift 6.3's optimizer
        // crashes (signal 11 while splitting the coroutine) on a typed-throws call inside this closure in release.
        let ids = try await write("revoke a user's sessions") { database in
            let ended = try await Self.endActiveSessions(database, userID: userID, now: now)
            try await SQLLifecycleEvents.append(
                try SQLLifecycleEvents.ended(ended, userID: userID, by: actor, reason: reason, now: now),
                to: database
            )
            return ended.map(\.id)
        }
        var sessionIDs: [SessionID] = []
        for id in ids { sessionIDs.append(try SQLValue.sessionID(id)) }
        return sessionIDs
    }

    public func revokedSessions(since: Date) async throws(StoreError) -> [SessionRevocation] {
        let since = try SQLValue.milliseconds(since)
        return try await read("list revoked sessions") { database in
            try await database.raw(
                """
                SELECT id, user_id, revoked_at FROM sessions
                WHERE revoked_at >= \(bind: since)
                ORDER BY revoked_at, id
                """
            ).all().map(SQLRecords.revocation)
        }
    }
}
