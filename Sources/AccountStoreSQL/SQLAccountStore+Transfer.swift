public import AccountStore
public import AppleSignIn
import SQLKit

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Team transfer (TN3159): one `user_transfers` row per account that was exported, marked done when the account
/// moved to its `sub` at the receiving team.
extension SQLAccountStore {
    static let transferColumns = "user_id, transfer_sub, target_team, exported_at, transferred_at"

    public func setTransferSub(
        userID: UserID,
        transferSub: AppleUserID,
        targetTeam: String,
        now: Date
    ) async throws(StoreError) {
        let userID = userID.description
        let transferSub = transferSub.rawValue
        let now = try SQLValue.milliseconds(now)
        try await write("set a transfer_sub") { database in
            guard try await database.raw("SELECT id FROM users WHERE id = \(bind: userID)").first() != nil else {
                throw StoreError(.notFound, "set a transfer_sub: no such user")
            }
            try await database.raw(
                """
                INSERT INTO user_transfers (user_id, transfer_sub, target_team, exported_at, transferred_at)
                VALUES (\(bind: userID), \(bind: transferSub), \(bind: targetTeam), \(bind: now), NULL)
                ON CONFLICT (user_id) DO UPDATE SET
                    transfer_sub = excluded.transfer_sub,
                    target_team = excluded.target_team,
                    exported_at = excluded.exported_at,
                    transferred_at = NULL
                """
            ).run()
        }
    }

    /// Like ``users(limit:after:)``, without the accounts that have a transfer or were anonymised.
    public func usersWithoutTransfer(after: UserID?, limit: Int) async throws(StoreError) -> [UserRecord] {
        guard limit > 0 else { return [] }
        let limit = Int64(limit)
        let after = after?.description
        return try await read("list users without a transfer") { database in
            var cursor: Int64?
            if let after {
                cursor = try await database.raw("SELECT created_at FROM users WHERE id = \(bind: after)").first()?
                    .decode(column: "created_at", as: Int64.self)
            }
            let untransferred: SQLQueryString = """
                NOT EXISTS (SELECT 1 FROM user_transfers WHERE user_transfers.user_id = users.id) \
                AND apple_user_id NOT LIKE 'anonymised:%'
                """
            let rows: [any SQLRow]
            if let cursor, let after {
                rows = try await database.raw(
                    """
                    SELECT \(unsafeRaw: SQLRecords.userColumns) FROM users
                    WHERE \(untransferred)
                        AND (created_at > \(bind: cursor) OR (created_at = \(bind: cursor) AND id > \(bind: after)))
                    ORDER BY created_at, id LIMIT \(bind: limit)
                    """
                ).all()
            } else {
                rows = try await database.raw(
                    """
                    SELECT \(unsafeRaw: SQLRecords.userColumns) FROM users
                    WHERE \(untransferred)
                    ORDER BY created_at, id LIMIT \(bind: limit)
                    """
                ).all()
            }
            return try rows.map(SQLRecords.user)
        }
    }

    public func transfer(userID: UserID) async throws(StoreError) -> AppleTransferRecord? {
        let userID = userID.description
        return try await read("read a transfer") { database in
            try await database.raw(
                "SELECT \(unsafeRaw: Self.transferColumns) FROM user_transfers WHERE user_id = \(bind: userID)"
            ).first().map(Self.transferRecord)
        }
    }

    public func user(transferSub: AppleUserID) async throws(StoreError) -> UserRecord? {
        let transferSub = transferSub.rawValue
        return try await read("read a user by transfer_sub") { database in
            try await database.raw(
                """
                SELECT \(unsafeRaw: SQLRecords.userColumns) FROM users
                WHERE id = (SELECT user_id FROM user_transfers WHERE transfer_sub = \(bind: transferSub))
                """
            ).first().map(SQLRecords.user)
        }
    }

    public func pendingTransfers(after: UserID?, limit: Int) async throws(StoreError) -> [AppleTransferRecord] {
        guard limit > 0 else { return [] }
        let limit = Int64(limit)
        let after = after?.description ?? ""
        return try await read("list pending transfers") { database in
            try await database.raw(
                """
                SELECT \(unsafeRaw: Self.transferColumns) FROM user_transfers
                WHERE transferred_at IS NULL AND user_id > \(bind: after)
                ORDER BY user_id LIMIT \(bind: limit)
                """
            ).all().map(Self.transferRecord)
        }
    }

