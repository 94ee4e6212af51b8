import SQLKit

/// A returning user's account update, written once for the three places that run it: the generic sign-in transaction
/// (SQLKit binds), PostgreSQL's prepared statement (`$n` parameters) and SQLite's sign-in trigger (`NEW.column`).
///
/// The email changes only together with its flags; a stored name is never replaced or blanked; the Apple consent
/// mark is cleared (the user just signed in with Apple again). A sign-in that changes nothing writes nothing (no row
/// lock, `updated_at` kept): concurrent sign-ins of one user do not queue on the row, and the account is then read
/// instead (``existing(_:)``).
enum SQLAccountUpdate {
    /// The update's inputs, in the order of PostgreSQL's `$1…$8`.
    enum Value: Int, CaseIterable {
        case clientID = 1
        case email, emailVerified, isPrivateEmail, givenName, familyName, now, appleUserID

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
            }
        }
    }

    /// The `UPDATE … RETURNING` statement, with each input written as `value` renders it.
    static func sql(_ value: (Value) -> String) -> String {
        """
        UPDATE users SET
            client_id = \(value(.clientID)),
            email = COALESCE(\(value(.email)), email),
            email_verified = COALESCE(\(value(.emailVerified)), email_verified),
            is_private_email = COALESCE(\(value(.isPrivateEmail)), is_private_email),
            given_name = COALESCE(given_name, \(value(.givenName))),
            family_name = COALESCE(family_name, \(value(.familyName))),
            updated_at = \(value(.now)),
            apple_consent_revoked_at = NULL
        WHERE apple_user_id = \(value(.appleUserID)) AND (
            client_id IS DISTINCT FROM \(value(.clientID))
            OR (\(value(.email)) IS NOT NULL AND (
                email IS DISTINCT FROM \(value(.email))
                OR email_verified IS DISTINCT FROM COALESCE(\(value(.emailVerified)), email_verified)
                OR is_private_email IS DISTINCT FROM COALESCE(\(value(.isPrivateEmail)), is_private_email)
            ))
            OR (given_name IS NULL AND \(value(.givenName)) IS NOT NULL)
            OR (family_name IS NULL AND \(value(.familyName)) IS NOT NULL)
            OR apple_consent_revoked_at IS NOT NULL
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
