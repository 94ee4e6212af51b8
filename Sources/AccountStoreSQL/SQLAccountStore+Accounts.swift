public import AccountStore
public import AppleSignIn
import PostgresNIO
import SQLKit
import SQLiteNIO

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension SQLAccountStore {
    /// Finds the account of `facts.appleUserID` or creates it, in one transaction.
    ///
    /// The update runs first and changes the row in place (`COALESCE` keeps a stored name and a stored email when the
    /// token has none), so a concurrent sign-in never blanks what another wrote. When there is no account, the insert
    /// skips a conflicting Apple user id; a sign-in that loses that race updates and returns the winner's account.
    ///
    /// With `session`, the session and its first refresh token are inserted in the same transaction: a sign-in is one
    /// commit.
    public func signIn(
        _ facts: AppleSignInFacts,
        startingSession session: NewSession?,
        now: Date
    ) async throws(StoreError) -> SignInOutcome {
        let sessionRow = try session.map { session throws(StoreError) in
            (
                id: session.sessionID.description, hash: SQLValue.hex(session.refreshTokenHash),
                issuedAt: try SQLValue.milliseconds(session.issuedAt),
                expiresAt: try SQLValue.milliseconds(session.expiresAt),
                channel: session.metadata.channel?.rawValue, userAgent: session.metadata.userAgent,
                clientAddress: session.metadata.clientAddress,
                // Kept where the sessions are shared (PostgreSQL); SQLite's one process counts in memory.
                boundIDs: connections.flavor == .postgres ? session.bound?.sessionIDs.map(\.description) : nil
            )
        }
        // The sign-in's audit events (a new account's creation and the sign-in), when it starts a session; ids made in
        // that order, so that the log lists them in it within one millisecond.
        let createdEventID = AuditEvent.newID()
        let signInEvent = session.map { session in
            AuditEvent(
                time: now,
                type: .signIn,
                actor: .user,
                channel: session.metadata.channel,
                clientID: facts.clientID,
                sessionID: session.sessionID
            )
        }
        let signInEventID = AuditLogPosition.text(signInEvent?.id ?? AuditEvent.newID())
        let signedInAt = now
        let now = try SQLValue.milliseconds(now)
        let appleUserID = facts.appleUserID.rawValue
        let clientID = facts.clientID.rawValue
        let email = facts.email
        let emailVerified = facts.emailVerified ?? false
        let isPrivateEmail = facts.isPrivateEmail ?? false
        // Applied to an existing account only together with an email.
        let newEmailVerified = email == nil ? nil : facts.emailVerified.map(SQLValue.flag)
        let newIsPrivateEmail = email == nil ? nil : facts.isPrivateEmail.map(SQLValue.flag)
        let givenName = facts.givenName.flatMap { $0.isEmpty ? nil : $0 }
        let familyName = facts.familyName.flatMap { $0.isEmpty ? nil : $0 }
        let emailKey = email.map(SearchKey.of)
        let givenNameKey = givenName.map(SearchKey.of)
        let familyNameKey = familyName.map(SearchKey.of)
        let transferSub = facts.transferSub?.rawValue
        let linkEmail = facts.linkableEmail

        // PostgreSQL, a returning user with a session: one prepared statement (the update and both inserts as
        // data-modifying CTEs, atomic on their own) instead of five round trips. No row: not a returning user; the
        // transaction below handles every other case. A bounded session takes the bound's first id; when a session
        // has it already (the token signed in before), the statement writes nothing and the transaction below takes
        // the next id free.
        if connections.flavor == .postgres, let sessionRow {
            let statement = PostgresStatements.SignInReturningUser(
                clientID: clientID,
                email: email,
                emailVerified: newEmailVerified,
                isPrivateEmail: newIsPrivateEmail,
                givenName: givenName,
                familyName: familyName,
                now: now,
                appleUserID: appleUserID,
                emailKey: emailKey,
                givenNameKey: givenNameKey,
                familyNameKey: familyNameKey,
                sessionID: sessionRow.boundIDs?.first ?? sessionRow.id,
                refreshTokenHash: sessionRow.hash,
                issuedAt: sessionRow.issuedAt,
                expiresAt: sessionRow.expiresAt,
                channel: sessionRow.channel,
                userAgent: sessionRow.userAgent,
                clientAddress: sessionRow.clientAddress,
                eventID: signInEventID
            )
            do {
                let answer = try await postgres("sign in") {
                    connection,
                    logger -> (row: PostgresStatements.UserRow?, taken: Bool) in
                    do {
                        return (row: try await connection.lastRow(of: statement, logger: logger), taken: false)
                    } catch let error as PSQLError where error.violatesSessionsKey {
                        return (row: nil, taken: true)
                    }
                }
                if let row = answer.row {
                    let user = try PostgresStatements.user(row)
                    let boundID = sessionRow.boundIDs?.first.flatMap(SessionID.init)
                    return SignInOutcome(user: user, isNewUser: false, boundSessionID: user.isDisabled ? nil : boundID)
                }
            } catch  where error.code == .notFound {
                // The account was deleted while the statement ran (the session's reference failed): sign in afresh.
            }
        }

        // SQLite, a returning user with a session: one job on the writer (see SQLiteWriter): one statement, whose
        // trigger updates the account and inserts the session, its refresh token and the audit event (see
        // SQLiteStatements), then the account read back on the same connection, both prepared once. No account: not a
        // returning user, and nothing was written; the transaction below handles every other case (and a schema cache
        // that another process's migration made stale, see SQLiteStatements.isStaleSchema).
        if connections.flavor == .sqlite, let sessionRow {
            let binds: [SQLiteData] = [
                .text(clientID), .optional(email), .optional(newEmailVerified), .optional(newIsPrivateEmail),
                .optional(givenName), .optional(familyName), .integer(Int(now)), .text(appleUserID),
                .optional(emailKey), .optional(givenNameKey), .optional(familyNameKey), .text(sessionRow.id),
                .text(sessionRow.hash), .integer(Int(sessionRow.issuedAt)), .integer(Int(sessionRow.expiresAt)),
                .optional(sessionRow.channel), .optional(sessionRow.userAgent), .optional(sessionRow.clientAddress),
                .text(signInEventID),
            ]
            let returning = try await sqliteWriter("sign in") { connection -> UserRecord? in
                do {
                    _ = try connection.run(SQLiteStatements.returningSignIn, binds)
                } catch  where SQLiteStatements.isStaleSchema(error) {
                    return nil
                }
                return try connection.run(SQLiteStatements.userOfSession, [.text(sessionRow.id)]).first.map(
                    SQLRecords.user
                )
            }
            if let returning { return SignInOutcome(user: returning, isNewUser: false) }
        }

        // Not a returning user with a session (or the fast path above found none): the general path, with what only it
        // needs.
        let newID = UserID().description
        let updateAccount = SQLAccountUpdate.query { value -> any Encodable & Sendable in
            switch value {
            case .clientID: clientID
            case .email: email
            case .emailVerified: newEmailVerified
            case .isPrivateEmail: newIsPrivateEmail
            case .givenName: givenName
            case .familyName: familyName
            case .now: now
            case .appleUserID: appleUserID
            case .emailKey: emailKey
            case .givenNameKey: givenNameKey
            case .familyNameKey: familyNameKey
            }
        }

        return try await write("sign in") { database in
            var outcome = try await findOrCreate(database)
            // A disabled account signs in to no session (the caller refuses it).
            if let sessionRow, !outcome.user.isDisabled {
                let userID = outcome.user.id.description
                // Whether the session started: always, or with `unlessTaken` only when no session has the id.
                func insertSession(_ id: String, unlessTaken: Bool) async throws -> Bool {
                    let insert: SQLQueryString = """
                        INSERT INTO sessions (id, user_id, created_at, channel, user_agent, client_address)
                        VALUES (
                            \(bind: id), \(bind: userID), \(bind: now), \(bind: sessionRow.channel),
                            \(bind: sessionRow.userAgent), \(bind: sessionRow.clientAddress)
                        )
                        """
                    guard unlessTaken else {
                        try await database.raw(insert).run()
                        return true
                    }
                    return try await database.raw(insert + " ON CONFLICT (id) DO NOTHING RETURNING id").first() != nil
                }
                var sessionID = sessionRow.id
                if let boundIDs = sessionRow.boundIDs {
                    // The first id no session has taken, the taken ones looked up at once (a refused replay costs
                    // one query). An insert racing for the same id on another instance is waited for, and the loser
                    // looks again, finding one more taken (each statement reads what committed before it): at most
                    // as many sessions as ids start, and at most as many attempts.
                    var free: String?
                    for _ in boundIDs where free == nil {
                        let taken = try await database.raw(
                            "SELECT id FROM sessions WHERE id IN (\(binds: boundIDs))"
                        ).all().map { try $0.decode(column: "id", as: String.self) }
                        guard let candidate = boundIDs.first(where: { !taken.contains($0) }) else { break }
                        if try await insertSession(candidate, unlessTaken: true) { free = candidate }
                    }
                    guard let free else {
                        outcome.sessionBoundReached = true
                        return outcome
                    }
                    sessionID = free
                    outcome.boundSessionID = SessionID(free)
                } else {
                    _ = try await insertSession(sessionID, unlessTaken: false)
                }
                try await database.raw(
                    """
                    INSERT INTO refresh_tokens (hash, session_id, user_id, issued_at, expires_at)
                    VALUES (
                        \(bind: sessionRow.hash), \(bind: sessionID), \(bind: userID), \(bind: sessionRow.issuedAt),
                        \(bind: sessionRow.expiresAt)
                    )
                    """
                ).run()
                if var event = signInEvent {
                    event.sessionID = outcome.boundSessionID ?? event.sessionID
                    event.userID = outcome.user.id
                    event.details = ["account": outcome.isNewUser ? "new" : "returning"]
                    if outcome.isNewUser {
                        var created = event
                        created.id = createdEventID
                        created.type = .accountCreated
                        created.details = [:]
                        try await database.raw(SQLAuditLog.insert(created)).run()
                    }
                    try await database.raw(SQLAuditLog.insert(event)).run()
                }
            }
            return outcome
        }

        @Sendable func findOrCreate(_ database: any SQLDatabase) async throws -> SignInOutcome {
            // The account after the sign-in's update, or as it is when the update changed nothing.
            @Sendable func updateExisting() async throws -> UserRecord? {
                if let updated = try await database.raw(updateAccount).first() { return try SQLRecords.user(updated) }
                return try await database.raw(
                    "SELECT \(unsafeRaw: SQLRecords.userColumns) FROM users WHERE apple_user_id = \(bind: appleUserID)"
                ).first().map(SQLRecords.user)
            }

            if let user = try await updateExisting() { return SignInOutcome(user: user, isNewUser: false) }
            // No account has this sub: one whose pending team transfer has the token's transfer_sub moves to it.
            if let transferSub,
                try await Self.moveTransferredAccount(database, transferSub: transferSub, to: appleUserID, now: now),
                let user = try await updateExisting()
            {
                let event = AuditEvent(
                    time: signedInAt,
                    type: .transferCompleted,
                    userID: user.id,
                    actor: .user,
                    clientID: facts.clientID,
                    reason: "sign_in"
                )
                try await database.raw(SQLAuditLog.insert(event)).run()
                return SignInOutcome(user: user, isNewUser: false, completedTransfer: true)
            }
            // Linking by email (when asked): the oldest account with the same verified, non-relay email moves here.
            if let linkEmail,
                try await Self.linkAccountByEmail(database, email: linkEmail, to: appleUserID, now: now),
                let user = try await updateExisting()
            {
                return SignInOutcome(user: user, isNewUser: false)
            }
            let inserted = try await database.raw(
                """
                INSERT INTO users (
                    id, apple_user_id, client_id, email, email_key, email_verified, is_private_email, email_forwarding,
                    given_name, given_name_key, family_name, family_name_key, created_at, updated_at, last_sign_in_at
                ) VALUES (
                    \(bind: newID), \(bind: appleUserID), \(bind: clientID), \(bind: email), \(bind: emailKey),
                    \(bind: SQLValue.flag(emailVerified)), \(bind: SQLValue.flag(isPrivateEmail)), 1,
                    \(bind: givenName), \(bind: givenNameKey), \(bind: familyName), \(bind: familyNameKey),
                    \(bind: now), \(bind: now), \(bind: now)
                )
                ON CONFLICT (apple_user_id) DO NOTHING
                RETURNING \(unsafeRaw: SQLRecords.userColumns)
                """
            ).first()
            if let inserted {
                let user = try SQLRecords.user(inserted)
                try await SQLLifecycleEvents.append([.created(user, time: signedInAt)], to: database)
                return SignInOutcome(user: user, isNewUser: true)
            }
            // A racing first sign-in of the same Apple user committed its account first.
            guard let user = try await updateExisting() else {
                throw StoreError(.unavailable, "sign in: the account was deleted during a racing sign-in")
            }
            return SignInOutcome(user: user, isNewUser: false)
        }
    }

    /// Moves the oldest account with `email` (verified, not a relay address; case ignored) to `appleUserID` when that
    /// account's own Apple ID has stopped signing in (its consent ended); its Apple token belonged to the other Apple
    /// ID and goes. Returns whether one moved.
    /// - Throws: ``StoreError/Code/duplicate`` when the account's Apple ID still signs in: never a takeover.
    static func linkAccountByEmail(
        _ database: any SQLDatabase,
        email: String,
        to appleUserID: String,
        now: Int64
    ) async throws -> Bool {
        let match = try await database.raw(
            """
            SELECT id, apple_consent_revoked_at FROM users
            WHERE email_key = \(bind: SearchKey.of(email)) AND email_verified = 1 AND is_private_email = 0
                AND apple_user_id <> \(bind: appleUserID)
            ORDER BY created_at, id LIMIT 1
            """
        ).first()
        guard let match else { return false }
        guard try match.decode(column: "apple_consent_revoked_at", as: Int64?.self) != nil else {
            throw StoreError(
                .duplicate,
                "sign in: the email belongs to the account of another Apple ID, which still signs in"
            )
        }
        let matched = try match.decode(column: "id", as: String.self)
        let moved = try await database.raw(
            """
            UPDATE users SET apple_user_id = \(bind: appleUserID), updated_at = \(bind: now)
            WHERE id = \(bind: matched)
            RETURNING id
            """
        ).first()?.decode(column: "id", as: String.self)
        guard let moved else { return false }
        try await database.raw("DELETE FROM apple_tokens WHERE user_id = \(bind: moved)").run()
        return true
    }

    public func user(id: UserID) async throws(StoreError) -> UserRecord? {
        let id = id.description
        return try await read("read a user") { database in
            try await database.raw("SELECT \(unsafeRaw: SQLRecords.userColumns) FROM users WHERE id = \(bind: id)")
                .first().map(SQLRecords.user)
        }
    }

    public func user(appleUserID: AppleUserID) async throws(StoreError) -> UserRecord? {
        let appleUserID = appleUserID.rawValue
        return try await read("read a user") { database in
            try await database.raw(
                "SELECT \(unsafeRaw: SQLRecords.userColumns) FROM users WHERE apple_user_id = \(bind: appleUserID)"
            ).first().map(SQLRecords.user)
        }
    }

    /// Uses the `email_key` index (``SearchKey``: every letter folded, on SQLite too).
    public func users(email: String) async throws(StoreError) -> [UserRecord] {
        let key = SearchKey.of(email)
        return try await read("find users by email") { database in
            try await database.raw(
                """
                SELECT \(unsafeRaw: SQLRecords.userColumns) FROM users
                WHERE email_key = \(bind: key)
                ORDER BY created_at, id
                """
            ).all().map(SQLRecords.user)
        }
    }

    /// Accounts ordered by `created_at`, then id. Like ``InMemoryAccountStore``, an `after` that names no account
    /// starts from the first.
    public func users(limit: Int, after: UserID?) async throws(StoreError) -> [UserRecord] {
        guard limit > 0 else { return [] }
        let limit = Int64(limit)
        let after = after?.description
        return try await read("list users") { database in
            var cursor: Int64?
            if let after {
                cursor = try await database.raw("SELECT created_at FROM users WHERE id = \(bind: after)").first()?
                    .decode(column: "created_at", as: Int64.self)
            }
            let rows: [any SQLRow]
            if let cursor, let after {
                rows = try await database.raw(
                    """
                    SELECT \(unsafeRaw: SQLRecords.userColumns) FROM users
                    WHERE created_at > \(bind: cursor) OR (created_at = \(bind: cursor) AND id > \(bind: after))
                    ORDER BY created_at, id LIMIT \(bind: limit)
                    """
                ).all()
            } else {
                rows = try await database.raw(
                    "SELECT \(unsafeRaw: SQLRecords.userColumns) FROM users ORDER BY created_at, id LIMIT \(bind: limit)"
                ).all()
            }
            return try rows.map(SQLRecords.user)
        }
    }

    // MARK: Apple refresh tokens

    public func saveAppleToken(_ token: AppleTokenRecord) async throws(StoreError) {
        let userID = token.userID.description
        let clientID = token.clientID.rawValue
        let sealed = SQLValue.base64(token.encryptedRefreshToken)
        let storedAt = try SQLValue.milliseconds(token.storedAt)
        let lastValidatedAt = try token.lastValidatedAt.map { date throws(StoreError) in try SQLValue.milliseconds(date)
        }
        try await write("save an Apple token") { database in
            guard try await database.raw("SELECT id FROM users WHERE id = \(bind: userID)").first() != nil else {
                throw StoreError(.notFound, "save an Apple token: no such user")
            }
            try await database.raw(
                """
                INSERT INTO apple_tokens (user_id, client_id, sealed_refresh_token, stored_at, last_validated_at)
                VALUES (\(bind: userID), \(bind: clientID), \(bind: sealed), \(bind: storedAt), \(bind: lastValidatedAt))
                ON CONFLICT (user_id) DO UPDATE SET
                    client_id = excluded.client_id,
                    sealed_refresh_token = excluded.sealed_refresh_token,
                    stored_at = excluded.stored_at,
                    last_validated_at = excluded.last_validated_at
                """
            ).run()
        }
    }

    public func appleToken(userID: UserID) async throws(StoreError) -> AppleTokenRecord? {
        let userID = userID.description
        return try await read("read an Apple token") { database in
            try await database.raw(
                "SELECT \(unsafeRaw: SQLRecords.appleTokenColumns) FROM apple_tokens WHERE user_id = \(bind: userID)"
            ).first().map(SQLRecords.appleToken)
        }
    }
}
