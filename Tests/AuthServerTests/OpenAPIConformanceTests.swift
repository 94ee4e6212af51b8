import AccountStore
import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import SiwaTesting
import Testing

/// schemathesis (PyPI) against a live siwa with the emulator as Apple: it reads the document the server serves at
/// `/openapi.json`, generates requests for every operation (seeded, a fixed number per operation) and fails on a 5xx
/// or on any answer whose status, Content-Type, headers or body the document does not allow.
/// `scripts/with-python-client` installs it; `Python/schemathesis.toml` holds the settings.
@Suite("Server: schemathesis against the OpenAPI document")
struct OpenAPIConformanceTests {
    static let python = ProcessInfo.processInfo.environment["SIWA_TEST_PYTHON"]

    /// The `schemathesis` command of the Python environment that `SIWA_TEST_PYTHON` belongs to.
    static let schemathesis: String? = python.map {
        URL(fileURLWithPath: $0).deletingLastPathComponent().appendingPathComponent("schemathesis").path
    }.flatMap { FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil }

    static let settings = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Python/schemathesis.toml").path

    /// The operations that end sessions or change accounts: the caller's own (logout, deleting the account) or, for an
    /// admin, any account's whose id schemathesis learns from earlier answers. They run in a second pass, after every
    /// other operation, with a user of their own, so that they do not sign the first pass's callers out halfway.
    static let ending = [
        "logout", "deleteMe", "serviceStackLogout", "adminEndSessions", "adminDisableUser", "adminEnableUser",
        "adminDeleteUser", "consoleAction",
    ]

    /// Every client contract on; rate limits off (schemathesis sends hundreds of requests from one address).
    static func configuration() -> AuthServerConfiguration {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.compatibility = .all
        configuration.notificationRateLimit = nil
        return configuration
    }

    @Test(
        .enabled(if: schemathesis != nil, "set SIWA_TEST_PYTHON (scripts/with-python-client does) to run schemathesis"),
        .timeLimit(.minutes(5))
    )
    func everyAnswerOfALiveServerMatchesTheDocument() async throws {
        let store = InMemoryAccountStore()
        try await ServerHarness.run(store: store, configuration: Self.configuration()) { harness in
            let user = try await Self.signIn(harness, "user@example.com")
            let admin = try await Self.signIn(harness, "admin@example.com")
            let adminID = try #require(UserID(admin.userID))
            #expect(try await store.grantAdmin(AdminSubject(adminID), by: .system, now: harness.clock.now))
            let ending = try await Self.signIn(harness, "ending@example.com")
            let vapor = try await Self.vaporTutorialToken(harness, "vapor@example.com")
            let tokens = [
                "SIWA_SCHEMATHESIS_USER_TOKEN": user.accessToken,
                "SIWA_SCHEMATHESIS_ADMIN_TOKEN": admin.accessToken,
                "SIWA_SCHEMATHESIS_VAPOR_TOKEN": vapor,
            ]
            let everyOther = try await Self.run(
                harness,
                filters: Self.ending.flatMap { ["--exclude-operation-id", $0] },
                tokens: tokens
            )
            #expect(everyOther.passed, "schemathesis, every operation but those ending sessions:\n\(everyOther.log)")
            var endingTokens = tokens
            endingTokens["SIWA_SCHEMATHESIS_USER_TOKEN"] = ending.accessToken
            let endingOnes = try await Self.run(
                harness,
                filters: Self.ending.flatMap { ["--include-operation-id", $0] },
                tokens: endingTokens
            )
            #expect(endingOnes.passed, "schemathesis, the operations that end sessions:\n\(endingOnes.log)")
        }
    }

    /// A native sign-in through the emulator: the access token and the user id.
    static func signIn(_ harness: ServerHarness, _ email: String) async throws -> (accessToken: String, userID: String)
    {
        let signedIn = try await harness.signIn(email)
        #expect(signedIn.status == .ok)
        let token = try #require(signedIn.json["accessToken"] as? String)
        let user = try #require(signedIn.json["user"] as? [String: Any])
        return (token, try #require(user["id"] as? String))
    }

    /// The Vapor tutorial's opaque token, from its own sign-in route.
    static func vaporTutorialToken(_ harness: ServerHarness, _ email: String) async throws -> String {
        let credential = try await harness.appleCredential(email)
        let answer = try await harness.call(
            .post,
            "/api/auth/siwa",
            json: ["appleIdentityToken": try #require(credential["identityToken"] as? String)]
        )
        #expect(answer.status == .ok)
        return try #require(answer.json["accessToken"] as? String)
    }

    /// Runs `schemathesis run` against the harness's server with the document it serves.
    static func run(
        _ harness: ServerHarness,
        filters: [String],
        tokens: [String: String]
    ) async throws -> (passed: Bool, log: String) {
        let executable = try #require(schemathesis)
        let server = harness.serverURL
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-schemathesis-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var environment = ProcessInfo.processInfo.environment
        environment.merge(tokens) { _, new in new }
        environment["NO_COLOR"] = "1"
        let (status, out, err) = try await runChildProcess(
            executable,
            arguments: ["--config-file", settings, "run", "\(server)/openapi.json", "--url", server, "--no-color"]
                + filters,
            environment: environment,
            directory: folder.path
        )
        let log = String(decoding: out, as: UTF8.self) + String(decoding: err, as: UTF8.self)
        return (status == 0, log)
    }
}
