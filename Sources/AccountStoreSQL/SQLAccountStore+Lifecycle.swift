public import AccountStore
import AppleSignIn
import SQLKit

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

// Closures passed to `read`/`write` call only untyped-throwing functions: Swift 6.3's optimizer crashes (signal 11)
// on typed-throws calls inside these async closures in release builds.

extension SQLAccountStore {
    // MARK: Deletion and consent

    public func deleteUser(
        id: UserID,
        mode: AccountDeletionMode,
        appleRevocationDueAt: Date?,
        by actor: AuditActor,
        now: Date
    ) async throws(StoreError) -> DeletedAccount? {
        let userID = id.description
        let now = try SQLValue.milliseconds(now)
        let dueAt = try appleRevocationDueAt.map { date throws(StoreError) in try SQLValue.milliseconds(date) }
        let revocationID = UUID()
        return try await write("delete a user") { database in
            try await Self.removeAccount(
                database,
                userID: userID,
                mode: mode,
                queueRevocation: dueAt.map { (revocationID, $0) },
                by: actor,
                now: now
            )
        }
    }

    public func deletedAccounts(since: Date) async throws(StoreError) -> [AccountDeletion] {
        let since = try SQLValue.milliseconds(since)
        return try await read("list deleted accounts") { database in
            try await database.raw(
                """
                SELECT user_id, deleted_at FROM account_deletions
                WHERE deleted_at >= \(bind: since)
                ORDER BY deleted_at, user_id
                """
            ).all().map { row in
                AccountDeletion(
                    userID: try Self.userID(row.decode(column: "user_id", as: String.self)),
                    deletedAt: SQLValue.date(milliseconds: try row.decode(column: "deleted_at", as: Int64.self))
                )
            }
        }
    }

    public func usersChanged(since: Date) async throws(StoreError) -> [UserID] {
        let since = try SQLValue.milliseconds(since)
        return try await read("list changed users") { database in
            try await database.raw(
                """
                SELECT id FROM users WHERE updated_at >= \(bind: since)
                UNION
                SELECT user_id AS id FROM account_deletions WHERE deleted_at >= \(bind: since)
                """
            ).all().map { row in try Self.userID(row.decode(column: "id", as: String.self)) }
        }
    }

    @discardableResult
    public func endAppleConsent(userID: UserID, by actor: AuditActor, now: Date) async throws(StoreError) -> [SessionID]
    {
        let userID = userID.description
        let now = try SQLValue.milliseconds(now)
        return try await write("end a user's Apple consent") { database in
            try await Self.endConsent(database, userID: userID, by: actor, now: now)
        }
    }

    // MARK: Disabling

    public func disableUser(id: UserID, by actor: AuditActor, now: Date) async throws(StoreError) -> DisabledAccount? {
        let userID = id.description
        let now = try SQLValue.milliseconds(now)
        return try await write("disable a user") { database in
            let row = try await database.raw(
                """
                UPDATE users SET disabled_at = COALESCE(disabled_at, \(bind: now)), updated_at = \(bind: now)
                WHERE id = \(bind: userID)
                RETURNING \(unsafeRaw: SQLRecords.userColumns)
                """
            ).first()
            guard let row else { return nil }
            let ended = try await Self.endActiveSessions(database, userID: userID, now: now)
            let user = try SQLRecords.user(row)
            try await SQLLifecycleEvents.append(
                try SQLLifecycleEvents.ended(
                    ended,
                    userID: userID,
                    by: actor,
                    reason: SessionEndReason.accountDisabled,
                    now: now
                ) + [.account(.userDisabled, user.id, by: actor, time: SQLValue.date(milliseconds: now))],
                to: database
            )
            return DisabledAccount(user: user, endedSessions: try Self.sessionIDs(ended))
        }
    }

