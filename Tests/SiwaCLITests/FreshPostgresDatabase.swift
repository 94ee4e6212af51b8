import Foundation
import Logging
import PostgresNIO
import Testing

/// The URL of the test run's PostgreSQL server (`scripts/with-postgres`), or `nil` when there is none.
let testPostgresURL = ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"]

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
    let logger = Logger(label: "siwa.test.postgres") { _ in SwiftLogNoOpLogHandler() }
    let configuration = PostgresConnection.Configuration(
        host: try #require(components.host),
        port: components.port ?? 5432,
        username: try #require(components.user),
        password: components.password,
        database: String(components.path.dropFirst()),
        tls: .disable
    )
    let name = prefix + UUID().uuidString.lowercased().replacing("-", with: "")
    let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
    try await connection.query("CREATE DATABASE \(unescaped: name)", logger: logger)
    components.path = "/" + name
    do {
        try await body(try #require(components.string))
    } catch {
        _ = try? await connection.query("DROP DATABASE \(unescaped: name) WITH (FORCE)", logger: logger)
        try? await connection.close()
        throw error
    }
    _ = try? await connection.query("DROP DATABASE \(unescaped: name) WITH (FORCE)", logger: logger)
    try? await connection.close()
}

/// Runs one statement on the database of `url` (a test's own set-up, such as a schema version from a newer siwa).
func runPostgresStatement(_ url: String, _ statement: String) async throws {
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
        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
    } catch {
        try? await connection.close()
        throw error
    }
    try await connection.close()
}

/// The first column of each row `query` answers on the database of `url`, as text.
func postgresTexts(_ url: String, _ query: String) async throws -> [String] {
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
        var texts: [String] = []
        for try await text in try await connection.query(PostgresQuery(unsafeSQL: query), logger: logger)
            .decode(String.self)
        {
            texts.append(text)
        }
        try await connection.close()
        return texts
    } catch {
        try? await connection.close()
        throw error
    }
}
