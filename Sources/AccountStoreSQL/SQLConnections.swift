import SQLKit

/// Connections to one database, leased one at a time to a closure.
protocol SQLConnections: Sendable {
    var flavor: SQLFlavor { get }

    /// Runs `body` with a connection of its own (statements outside a transaction).
    func withConnection<R: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R

    /// Runs `body` in a transaction on a connection of its own: committed when `body` returns, rolled back when it
    /// throws.
    func withTransaction<R: Sendable>(
        lock: SQLTransactionLock?,
        _ body: @escaping @Sendable (any SQLDatabase) async throws -> R
    ) async throws -> R

    /// Closes every connection. The pool serves nothing afterwards.
    func shutdown() async
}