    @discardableResult
    public func enableUser(id: UserID, by actor: AuditActor, now: Date) async throws(StoreError) -> UserRecord? {
        let userID = id.description
        let now = try SQLValue.milliseconds(now)
        return try await write("enable a user") { database in
            if let enabled = try await database.raw(
                """
                UPDATE users SET disabled_at = NULL, updated_at = \(bind: now)
                WHERE id = \(bind: userID) AND disabled_at IS NOT NULL
                RETURNING \(unsafeRaw: SQLRecords.userColumns)
                """
            ).first() {
                let user = try SQLRecords.user(enabled)
                try await SQLLifecycleEvents.append(
                    [.account(.userEnabled, user.id, by: actor, time: SQLValue.date(milliseconds: now))],
                    to: database
                )
                return user
            }
            return try await database.raw(
                "SELECT \(unsafeRaw: SQLRecords.userColumns) FROM users WHERE id = \(bind: userID)"
            ).first().map(SQLRecords.user)
        }
    }

    // MARK: Apple token validation

    public func appleTokensDue(validatedBefore: Date, limit: Int) async throws(StoreError) -> [AppleTokenRecord] {
        guard limit > 0 else { return [] }
        let before = try SQLValue.milliseconds(validatedBefore)
        let limit = Int64(limit)
        return try await read("list Apple tokens due for validation") { database in
            try await database.raw(
                """
                SELECT \(unsafeRaw: SQLRecords.appleTokenColumns) FROM apple_tokens
                WHERE last_validated_at IS NULL OR last_validated_at < \(bind: before)
                ORDER BY COALESCE(last_validated_at, 0), user_id
                LIMIT \(bind: limit)
                """
            ).all().map(SQLRecords.appleToken)
        }
    }

    /// The claim is one conditional `UPDATE … RETURNING`: of racing claims, the first to commit changes the row and
    /// the others no longer match it.
    public func claimAppleTokenValidation(
        userID: UserID,
        validatedBefore: Date,
        now: Date
    ) async throws(StoreError) -> AppleTokenRecord? {
        let userID = userID.description
        let before = try SQLValue.milliseconds(validatedBefore)
        let now = try SQLValue.milliseconds(now)
        return try await write("claim an Apple token validation") { database in
            try await database.raw(
                """
                UPDATE apple_tokens SET last_validated_at = \(bind: now)
                WHERE user_id = \(bind: userID)
                    AND (last_validated_at IS NULL OR last_validated_at < \(bind: before))
                RETURNING \(unsafeRaw: SQLRecords.appleTokenColumns)
                """
            ).first().map(SQLRecords.appleToken)
        }
    }

    public func setAppleTokenValidated(userID: UserID, at date: Date) async throws(StoreError) {
        let userID = userID.description
        let date = try SQLValue.milliseconds(date)
        try await write("set an Apple token's validation time") { database in
            try await database.raw(
                "UPDATE apple_tokens SET last_validated_at = \(bind: date) WHERE user_id = \(bind: userID)"
            ).run()
        }
    }

    // MARK: Apple revocation queue

    public func dueAppleRevocations(now: Date, limit: Int) async throws(StoreError) -> [PendingAppleRevocation] {
        guard limit > 0 else { return [] }
        let now = try SQLValue.milliseconds(now)
        let limit = Int64(limit)
        return try await read("list due Apple revocations") { database in
            try await database.raw(
                """
                SELECT \(unsafeRaw: SQLRecords.revocationQueueColumns) FROM apple_revocations
                WHERE next_attempt_at <= \(bind: now)
                ORDER BY created_at, id
                LIMIT \(bind: limit)
                """
            ).all().map(SQLRecords.pendingRevocation)
        }
    }

    public func pendingAppleRevocationCount() async throws(StoreError) -> Int {
        try await read("count queued Apple revocations") { database in
            let row = try await database.raw("SELECT COUNT(*) AS n FROM apple_revocations").first()
            return Int(try row?.decode(column: "n", as: Int64.self) ?? 0)
        }
    }

    public func finishAppleRevocation(id: UUID) async throws(StoreError) {
        let id = id.lowercasedText
        try await write("finish an Apple revocation") { database in
            try await database.raw("DELETE FROM apple_revocations WHERE id = \(bind: id)").run()
        }
    }

