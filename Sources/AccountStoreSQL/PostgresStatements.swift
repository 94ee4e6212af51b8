import AccountStore
import AppleSignIn
import PostgresNIO

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The PostgreSQL statements on the request path (a returning user's sign-in, a refresh), as prepared statements:
/// PostgresNIO prepares each once per connection, so the server parses and plans it once instead of on every request,
/// and rows are read in the binary format without SQLKit's `Codable` layer. Each is one statement, atomic on its own
/// (data-modifying CTEs); the SQL is the same as the generic paths' in ``SQLAccountStore``.
enum PostgresStatements {
    /// The columns of ``SQLRecords/userColumns``, in that order.
    typealias UserRow = (
        String, String, String, String?, Int64, Int64, Int64, String?, String?, Int64, Int64, Int64?, Int64?, Int64?
    )

    static func user(_ row: UserRow) throws(StoreError) -> UserRecord {
        UserRecord(
            id: try SQLValue.userID(row.0),
            appleUserID: AppleUserID(row.1),
            clientID: ClientID(row.2),
            email: row.3,
            emailVerified: row.4 != 0,
            isPrivateEmail: row.5 != 0,
            emailForwarding: row.6 != 0,
            givenName: row.7,
            familyName: row.8,
            createdAt: SQLValue.date(milliseconds: row.9),
            updatedAt: SQLValue.date(milliseconds: row.10),
            appleConsentRevokedAt: row.11.map(SQLValue.date),
            disabledAt: row.12.map(SQLValue.date),
            lastSignInAt: row.13.map(SQLValue.date)
        )
    }

    /// A returning user's sign-in with its new session: the account's update (``SQLAccountUpdate``, `$1…$11`; when it
    /// changes nothing, the account as it is) and the inserts of the session, its first refresh token and the sign-in's
    /// audit event, which a disabled account does not get. No row: no account has this Apple user id. A session id
    /// taken already (``AccountStore/SessionBound``) fails the statement on the sessions' key, writing nothing.
    struct SignInReturningUser: PostgresPreparedStatement {
        static let name = "siwa_sign_in_returning_user_v6"
        static let sql = """
            WITH u AS (
                \(SQLAccountUpdate.sql { "$\($0.rawValue)" })
                RETURNING \(SQLRecords.userColumns)
            ), a AS (
                SELECT \(SQLRecords.userColumns) FROM u
                UNION ALL
                \(SQLAccountUpdate.existing { "$\($0.rawValue)" }) AND NOT EXISTS (SELECT 1 FROM u)
            ), s AS (
                INSERT INTO sessions (id, user_id, created_at, channel, user_agent, client_address)
                SELECT $12, id, $7, $16, $17, $18 FROM a WHERE disabled_at IS NULL
            ), t AS (
                INSERT INTO refresh_tokens (hash, session_id, user_id, issued_at, expires_at)
                SELECT $13, $12, id, $14, $15 FROM a WHERE disabled_at IS NULL
            ), e AS (
                \(SQLAuditLog.returningSignIn(
                    id: "$19", now: "$7", channel: "$16", clientID: "$1", sessionID: "$12",
                    from: "a WHERE disabled_at IS NULL"
                ))
            )
            SELECT \(SQLRecords.userColumns) FROM a
            """
        static let bindingDataTypes: [PostgresDataType] = [
            .text, .text, .int8, .int8, .text, .text, .int8, .text, .text, .text, .text,
            .text, .text, .int8, .int8, .text, .text, .text, .text,
        ]
        typealias Row = UserRow

        var clientID: String
        var email: String?
        var emailVerified: Int64?
        var isPrivateEmail: Int64?
        var givenName: String?
        var familyName: String?
        var now: Int64
        var appleUserID: String
        var emailKey: String?
        var givenNameKey: String?
        var familyNameKey: String?
        var sessionID: String
        var refreshTokenHash: String
        var issuedAt: Int64
        var expiresAt: Int64
        var channel: String?
        var userAgent: String?
        var clientAddress: String?
        var eventID: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 19)
            bindings.append(clientID)
            bindings.append(email)
            bindings.append(emailVerified)
            bindings.append(isPrivateEmail)
            bindings.append(givenName)
            bindings.append(familyName)
            bindings.append(now)
            bindings.append(appleUserID)
            bindings.append(emailKey)
            bindings.append(givenNameKey)
            bindings.append(familyNameKey)
            bindings.append(sessionID)
            bindings.append(refreshTokenHash)
            bindings.append(issuedAt)
            bindings.append(expiresAt)
            bindings.append(channel)
            bindings.append(userAgent)
            bindings.append(clientAddress)
            bindings.append(eventID)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode(Row.self)
        }
    }

    /// A refresh: the presented token is claimed (`used_at` set) only while it is current and its session live, and
    /// its successor inserted from the claimed row. At most one concurrent statement can claim a token. No row: the
    /// token was not current (the caller finds out why).
    struct RotateRefreshToken: PostgresPreparedStatement {
        static let name = "siwa_rotate_refresh_token_v1"
        static let sql = """
            WITH claimed AS (
                UPDATE refresh_tokens SET used_at = $1
                WHERE hash = $2 AND used_at IS NULL AND expires_at > $1
                    AND EXISTS (
                        SELECT 1 FROM sessions
                        WHERE sessions.id = refresh_tokens.session_id AND sessions.revoked_at IS NULL
                    )
                RETURNING session_id, user_id
            )
            INSERT INTO refresh_tokens (hash, session_id, user_id, issued_at, expires_at)
            SELECT $3, session_id, user_id, $4, $5 FROM claimed
            RETURNING session_id, user_id
            """
        static let bindingDataTypes: [PostgresDataType] = [.int8, .text, .text, .int8, .int8]
        typealias Row = (String, String)

        var now: Int64
        var presentedHash: String
        var nextHash: String
        var issuedAt: Int64
        var expiresAt: Int64

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 5)
            bindings.append(now)
            bindings.append(presentedHash)
            bindings.append(nextHash)
            bindings.append(issuedAt)
            bindings.append(expiresAt)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode(Row.self)
        }
    }
}

extension PostgresConnection {
    /// The statement's last row (these statements return at most one), all rows read.
    func lastRow<Statement: PostgresPreparedStatement>(
        of statement: Statement,
        logger: Logger
    ) async throws -> Statement.Row? where Statement.Row: Sendable {
        var last: Statement.Row?
        for try await row in try await execute(statement, logger: logger) { last = row }
        return last
    }
}
