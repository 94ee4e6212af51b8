public import AccountStore
public import Logging
import PostgresNIO
import SQLKit

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension SQLAccountStore {
    /// Whether the store is a SQLite file (``sqlite(path:connectionsPerEventLoop:busyTimeout:logger:)``).
    public var isSQLite: Bool { connections.flavor == .sqlite }

    /// Writes a consistent copy of the SQLite database to `path` while others read and write it (`VACUUM INTO`: one
    /// read transaction, so the copy is the database as of one moment, compacted). The file is created 0600 and must
    /// not exist.
    ///
    /// - Parameter path: Where the copy goes; its folder must exist.
    /// - Throws: ``StoreError/Code/invalidInput`` on PostgreSQL (`pg_dump` backs it up) or for a path that exists,
    ///   ``StoreError/Code/unavailable`` when the file cannot be created or written.
    public func writeSQLiteBackup(to path: String) async throws(StoreError) {
        guard connections.flavor == .sqlite else {
            throw StoreError(.invalidInput, "a PostgreSQL database is backed up with pg_dump")
        }
        // SQLite writes the copy into an empty file it is given, keeping the file's mode: created here, 0600.
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let reason = errno == EEXIST ? "it exists already" : String(cString: strerror(errno))
            throw StoreError(.invalidInput, "the backup \(path) cannot be created: \(reason)")
        }
        close(descriptor)
        do {
            try await read("write a backup") { database in
                try await database.raw("VACUUM INTO \(bind: path)").run()
            }
        } catch {
            unlink(path)
            throw error
        }
    }

    /// PostgreSQL statements that drop every table and function siwa's migrations create (tables with what depends on
    /// them), for a restore to run first in the transaction that loads a backup: nothing of a newer schema stays
    /// behind to block the backup's tables or a later migration. Drops only siwa's own objects, by name.
    public static var postgresDropStatements: [String] { SQLSchema.dropStatements }

    /// How many connections named `siwa serve` (``postgres(url:schema:maximumConnections:applicationName:logger:)``)
    /// other than this check's are open on the PostgreSQL database of `url`: a restore must not run under a serving
    /// instance.
    ///
    /// - Parameters:
    ///   - url: The database, as for ``postgres(url:schema:maximumConnections:applicationName:logger:)``.
    ///   - logger: For the driver's debug logs.
    /// - Throws: ``StoreError/Code/unavailable`` when the server cannot be reached, as
    ///   ``checkConnection(postgresURL:timeout:logger:)`` names it.
    /// - Warning: `url` holds the database password: read it from a secret, never log it.
    public static func servingConnections(postgresURL url: String, logger: Logger) async throws(StoreError) -> Int {
        try await withCheckConnection(postgresURL: url, timeout: .seconds(5), logger: logger) { connection, logger in
            let rows = try await connection.query(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND application_name = 'siwa serve' AND pid <> pg_backend_pid()
                """,
                logger: logger
            ).collect()
            return Int(try rows.first?.decode(Int64.self) ?? 0)
        }
    }
}