    public func postponeAppleRevocation(id: UUID, until: Date, error: String) async throws(StoreError) {
        let id = id.lowercasedText
        let until = try SQLValue.milliseconds(until)
        let error = String(error.prefix(500))
        try await write("postpone an Apple revocation") { database in
            try await database.raw(
                """
                UPDATE apple_revocations
                SET attempts = attempts + 1, next_attempt_at = \(bind: until), last_error = \(bind: error)
                WHERE id = \(bind: id)
                """
            ).run()
        }
    }

    // MARK: Apple notifications

    /// The event row is inserted first with `ON CONFLICT DO NOTHING`: a concurrent delivery of the same event waits
    /// on the key and then inserts nothing, so exactly one delivery applies the action.
    public func applyAppleNotification(
        _ event: AppleNotificationRecord,
        action: AppleNotificationAction,
        now: Date
    ) async throws(StoreError) -> AppleNotificationOutcome {
        let eventKey = event.eventKey
        let type = event.type
        let appleUserID = event.appleUserID.rawValue
        let eventTime = try SQLValue.milliseconds(event.eventTime)
        let now = try SQLValue.milliseconds(now)
        return try await write("apply an Apple notification") { database in
            let userID = try await database.raw("SELECT id FROM users WHERE apple_user_id = \(bind: appleUserID)")
                .first()?.decode(column: "id", as: String.self)
            let stale: Bool
            switch (userID, action) {
            case (let userID?, .endConsent):
                // Older than the user's latest sign-in: the consent was given again since.
                let latest = try await database.raw(
                    "SELECT MAX(created_at) AS latest FROM sessions WHERE user_id = \(bind: userID)"
                ).first()?.decode(column: "latest", as: Int64?.self)
                let leeway = Int64(AppleNotificationRecord.consentOrderingLeeway * 1000)
                stale = latest.map { eventTime < $0 - leeway } ?? false
            case (.some, .setEmailForwarding):
                let enabled = "email-enabled"
                let disabled = "email-disabled"
                let latest = try await database.raw(
                    """
                    SELECT MAX(event_time) AS latest FROM apple_notifications
                    WHERE apple_user_id = \(bind: appleUserID) AND outcome = 'applied'
                        AND type IN (\(bind: enabled), \(bind: disabled))
                    """
                ).first()?.decode(column: "latest", as: Int64?.self)
                stale = latest.map { eventTime < $0 } ?? false
            default:
                stale = false
            }
            let outcome =
                switch (userID, action) {
                case (nil, _): "unknown_user"
                case (_, .none): "ignored"
                case _ where stale: "stale"
                default: "applied"
                }
            let inserted = try await database.raw(
                """
                INSERT INTO apple_notifications (
                    event_key, type, apple_user_id, user_id, event_time, received_at, outcome
                ) VALUES (
                    \(bind: eventKey), \(bind: type), \(bind: appleUserID), \(bind: userID), \(bind: eventTime),
                    \(bind: now), \(bind: outcome)
                )
                ON CONFLICT (event_key) DO NOTHING
                RETURNING \(unsafeRaw: SQLRecords.notificationColumns)
                """
            ).first()
            guard let inserted else {
                let earlier = try await database.raw(
                    """
                    SELECT \(unsafeRaw: SQLRecords.notificationColumns) FROM apple_notifications
                    WHERE event_key = \(bind: eventKey)
                    """
                ).first()
                guard let earlier else { throw StoreError(.unavailable, "the notification log changed meanwhile") }
                return AppleNotificationOutcome.duplicate(try SQLRecords.notification(earlier))
            }
            let record = try SQLRecords.notification(inserted)
            guard let userID, !stale else { return .applied(record, endedSessions: [], deletedUser: nil) }
            switch action {
            case .endConsent:
                let ended = try await Self.endConsent(database, userID: userID, by: .apple, now: now)
                return .applied(record, endedSessions: ended, deletedUser: nil)
            case .deleteAccount(let mode):
                let deleted = try await Self.removeAccount(
                    database,
                    userID: userID,
                    mode: mode,
                    queueRevocation: nil,
                    by: .apple,
                    now: now
                )
                return .applied(record, endedSessions: deleted?.endedSessions ?? [], deletedUser: deleted?.user.id)
            case .setEmailForwarding(let forwarding):
                try await database.raw(
                    """
                    UPDATE users SET email_forwarding = \(bind: SQLValue.flag(forwarding)), updated_at = \(bind: now)
                    WHERE id = \(bind: userID)
                    """
                ).run()
                try await SQLLifecycleEvents.append(
                    [
                        .emailForwarding(
                            forwarding,
                            userID: try Self.userID(userID),
                            time: SQLValue.date(milliseconds: now)
                        )
                    ],
                    to: database
                )
                return .applied(record, endedSessions: [], deletedUser: nil)
            case .none:
                return .applied(record, endedSessions: [], deletedUser: nil)
            }
        }
    }