    @discardableResult
    public func reassignAppleUser(
        userID: UserID,
        newAppleUserID: AppleUserID,
        email: String?,
        isPrivateEmail: Bool?,
        now: Date
    ) async throws(StoreError) -> UserRecord {
        let userID = userID.description
        let newAppleUserID = newAppleUserID.rawValue
        let isPrivateEmail = isPrivateEmail.map(SQLValue.flag)
        let now = try SQLValue.milliseconds(now)
        return try await write("reassign an Apple user") { database in
            guard
                let current = try await database.raw("SELECT apple_user_id FROM users WHERE id = \(bind: userID)")
                    .first()?.decode(column: "apple_user_id", as: String.self)
            else { throw StoreError(.notFound, "reassign an Apple user: no such user") }
            if current != newAppleUserID {
                let taken = try await database.raw(
                    "SELECT id FROM users WHERE apple_user_id = \(bind: newAppleUserID)"
                ).first()
                guard taken == nil else { throw StoreError(.duplicate, "another account has this Apple user id") }
                try await Self.pointAccount(database, userID: userID, to: newAppleUserID, now: now)
            }
            if let email {
                try await database.raw(
                    """
                    UPDATE users SET
                        email = \(bind: email),
                        email_key = \(bind: SearchKey.of(email)),
                        is_private_email = COALESCE(\(bind: isPrivateEmail), is_private_email),
                        updated_at = \(bind: now)
                    WHERE id = \(bind: userID)
                    """
                ).run()
            }
            try await database.raw(
                """
                UPDATE user_transfers SET transferred_at = \(bind: now)
                WHERE user_id = \(bind: userID) AND transferred_at IS NULL
                """
            ).run()
            guard
                let row = try await database.raw(
                    "SELECT \(unsafeRaw: SQLRecords.userColumns) FROM users WHERE id = \(bind: userID)"
                ).first()
            else { throw StoreError(.notFound, "reassign an Apple user: no such user") }
            let user = try SQLRecords.user(row)
            if current != newAppleUserID {
                try await SQLLifecycleEvents.append(
                    [
                        .transferred(
                            user.id,
                            from: AppleUserID(current),
                            to: user.appleUserID,
                            by: .operator,
                            time: SQLValue.date(milliseconds: now)
                        )
                    ],
                    to: database
                )
            }
            return user
        }
    }

    /// In a sign-in's transaction: moves the account whose pending transfer has `transferSub` to `appleUserID`.
    ///
    /// Of racing sign-ins, the first moves the account; on PostgreSQL the others wait for its row and then find
    /// `apple_user_id` already changed (and change nothing), on SQLite writers take turns.
    /// - Returns: Whether an account now has `appleUserID` through its transfer.
    static func moveTransferredAccount(
        _ database: any SQLDatabase,
        transferSub: String,
        to appleUserID: String,
        now: Int64
    ) async throws -> Bool {
        let before = try await database.raw(
            """
            SELECT u.id AS id, u.apple_user_id AS apple_user_id FROM users u
            JOIN user_transfers t ON t.user_id = u.id
            WHERE t.transfer_sub = \(bind: transferSub) AND t.transferred_at IS NULL
            """
        ).first()?.decode(column: "apple_user_id", as: String.self)
        guard let before else { return false }
        let moved = try await database.raw(
            """
            UPDATE users SET apple_user_id = \(bind: appleUserID), updated_at = \(bind: now)
            WHERE id = (
                SELECT user_id FROM user_transfers
                WHERE transfer_sub = \(bind: transferSub) AND transferred_at IS NULL
            ) AND apple_user_id <> \(bind: appleUserID)
            RETURNING id
            """
        ).first()?.decode(column: "id", as: String.self)
        guard let moved else { return false }
        try await finishMove(database, userID: moved, now: now)
        try await SQLLifecycleEvents.append(
            [
                .transferred(
                    try SQLValue.userID(moved),
                    from: AppleUserID(before),
                    to: AppleUserID(appleUserID),
                    by: .user,
                    time: SQLValue.date(milliseconds: now)
                )
            ],
            to: database
        )
        return true
    }

    /// Points the account at another Apple user id and finishes its move.
    private static func pointAccount(
        _ database: any SQLDatabase,
        userID: String,
        to appleUserID: String,
        now: Int64
    ) async throws {
        try await database.raw(
            """
            UPDATE users SET apple_user_id = \(bind: appleUserID), updated_at = \(bind: now)
            WHERE id = \(bind: userID)
            """
        ).run()
        try await finishMove(database, userID: userID, now: now)
    }

    /// After a move: the Apple refresh token was issued to the sending team and goes; the transfer is done.
    private static func finishMove(_ database: any SQLDatabase, userID: String, now: Int64) async throws {
        try await database.raw("DELETE FROM apple_tokens WHERE user_id = \(bind: userID)").run()
        try await database.raw(
            """
            UPDATE user_transfers SET transferred_at = \(bind: now)
            WHERE user_id = \(bind: userID) AND transferred_at IS NULL
            """
        ).run()
    }

    static func transferRecord(_ row: any SQLRow) throws -> AppleTransferRecord {
        AppleTransferRecord(
            userID: try SQLValue.userID(row.decode(column: "user_id", as: String.self)),
            transferSub: AppleUserID(try row.decode(column: "transfer_sub", as: String.self)),
            targetTeam: try row.decode(column: "target_team", as: String.self),
            exportedAt: SQLValue.date(milliseconds: try row.decode(column: "exported_at", as: Int64.self)),
            transferredAt: try row.decode(column: "transferred_at", as: Int64?.self).map(SQLValue.date)
        )
    }
}
