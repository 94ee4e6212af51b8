import AccountStore
import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import SiwaTesting
import Testing

/// schemathesis (PyPI) against a live siwa with the emulator as Apple: it reads the document the server serves at
/// `/openapi.json`, generates requests for every operation (seeded, a fixed number per operation) and fails on a 5xx
/// or on any answer whose status, Content-Type, headers or body the document does not allow. Four passes: the
/// operations that leave sessions alone, those that end them (with a user of their own), every operation with session
/// cookies only, and every operation with the database down. `scripts/with-python-client` installs it;
/// `Python/schemathesis.toml` holds the settings.
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
        "adminDeleteUser", "consoleAction", "oauthLogout", "oauthLogoutPost", "oauthRevoke",
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
        .timeLimit(.minutes(6))
    )
    func everyAnswerOfALiveServerMatchesTheDocument() async throws {
        let store = InMemoryAccountStore()
        try await ServerHarness.run(store: store, configuration: Self.configuration()) { harness in
            let user = try await Self.signIn(harness, "user@example.com")
            let admin = try await Self.signIn(harness, "admin@example.com")
            let adminID = try #require(UserID(admin.userID))
            #expect(try await store.grantAdmin(AdminSubject(adminID), by: .system, now: harness.clock.now))
            let ending = try await Self.signIn(harness, "ending@example.com")
            let cookieAdmin = try await Self.signIn(harness, "admin@example.com")
            let vapor = try await Self.vaporTutorialToken(harness, "vapor@example.com")
            let credentials = try await Self.credentials(harness)
            let tokens = [
                "SIWA_SCHEMATHESIS_USER_TOKEN": user.accessToken,
                "SIWA_SCHEMATHESIS_ADMIN_TOKEN": admin.accessToken,
                "SIWA_SCHEMATHESIS_VAPOR_TOKEN": vapor,
                "SIWA_SCHEMATHESIS_COOKIE_TOKEN": user.accessToken,
            ]
            var endingTokens = tokens
            endingTokens["SIWA_SCHEMATHESIS_USER_TOKEN"] = ending.accessToken
            var cookieTokens = tokens
            cookieTokens["SIWA_SCHEMATHESIS_COOKIE_TOKEN"] = cookieAdmin.accessToken
            let passes: [(name: String, filters: [String], tokens: [String: String], pass: Pass)] = [
                (
                    "every operation but those ending sessions",
                    Self.ending.flatMap { ["--exclude-operation-id", $0] },
                    tokens, .asWritten
                ),
                (
                    "the operations that end sessions", Self.ending.flatMap { ["--include-operation-id", $0] },
                    endingTokens, .asWritten
                ),
                // As a browser: the session cookies only (an admin's), so every operation that takes one is called
                // with it, and those that change state meet the CSRF check (no Origin).
                (
                    "with session cookies only", ["--phases", "fuzzing", "--max-examples", "10"], cookieTokens,
                    .cookiesOnly
                ),
                // Every operation, now allowed its documented 503, still answers as the document says.
                ("with the database down", ["--phases", "fuzzing", "--max-examples", "5"], tokens, .databaseDown),
            ]
            for run in passes {
                await store.setUnavailable(run.pass == .databaseDown)
                let result = try await Self.run(
                    harness,
                    filters: run.filters,
                    tokens: run.tokens,
                    credentials: credentials,
                    pass: run.pass
                )
                #expect(result.status == 0, "schemathesis, \(run.name):\n\(result.log)")
            }
            await store.setUnavailable(false)
        }
    }

    /// How a run differs from the settings file.
    enum Pass {
        /// As the file says.
        case asWritten
        /// Without the bearer schemes' credentials: the cookie schemes are the only credentials.
        case cookiesOnly
        /// 503 `database_unavailable` is the one server error the document allows, and only while the database cannot
        /// be reached.
        case databaseDown

        func settings(_ text: String) -> String {
            switch self {
            case .asWritten:
                return text
            case .cookiesOnly:
                var text = text
                for scheme in ["bearer", "adminBearer", "vaporTutorialToken"] {
                    let section = try? Regex("\\[auth\\.openapi\\.\(scheme)\\]\\nbearer = [^\\n]*\\n")
                    guard let section, text.contains(section) else {
                        Issue.record("schemathesis.toml has no [auth.openapi.\(scheme)] section to leave out")
                        continue
                    }
                    text.replace(section, with: "")
                }
                return text
            case .databaseDown:
                let check = "[checks.not_a_server_error]\nenabled = true\n"
                #expect(text.contains(check))
                return text.replacingOccurrences(
                    of: check,
                    with: check + "expected-statuses = [\"2XX\", \"3XX\", \"4XX\", 503]\n"
                )
            }
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

    /// Real credentials for schemathesis to use among the values it generates (the settings' `dictionaries`): fresh
    /// identity tokens from the emulator (each opens a few sessions, then is refused as replayed) and refresh tokens
    /// of siwa's own sessions and of the contracts (each valid on its own contract only).
    static func credentials(
        _ harness: ServerHarness
    ) async throws -> (identityTokens: [String], refreshTokens: [String]) {
        var identityTokens: [String] = []
        for index in 0..<6 {
            let credential = try await harness.appleCredential("generated\(index)@example.com", givenName: "Gen")
            identityTokens.append(try #require(credential["identityToken"] as? String))
        }
        var refreshTokens: [String] = []
        for index in 0..<2 {
            let signedIn = try await harness.signIn("refresh\(index)@example.com")
            refreshTokens.append(try #require(signedIn.json["refreshToken"] as? String))
        }
        let rentManager = try await harness.appleCredential("rentmanager@example.com")
        let rentManagerSignIn = try await harness.call(
            .post,
            "/api/auth/apple",
            json: ["identityToken": try #require(rentManager["identityToken"] as? String)]
        )
        refreshTokens.append(try #require(rentManagerSignIn.json["refreshToken"] as? String))
        let serviceStack = try await harness.appleCredential("servicestack@example.com")
        let serviceStackSignIn = try await harness.call(
            .post,
            "/api/Authenticate",
            json: ["provider": "apple", "accessToken": try #require(serviceStack["identityToken"] as? String)]
        )
        refreshTokens.append(try #require(serviceStackSignIn.json["refreshToken"] as? String))
        return (identityTokens, refreshTokens)
    }

    /// Runs `schemathesis run` against the harness's server with the document it serves, from a folder holding a copy
    /// of the settings and the credentials' dictionary files.
    static func run(
        _ harness: ServerHarness,
        filters: [String],
        tokens: [String: String],
        credentials: (identityTokens: [String], refreshTokens: [String]),
        pass: Pass = .asWritten
    ) async throws -> (status: Int32, log: String) {
        let executable = try #require(schemathesis)
        let server = harness.serverURL
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-schemathesis-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let settingsCopy = folder.appendingPathComponent("schemathesis.toml")
        let settingsText = pass.settings(try String(contentsOfFile: settings, encoding: .utf8))
        try Data(settingsText.utf8).write(to: settingsCopy)
        for (name, values) in [
            ("identity-tokens", credentials.identityTokens), ("refresh-tokens", credentials.refreshTokens),
        ] {
            // libFuzzer's dictionary format: one quoted value a line (tokens hold no quote or backslash).
            let lines = values.map { "\"\($0)\"\n" }.joined()
            try Data(lines.utf8).write(to: folder.appendingPathComponent("\(name).dict"))
        }
        var environment = ProcessInfo.processInfo.environment
        environment.merge(tokens) { _, new in new }
        environment["NO_COLOR"] = "1"
        let (status, out, err) = try await runChildProcess(
            executable,
            arguments: [
                "--config-file", settingsCopy.path, "run", "\(server)/openapi.json", "--url", server, "--no-color",
            ]
                + filters,
            environment: environment,
            directory: folder.path
        )
        let log = String(decoding: out, as: UTF8.self) + String(decoding: err, as: UTF8.self)
        return (status, log)
    }
}