    public func appleNotifications(limit: Int) async throws(StoreError) -> [AppleNotificationRecord] {
        guard limit > 0 else { return [] }
        let limit = Int64(limit)
        return try await read("list Apple notifications") { database in
            try await database.raw(
                """
                SELECT \(unsafeRaw: SQLRecords.notificationColumns) FROM apple_notifications
                ORDER BY received_at DESC, event_key DESC
                LIMIT \(bind: limit)
                """
            ).all().map(SQLRecords.notification)
        }
    }

    // MARK: Web sign-in states

    public func saveWebFlowState(_ state: WebFlowState) async throws(StoreError) {
        let hash = SQLValue.hex(state.stateHash)
        let nonce = state.nonce
        let returnURL = state.returnURL
        let createdAt = try SQLValue.milliseconds(state.createdAt)
        let expiresAt = try SQLValue.milliseconds(state.expiresAt)
        try await write("save a web sign-in state") { database in
            try await database.raw(
                """
                INSERT INTO web_flow_states (state_hash, nonce, return_url, created_at, expires_at)
                VALUES (\(bind: hash), \(bind: nonce), \(bind: returnURL), \(bind: createdAt), \(bind: expiresAt))
                """
            ).run()
        }
    }

    public func consumeWebFlowState(stateHash: [UInt8], now: Date) async throws(StoreError) -> WebFlowStateOutcome {
        let hash = SQLValue.hex(stateHash)
        let now = try SQLValue.milliseconds(now)
        return try await write("use a web sign-in state") { database in
            let consumed = try await database.raw(
                """
                UPDATE web_flow_states SET used_at = \(bind: now)
                WHERE state_hash = \(bind: hash) AND used_at IS NULL AND expires_at > \(bind: now)
                RETURNING state_hash, nonce, return_url, created_at, expires_at
                """
            ).first()
            if let consumed { return WebFlowStateOutcome.consumed(try SQLRecords.webFlowState(consumed)) }
            let row = try await database.raw(
                "SELECT used_at FROM web_flow_states WHERE state_hash = \(bind: hash)"
            ).first()
            guard let row else { return .notFound }
            return try row.decode(column: "used_at", as: Int64?.self) != nil ? .alreadyUsed : .expired
        }
    }

    // MARK: Housekeeping

    public func purgeExpired(now: Date, retention: TimeInterval) async throws(StoreError) -> PurgeResult {
        let cutoff = try SQLValue.milliseconds(now.addingTimeInterval(-retention))
        let now = try SQLValue.milliseconds(now)
        let oldSessions: SQLQueryString = """
            (revoked_at IS NOT NULL AND revoked_at <= \(bind: cutoff))
                OR (revoked_at IS NULL AND created_at <= \(bind: cutoff) AND NOT EXISTS (
                    SELECT 1 FROM refresh_tokens t
                    WHERE t.session_id = sessions.id AND t.expires_at > \(bind: cutoff)
                ))
            """
        let nonces = try await purge("server_nonces", key: "hash", where: "expires_at <= \(bind: now)")
        let states = try await purge("web_flow_states", key: "state_hash", where: "expires_at <= \(bind: now)")
        let tokens = try await purge(
            "refresh_tokens",
            key: "hash",
            where: "expires_at <= \(bind: cutoff) OR session_id IN (SELECT id FROM sessions WHERE \(oldSessions))"
        )
        let sessions = try await purge(
            "sessions",
            key: "id",
            where: """
                (\(oldSessions)) AND NOT EXISTS (SELECT 1 FROM refresh_tokens t WHERE t.session_id = sessions.id)
                """
        )
        let deletions = try await purge(
            "account_deletions",
            key: "user_id, deleted_at",
            where: "deleted_at <= \(bind: cutoff)"
        )
        let codes = try await purge("authorization_codes", key: "code_hash", where: "expires_at <= \(bind: cutoff)")
        return PurgeResult(
            serverNonces: nonces,
            webFlowStates: states,
            refreshTokens: tokens,
            sessions: sessions,
            accountDeletions: deletions,
            authorizationCodes: codes
        )
    }

