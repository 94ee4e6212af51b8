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
