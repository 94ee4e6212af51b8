import Foundation
import HTTPTypes
import HummingbirdTesting
import SiwaTesting
import Testing

/// ServiceStack's own Python client (`servicestack` from PyPI) against siwa: sign-in, the secure service, its refresh
/// of an expired bearer token, and its typed 401. `scripts/with-python-client` provides the interpreter.
@Suite("Server: ServiceStack's Python client")
struct ServiceStackPythonClientTests {
    static let python = ProcessInfo.processInfo.environment["SIWA_TEST_PYTHON"]

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Python/servicestack_client.py").path

    /// Runs the script and returns its last output line as JSON.
    static func run(_ arguments: [String]) async throws -> [String: Any] {
        let executable = try #require(python)
        let (status, out, err) = try await runChildProcess(executable, arguments: [script] + arguments)
        let stderr = String(decoding: err, as: UTF8.self)
        #expect(status == 0, "the client script failed: \(stderr)")
        let lines = String(decoding: out, as: UTF8.self).split(separator: "\n")
        let last = try #require(lines.last, "no output; stderr: \(stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
    }

    @Test(
        .enabled(
            if: python != nil,
            "set SIWA_TEST_PYTHON (scripts/with-python-client does) to run ServiceStack's client"
        )
    )
    func jsonServiceClientSignsInRefreshesAndGetsTypedErrors() async throws {
        try await ServerHarness.run(configuration: CompatibilityTests.configuration()) { harness in
            let server = "http://127.0.0.1:\(try #require(harness.server.port))"
            let signedIn = try await Self.run(["sign-in", server, harness.emulatorURL])
            let bearer = try #require(signedIn["bearerToken"] as? String)
            let refresh = try #require(signedIn["refreshToken"] as? String)
            let userID = try #require(signedIn["userId"] as? String)

            harness.clock.advance(by: 901)  // the bearer token (15 minutes) has expired
            #expect(try await harness.call(.get, "/api/me", bearer: bearer).status == .unauthorized)
            let refreshed = try await Self.run(["after-expiry", server, bearer, refresh, userID])
            #expect(refreshed["refreshedBearer"] as? Bool == true)

            let refused = try await Self.run(["unauthenticated", server])
            #expect(refused["errorCode"] as? String == "Unauthorized")
        }
    }
}
