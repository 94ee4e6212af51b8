import Foundation
import Testing

/// A Python script in the `Python/` folder beside the test that names it, run with the interpreter
/// `scripts/with-python-client` provides (`SIWA_TEST_PYTHON`, which has the pinned libraries from PyPI); the tests
/// that need it are skipped without.
public struct PythonClientScript: Sendable {
    /// The interpreter, from `SIWA_TEST_PYTHON`; `nil` when it is not set.
    public static let python = ProcessInfo.processInfo.environment["SIWA_TEST_PYTHON"]

    public let path: String

    /// The script `name` in the `Python/` folder beside the calling test file.
    /// - Parameters:
    ///   - name: The script's file name, such as `oidc_client.py`.
    ///   - testFile: The test file whose folder holds `Python/`; the caller's, unless told.
    public init(_ name: String, beside testFile: String = #filePath) {
        path = URL(fileURLWithPath: testFile).deletingLastPathComponent().appendingPathComponent("Python/\(name)").path
    }

    /// Runs the script (its exit status must be 0) and returns its last output line as JSON.
    /// - Parameter arguments: The script's arguments.
    public func run(_ arguments: [String]) async throws -> [String: Any] {
        let executable = try #require(Self.python)
        let (status, out, err) = try await runChildProcess(executable, arguments: [path] + arguments)
        let stderr = String(decoding: err, as: UTF8.self)
        #expect(status == 0, "the client script failed: \(stderr)")
        let lines = String(decoding: out, as: UTF8.self).split(separator: "\n")
        let last = try #require(lines.last, "no output; stderr: \(stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
    }
}
