import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` while nginx (Debian's package: `SIWA_TEST_NGINX`, which `scripts/with-nginx` sets) serves `servers`,
/// the inside of an `http { }` block, in a temporary folder of its own; stops it after `body`.
///
/// - Parameters:
///   - nginx: The nginx executable.
///   - servers: `upstream` and `server` blocks; each `listen` should name a loopback address and port.
///   - port: A port one of the `server` blocks listens on: nginx is ready when it accepts a connection there.
///   - body: What to do while nginx runs.
/// - Throws: ``NginxNotStarted`` when nginx does not accept connections within 5 s (its error log attached), or
///   what `body` throws.
public func withNginx<R>(
    _ nginx: String,
    servers: String,
    port: Int,
    _ body: () async throws -> R
) async throws -> R {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-nginx-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let temp = folder.path
    let configuration = """
        daemon off;
        worker_processes 1;
        \(getuid() == 0 ? "user root;" : "")
        pid \(temp)/nginx.pid;
        error_log \(temp)/error.log warn;
        events { worker_connections 1024; }
        http {
            access_log off;
            client_body_temp_path \(temp)/body;
            proxy_temp_path \(temp)/proxy;
            fastcgi_temp_path \(temp)/fastcgi;
            uwsgi_temp_path \(temp)/uwsgi;
            scgi_temp_path \(temp)/scgi;
        \(servers)
        }
        """
    let file = folder.appendingPathComponent("nginx.conf")
    try configuration.write(to: file, atomically: true, encoding: .utf8)
    let process = try ChildProcess(
        nginx,
        arguments: ["-c", file.path, "-p", temp],
        stdout: folder.appendingPathComponent("stdout.log").path,
        stderr: folder.appendingPathComponent("stdout.log").path
    )
    defer {
        process.terminate(signal: SIGTERM)
        _ = process.waitForExit()
    }
    // Ready when it accepts a connection.
    var ready = false
    for _ in 0..<200 where !ready {
        if (try? RawSocketConnection(port: port)) != nil {
            ready = true
        } else {
            try await Task.sleep(for: .milliseconds(25))
        }
    }
    guard ready else {
        throw NginxNotStarted(
            errorLog: (try? String(contentsOf: folder.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
        )
    }
    return try await body()
}

/// nginx did not accept connections on its port.
public struct NginxNotStarted: Error, CustomStringConvertible {
    /// What nginx wrote to its error log.
    public let errorLog: String
    public var description: String { "nginx did not start: \(errorLog)" }
}
