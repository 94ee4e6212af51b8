import Foundation
import HTTPTypes
import HummingbirdTesting
import SiwaTesting
import Testing

/// ServiceStack's own Python client (`servicestack` from PyPI) against siwa: sign-in, the secure service, its refresh
/// of an expired bearer token, and its typed 401. `scripts/with-python-client` provides the interpreter.
@Suite("Server: ServiceStack's Python client")
struct ServiceStackPythonClientTests {
    static let python = PythonClientScript.python
    static let script = PythonClientScript("servicestack_client.py")

    static func run(_ arguments: [String]) async throws -> [String: Any] {
        try await script.run(arguments)
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
