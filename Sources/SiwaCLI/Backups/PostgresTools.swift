import Foundation

/// PostgreSQL's own `pg_dump` and `pg_restore`, run with the database of siwa's URL: its parts go in `PG*`
/// environment variables, the password in `PGPASSWORD`, never on the command line (where `ps` shows it).
enum PostgresTools {
    /// What a tool answered.
    struct Run {
        var status: Int32
        var standardError: String
    }

    /// A tool that could not be run, in words for the operator.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The tool on `PATH`, else in Debian's versioned folders (`/usr/lib/postgresql/<version>/bin`, the newest),
    /// which `postgresql-client` does not put on `PATH` for every tool.
    static func find(_ tool: String, path: String? = ProcessInfo.processInfo.environment["PATH"]) -> String? {
        for folder in (path ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(folder)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { $0.compare($1, options: .numeric) == .orderedDescending }) {
            let candidate = "/usr/lib/postgresql/\(version)/bin/\(tool)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// The `PG*` variables that name the database of `url` (host, port, user, password, database, `sslmode`).
    static func environment(for url: String) throws(Failure) -> [String: String] {
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else {
            throw Failure(description: "the database URL has no host")
        }
        var environment = ["PGHOST": host, "PGDATABASE": String(components.path.dropFirst())]
        if let port = components.port { environment["PGPORT"] = String(port) }
        if let user = components.user { environment["PGUSER"] = user }
        if let password = components.password { environment["PGPASSWORD"] = password }
        if let mode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value {
            environment["PGSSLMODE"] = mode
        }
        return environment
    }

    /// Runs `tool` with `arguments` against the database of `url`, its standard output discarded, and waits for it
    /// (a command's one task: blocking its thread holds nothing else up).
    static func run(_ tool: String, _ arguments: [String], url: String) async throws(Failure) -> Run {
        guard let executable = find(tool) else {
            throw Failure(
                description:
                    "\(tool) is not installed: install PostgreSQL's client tools of the server's version or newer "
                    + "(Debian: apt-get install postgresql-client)"
            )
        }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        environment.merge(try Self.environment(for: url)) { $1 }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let finished = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { finished.continuation.yield($0.terminationStatus) }
        do {
            try process.run()
        } catch {
            throw Failure(description: "\(executable) could not be started: \(error)")
        }
        // Read while it runs, so that a long error output cannot fill the pipe and stall it.
        let text = errors.fileHandleForReading.readDataToEndOfFile()
        var status: Int32 = -1
        for await code in finished.stream {
            status = code
            break
        }
        return Run(status: status, standardError: String(decoding: text, as: UTF8.self))
    }
}