    /// Deletes the rows of `table` that match `condition`, ``purgeBatch`` at a time, each batch a write of its own,
    /// and returns how many. A purge after a long pause can match millions of rows: in one statement it would hold the
    /// writer (and every sign-in behind it) for its whole length, and on SQLite its savepoint would keep a copy of
    /// every page it changed in memory (the writer's temporary storage is memory; see ``SQLiteWriter``).
    /// - Parameter key: the table's primary key: its column, or its columns separated by commas.
    func purge(_ table: String, key: String, where condition: SQLQueryString) async throws(StoreError) -> Int {
        let batch = Self.purgeBatch
        var total = 0
        while true {
            let deleted = try await writeStatements("purge expired rows of \(table)") { database in
                try await database.raw(
                    """
                    DELETE FROM \(unsafeRaw: table) WHERE (\(unsafeRaw: key)) IN (
                        SELECT \(unsafeRaw: key) FROM \(unsafeRaw: table) WHERE \(condition) LIMIT \(bind: batch)
                    )
                    RETURNING 1
                    """
                ).all().count
            }
            total += deleted
            if deleted < batch { return total }
        }
    }

    /// Rows deleted per write by the purges: small enough that one batch's changed pages (about three per row where
    /// the indexes are random) stay a few megabytes.
    package static let purgeBatch = 1_000

    // MARK: Steps shared by transactions

    private static func userID(_ text: String) throws -> UserID { try SQLValue.userID(text) }

    /// Ends the user's active sessions inside the caller's transaction; returns their ids.
    static func endActiveSessions(
        _ database: any SQLDatabase,
        userID: String,
        now: Int64
    ) async throws -> [SQLEndedSession] {
        try await database.raw(
            """
            UPDATE sessions SET revoked_at = \(bind: now)
            WHERE user_id = \(bind: userID) AND revoked_at IS NULL
            RETURNING id, channel
            """
        ).all().map(SQLEndedSession.init)
    }

    private static func sessionIDs(_ ended: [SQLEndedSession]) throws -> [SessionID] {
        try ended.map { session in try SQLValue.sessionID(session.id) }
    }

    /// Ends every session, drops the Apple token and marks the consent revoked.
    private static func endConsent(
        _ database: any SQLDatabase,
        userID: String,
        by actor: AuditActor,
        now: Int64
    ) async throws -> [SessionID] {
        let ended = try await endActiveSessions(database, userID: userID, now: now)
        try await database.raw("DELETE FROM apple_tokens WHERE user_id = \(bind: userID)").run()
        try await database.raw(
            """
            UPDATE users SET apple_consent_revoked_at = \(bind: now), updated_at = \(bind: now)
            WHERE id = \(bind: userID)
            """
        ).run()
        try await SQLLifecycleEvents.append(
            try SQLLifecycleEvents.ended(
                ended,
                userID: userID,
                by: actor,
                reason: SessionEndReason.appleConsentRevoked,
                now: now
            ) + [
                .account(
                    .userConsentRevoked,
                    try Self.userID(userID),
                    by: actor,
                    time: SQLValue.date(milliseconds: now)
                )
            ],
            to: database
        )
        return try sessionIDs(ended)
    }

