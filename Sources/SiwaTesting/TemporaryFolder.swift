public import Foundation

/// A new folder `<prefix>-<UUID>` under the temporary directory, removed with everything in it when the last
/// reference to it goes.
///
/// A suite that holds one as a stored property gets a new folder for each test (Swift Testing makes a suite instance
/// per test), removed once the test has ended, passed or failed. Stop child processes that write into it within the
/// test, as the tests do. For a folder in one scope, ``withTemporaryFolder(_:isolation:_:)``: a local reference may
/// go at its last use, before the end of the scope.
public final class TemporaryFolder: Sendable {
    public let url: URL
    public var path: String { url.path }

    /// Creates the folder.
    /// - Parameter prefix: The start of its name, which says what made it (`siwa-config`, `siwa-server`).
    public init(_ prefix: String) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Writes `text` to the file `name` in the folder and returns its path.
    public func write(_ name: String, _ text: String) throws -> String {
        let path = url.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    fileprivate func remove() {
        try? FileManager.default.removeItem(at: url)
    }

    deinit { remove() }
}

/// Runs `body` with a new ``TemporaryFolder`` and removes the folder when `body` returns or throws (an SQLite
/// database in it goes with its `-wal`, `-shm` and `-journal` files; shut the store down within `body`).
public func withTemporaryFolder<R>(
    _ prefix: String,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (TemporaryFolder) async throws -> R
) async throws -> R {
    let folder = try TemporaryFolder(prefix)
    defer { folder.remove() }
    return try await body(folder)
}
