import Foundation
import SiwaTesting
import Testing

/// A script of `Tests/AuthServerTests/Python/`, run with the interpreter `scripts/with-python-client` provides
/// (`SIWA_TEST_PYTHON`, which has the relying-party libraries from PyPI); the tests that need it are skipped without.
struct PythonClientScript {
    static let python = ProcessInfo.processInfo.environment["SIWA_TEST_PYTHON"]

    let path: String

    /// The script `name` next to the tests.
    init(_ name: String) {
        path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Python/\(name)").path
    }

    /// Runs the script (its exit status must be 0) and returns its last output line as JSON.
    func run(_ arguments: [String]) async throws -> [String: Any] {
        let executable = try #require(Self.python)
        let (status, out, err) = try await runChildProcess(executable, arguments: [path] + arguments)
        let stderr = String(decoding: err, as: UTF8.self)
        #expect(status == 0, "the client script failed: \(stderr)")
        let lines = String(decoding: out, as: UTF8.self).split(separator: "\n")
        let last = try #require(lines.last, "no output; stderr: \(stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
    }
}