    /// Deletes or anonymises an account inside a transaction; `nil` when it does not exist.
    private static func removeAccount(
        _ database: any SQLDatabase,
        userID: String,
        mode: AccountDeletionMode,
        queueRevocation: (id: UUID, dueAt: Int64)?,
        by actor: AuditActor,
        now: Int64
    ) async throws -> DeletedAccount? {
        let row = try await database.raw(
            "SELECT \(unsafeRaw: SQLRecords.userColumns) FROM users WHERE id = \(bind: userID)"
        ).first()
        guard let row else { return nil }
        let user = try SQLRecords.user(row)
        let ended = try await endActiveSessions(database, userID: userID, now: now)
        var queued: PendingAppleRevocation?
        if let queueRevocation,
            let token = try await database.raw(
                "SELECT \(unsafeRaw: SQLRecords.appleTokenColumns) FROM apple_tokens WHERE user_id = \(bind: userID)"
            ).first().map(SQLRecords.appleToken)
        {
            let id = queueRevocation.id.lowercasedText
            let inserted = try await database.raw(
                """
                INSERT INTO apple_revocations (
                    id, user_id, client_id, sealed_refresh_token, created_at, attempts, next_attempt_at
                ) VALUES (
                    \(bind: id), \(bind: userID), \(bind: token.clientID.rawValue),
                    \(bind: SQLValue.base64(token.encryptedRefreshToken)), \(bind: now), 0,
                    \(bind: queueRevocation.dueAt)
                )
                RETURNING \(unsafeRaw: SQLRecords.revocationQueueColumns)
                """
            ).first()
            queued = try inserted.map(SQLRecords.pendingRevocation)
        }
        // By session: `refresh_tokens` has no index on its `user_id` (schema version 7).
        try await database.raw(
            """
            DELETE FROM refresh_tokens WHERE session_id IN (SELECT id FROM sessions WHERE user_id = \(bind: userID))
            """
        ).run()
        try await database.raw("DELETE FROM authorization_codes WHERE user_id = \(bind: userID)").run()
        try await database.raw("DELETE FROM client_redirect_consents WHERE user_id = \(bind: userID)").run()
        try await database.raw("DELETE FROM apple_tokens WHERE user_id = \(bind: userID)").run()
        try await database.raw("DELETE FROM user_transfers WHERE user_id = \(bind: userID)").run()
        // The notification log keeps the events (and their keys, so that a redelivery stays a duplicate) but not who
        // they were about: the Apple user id goes, and with a deletion the siwa id too.
        let forgotten = AppleNotificationRecord.forgottenAppleUserID
        let keepsUserID = mode == .anonymise
        try await database.raw(
            """
            UPDATE apple_notifications
            SET apple_user_id = \(bind: forgotten), user_id = CASE WHEN \(bind: keepsUserID) THEN user_id ELSE NULL END
            WHERE user_id = \(bind: userID) OR apple_user_id = \(bind: user.appleUserID.rawValue)
            """
        ).run()
        switch mode {
        case .delete:
            try await database.raw("DELETE FROM sessions WHERE user_id = \(bind: userID)").run()
            try await database.raw("DELETE FROM users WHERE id = \(bind: userID)").run()
        case .anonymise:
            try await database.raw(
                """
                UPDATE users SET
                    apple_user_id = \(bind: "anonymised:\(userID)"),
                    email = NULL, email_key = NULL, email_verified = 0, is_private_email = 0,
                    given_name = NULL, given_name_key = NULL, family_name = NULL, family_name_key = NULL,
                    updated_at = \(bind: now)
                WHERE id = \(bind: userID)
                """
            ).run()
        }
        try await database.raw(
            """
            INSERT INTO account_deletions (user_id, deleted_at) VALUES (\(bind: userID), \(bind: now))
            ON CONFLICT (user_id, deleted_at) DO NOTHING
            """
        ).run()
        try await SQLLifecycleEvents.forgetPerson(userID: userID, in: database)
        try await SQLLifecycleEvents.append(
            try SQLLifecycleEvents.ended(
                ended,
                userID: userID,
                by: actor,
                reason: SessionEndReason.accountDeleted,
                now: now
            ) + [
                .deleted(
                    user.id,
                    mode: mode,
                    by: actor,
                    appleRevocationQueued: queued != nil,
                    time: SQLValue.date(milliseconds: now)
                )
            ],
            to: database
        )
        return DeletedAccount(user: user, endedSessions: try sessionIDs(ended), queuedRevocation: queued)
    }
}
