import Foundation
import Logging
import PostgresNIO
import Testing

/// The URL of the test run's PostgreSQL server (`scripts/with-postgres`), or `nil` when there is none.
let testPostgresURL = ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"]

/// Runs `body` on one connection to the database of `url` (the test server's: plain TCP, no TLS), closed afterwards
/// however `body` ends.
func withPostgresConnection<R>(
    _ url: String,
    _ body: (PostgresConnection, Logger) async throws -> R
) async throws -> R {
    let components = try #require(URLComponents(string: url))
    let logger = Logger(label: "siwa.test.postgres") { _ in SwiftLogNoOpLogHandler() }
    let connection = try await PostgresConnection.connect(
        configuration: PostgresConnection.Configuration(
            host: try #require(components.host),
            port: components.port ?? 5432,
            username: try #require(components.user),
            password: components.password,
            database: String(components.path.dropFirst()),
            tls: .disable
        ),
        id: 1,
        logger: logger
    )
    do {
        let result = try await body(connection, logger)
        try? await connection.close()
        return result
    } catch {
        try? await connection.close()
        throw error
    }
}

/// Runs `body` with the URL of a new database on the test's PostgreSQL server, dropped afterwards: commands that use
/// the default schema, as `siwa serve` does, then see only the test's own tables.
/// - Parameters:
///   - url: The server's URL; its database is where the new one is created from.
///   - prefix: The start of the new database's name.
func withFreshPostgresDatabase(
    _ url: String,
    prefix: String,
    _ body: (String) async throws -> Void
) async throws {
    var components = try #require(URLComponents(string: url))
    let name = prefix + UUID().uuidString.lowercased().replacing("-", with: "")
    try await runPostgresStatement(url, "CREATE DATABASE \(name)")
    components.path = "/" + name
    do {
        try await body(try #require(components.string))
    } catch {
        try? await runPostgresStatement(url, "DROP DATABASE \(name) WITH (FORCE)")
        throw error
    }
    try? await runPostgresStatement(url, "DROP DATABASE \(name) WITH (FORCE)")
}

/// Runs one statement on the database of `url` (a test's own set-up, such as a schema version from a newer siwa).
func runPostgresStatement(_ url: String, _ statement: String) async throws {
    _ = try await withPostgresConnection(url) { connection, logger in
        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
    }
}

/// The first column of each row `query` answers on the database of `url`, as text.
func postgresTexts(_ url: String, _ query: String) async throws -> [String] {
    try await withPostgresConnection(url) { connection, logger in
        var texts: [String] = []
        for try await text in try await connection.query(PostgresQuery(unsafeSQL: query), logger: logger)
            .decode(String.self)
        {
            texts.append(text)
        }
        return texts
    }
}
