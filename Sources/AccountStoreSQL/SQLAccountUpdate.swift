import AccountStore
import SQLKit

/// A returning user's account update, written once for the three places that run it: the generic sign-in transaction
/// (SQLKit binds), PostgreSQL's prepared statement (`$n` parameters) and SQLite's sign-in trigger (`NEW.column`).
///
/// The email changes only together with its flags; a stored name is never replaced or blanked; each keeps its search
/// key (``SearchKey``, computed in Swift) beside it; the Apple consent mark is cleared (the user just signed in with
/// Apple again); the last sign-in moves (an account that is not disabled, when the recorded one is at least
/// ``UserRecord/lastSignInResolution`` old). A sign-in that changes nothing writes nothing (no row lock, `updated_at`
/// kept): concurrent sign-ins of one user do not queue on the row, and the account is then read instead
/// (``existing(_:)``). Moving only the last sign-in keeps `updated_at`, so that user caches are not refreshed for it.
enum SQLAccountUpdate {
    /// The update's inputs, in the order of PostgreSQL's `$1…$11`.
    enum Value: Int, CaseIterable {
        case clientID = 1
        case email, emailVerified, isPrivateEmail, givenName, familyName, now, appleUserID
        case emailKey, givenNameKey, familyNameKey

        /// The column name used for the value in SQLite's trigger view.
        var column: String {
            switch self {
            case .clientID: "client_id"
            case .email: "email"
            case .emailVerified: "email_verified"
            case .isPrivateEmail: "is_private_email"
            case .givenName: "given_name"
            case .familyName: "family_name"
            case .now: "now"
            case .appleUserID: "apple_user_id"
            case .emailKey: "email_key"
            case .givenNameKey: "given_name_key"
            case .familyNameKey: "family_name_key"
            }
        }
    }

    /// The `UPDATE … RETURNING` statement, with each input written as `value` renders it.
    /// - Parameter condition: SQL that must also hold for the update to apply (PostgreSQL's statement: the session
    ///   bound was not reached).
    static func sql(_ value: (Value) -> String, condition: String? = nil) -> String {
        let changes = """
            client_id IS DISTINCT FROM \(value(.clientID))
                OR (\(value(.email)) IS NOT NULL AND (
                    email IS DISTINCT FROM \(value(.email))
                    OR email_verified IS DISTINCT FROM COALESCE(\(value(.emailVerified)), email_verified)
                    OR is_private_email IS DISTINCT FROM COALESCE(\(value(.isPrivateEmail)), is_private_email)
                ))
                OR (given_name IS NULL AND \(value(.givenName)) IS NOT NULL)
                OR (family_name IS NULL AND \(value(.familyName)) IS NOT NULL)
                OR apple_consent_revoked_at IS NOT NULL
            """
        let resolution = Int64(UserRecord.lastSignInResolution * 1_000)
        let signInDue = """
            disabled_at IS NULL
                AND (last_sign_in_at IS NULL OR last_sign_in_at <= \(value(.now)) - \(resolution))
            """
        return """
            UPDATE users SET
                client_id = \(value(.clientID)),
                email = COALESCE(\(value(.email)), email),
                email_key = COALESCE(\(value(.emailKey)), email_key),
                email_verified = COALESCE(\(value(.emailVerified)), email_verified),
                is_private_email = COALESCE(\(value(.isPrivateEmail)), is_private_email),
                given_name = COALESCE(given_name, \(value(.givenName))),
                given_name_key = COALESCE(given_name_key, \(value(.givenNameKey))),
                family_name = COALESCE(family_name, \(value(.familyName))),
                family_name_key = COALESCE(family_name_key, \(value(.familyNameKey))),
                updated_at = CASE WHEN \(changes) THEN \(value(.now)) ELSE updated_at END,
                last_sign_in_at = CASE WHEN \(signInDue) THEN \(value(.now)) ELSE last_sign_in_at END,
                apple_consent_revoked_at = NULL
            WHERE apple_user_id = \(value(.appleUserID))\(condition.map { " AND \($0)" } ?? "") AND (
                \(changes)
                OR \(signInDue)
            )
            """
    }

    /// The account as it is, for a sign-in whose update changed nothing.
    static func existing(_ value: (Value) -> String) -> String {
        "SELECT \(SQLRecords.userColumns) FROM users WHERE apple_user_id = \(value(.appleUserID))"
    }

    /// The statement for SQLKit, returning the account's columns, with `bind(value)` bound in place of each input.
    static func query(binding bind: (Value) -> any Encodable & Sendable) -> SQLQueryString {
        var query = SQLQueryString("")
        for (literal, value) in queryParts {
            query.appendLiteral(literal)
            if let value { query.appendInterpolation(bind: bind(value)) }
        }
        return query
    }

    /// The SQLKit statement's text, cut once at its inputs: each literal part and the input that follows it.
    private static let queryParts: [(String, Value?)] = {
        // Each input is rendered as a marker; the text between markers is literal SQL.
        let marker: Character = "\u{1}"
        let text = sql { "\(marker)\($0.rawValue)\(marker)" } + "\nRETURNING \(SQLRecords.userColumns)"
        let pieces = text.split(separator: marker, omittingEmptySubsequences: false).map(String.init)
        return stride(from: 0, to: pieces.count, by: 2).map { index in
            (pieces[index], index + 1 < pieces.count ? Int(pieces[index + 1]).flatMap(Value.init(rawValue:)) : nil)
        }
    }()
}
