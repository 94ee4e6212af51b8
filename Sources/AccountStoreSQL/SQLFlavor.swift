import SQLKit

/// The database family behind a pool: decides the few statements that are not the same in both.
enum SQLFlavor: Sendable {
    case sqlite
    case postgres

    /// Starts a read-write transaction. SQLite takes the write lock at once (`IMMEDIATE`), so that two transactions
    /// never both read and then both wait to write (which SQLite answers with `SQLITE_BUSY` and no retry).
    var begin: SQLQueryString {
        switch self {
        case .sqlite: "BEGIN IMMEDIATE"
        case .postgres: "BEGIN"
        }
    }
}

/// The type of a text column compared by its UTF-8 bytes, so that an index on it serves prefix ranges
/// (`key >= prefix AND key < upper`), written for the database at hand: SQLite's default collation (`BINARY`) is
/// bytewise; on PostgreSQL the database's default collation may be a language's (under which such a range is not a
/// prefix, and `_` or `-` are ignored), so the column takes `"C"`.
struct SQLBytewiseText: SQLExpression {
    func serialize(to serializer: inout SQLSerializer) {
        serializer.write(serializer.dialect.name == "postgresql" ? #"TEXT COLLATE "C""# : "TEXT")
    }
}
