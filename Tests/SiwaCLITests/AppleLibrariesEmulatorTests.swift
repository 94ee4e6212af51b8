import Crypto
import Foundation
import SiwaTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Other projects' Sign in with Apple libraries, from PyPI (`scripts/with-python-client` installs them), complete the
/// web sign-in against `siwa emulator` as another project's CI would run it: the built binary, a `--config` file with
/// a team whose key pair is made here, and only Apple's URLs changed in the library (docs/emulator.md has the table).
/// The script `Python/apple_libraries.py` runs each in a Django site on loopback and drives it as a browser.
@Suite("siwa emulator: other projects' Apple libraries")
struct AppleLibrariesEmulatorTests {
    static let python = PythonClientScript.python
    static let script = PythonClientScript("apple_libraries.py")
    static let teamID = "TEAMPYLIB1"
    static let keyID = "KEYPYLIBS1"
    static let servicesID = "com.example.pylibs.web"

    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder("siwa-pylibs")
    }

    @Test(.enabled(if: python != nil, "set SIWA_TEST_PYTHON (scripts/with-python-client does) to run social-auth-core"))
    func socialAuthCoreAppleIdAuthSignsIn() async throws {
        try await signInCompletes(library: "social-auth", email: "social-auth@example.com")
    }

    @Test(.enabled(if: python != nil, "set SIWA_TEST_PYTHON (scripts/with-python-client does) to run django-allauth"))
    func djangoAllauthAppleProviderSignsIn() async throws {
        try await signInCompletes(library: "allauth", email: "allauth@example.com")
    }

    /// The library's own client secret is what the emulator checks: signed with a key the team does not have, the code
    /// exchange is refused as Apple refuses it, and the library signs no one in.
    @Test(.enabled(if: python != nil, "set SIWA_TEST_PYTHON (scripts/with-python-client does) to run social-auth-core"))
    func aLibrarySigningWithAnotherKeyIsRefused() async throws {
        try await withEmulator { emulator in
            let otherKey = try folder.write("AuthKey_OTHER.p8", P256.Signing.PrivateKey().pemRepresentation)
            let (status, _, _) = try await runChildProcess(
                try #require(Self.python),
                arguments: [Self.script.path]
                    + emulator.arguments("social-auth", email: "other@example.com", keyFile: otherKey)
            )
            #expect(status != 0, "the sign-in must fail")
            let exchanges = try await emulator.codeExchanges()
            #expect(exchanges.count == 1)
            #expect((exchanges.first?["outcome"] as? String)?.hasPrefix("invalid_client") == true, "\(exchanges)")
        }
    }

    // MARK: Scenario

    /// Runs `library` through the web sign-in as `email`, then checks that the Apple user id (sub) and e-mail it
    /// stored and signed its session in with are those the emulator gave that Apple ID, and that it exchanged the
    /// code with its own client secret.
    private func signInCompletes(library: String, email: String) async throws {
        try await withEmulator { emulator in
            let answer = try await Self.script.run(emulator.arguments(library, email: email))
            // The emulator's own word on who signed in: the same Apple ID has the same sub for the team.
            let device = try await SiwaProcess.emulatorControl(
                port: emulator.port,
                "/emulator/native-sign-in",
                ["clientId": Self.servicesID, "email": email]
            )
            let sub = try #require(device["user"] as? String)
            #expect(answer["sub"] as? String == sub)
            #expect(answer["email"] as? String == email)
            #expect(answer["firstName"] as? String == "Py", "the name Apple posts once, in `user`")
            let session = try #require(answer["session"] as? [String: Any])
            #expect(session["signedIn"] as? Bool == true)
            #expect(session["email"] as? String == email)

            let exchanges = try await emulator.codeExchanges()
            #expect(exchanges.count == 1)
            #expect(exchanges.first?["grantType"] as? String == "authorization_code")
            #expect(exchanges.first?["clientID"] as? String == Self.servicesID)
            #expect(exchanges.first?["outcome"] as? String == "200", "\(exchanges)")
        }
    }

    // MARK: Helpers

    /// A running emulator, the port the script's Django site is to serve on, and the team's `.p8`.
    private struct Running {
        let port: Int
        let sitePort: Int
        let keyFile: String

        /// The script's arguments: LIBRARY EMULATOR_URL SITE_PORT TEAM_ID KEY_ID KEY_FILE CLIENT_ID EMAIL; the
        /// library signs its client secrets with `keyFile`, the team's unless told.
        func arguments(_ library: String, email: String, keyFile: String? = nil) -> [String] {
            typealias Suite = AppleLibrariesEmulatorTests
            return [
                library, "http://127.0.0.1:\(port)", String(sitePort), Suite.teamID, Suite.keyID,
                keyFile ?? self.keyFile, Suite.servicesID, email,
            ]
        }

        /// The calls of the token endpoint in the emulator's log.
        func codeExchanges() async throws -> [[String: Any]] {
            try await SiwaProcess.emulatorLog(port: port).filter { $0["endpoint"] as? String == "token" }
        }
    }

    /// Starts `siwa emulator --config` with a team whose key pair is made here and a Services ID whose redirect URIs
    /// are the Django site's callbacks on a free loopback port, runs `body`, and stops the emulator.
    private func withEmulator(_ body: (Running) async throws -> Void) async throws {
        let key = P256.Signing.PrivateKey()
        let keyFile = try folder.write("AuthKey_\(Self.keyID).p8", key.pemRepresentation)
        let sitePort = try freeLoopbackPort(in: 10_000..<20_000)
        let configuration: [String: Any] = [
            "teams": [
                [
                    "teamID": Self.teamID,
                    "keyID": Self.keyID,
                    "publicKeyPEM": key.publicKey.pemRepresentation,
                    "clients": [
                        [
                            "clientID": Self.servicesID,
                            "redirectURIs": [
                                // social-auth-app-django's and django-allauth's callbacks.
                                "http://127.0.0.1:\(sitePort)/complete/apple-id/",
                                "http://127.0.0.1:\(sitePort)/accounts/apple/login/callback/",
                            ],
                        ]
                    ],
                ]
            ],
            "allowLocalRedirectURIs": true,
        ]
        let configFile = try folder.write(
            "emulator.json",
            String(decoding: try JSONSerialization.data(withJSONObject: configuration), as: UTF8.self)
        )
        let (emulator, port) = try await SiwaProcess.startEmulator(in: folder.url, arguments: ["--config", configFile])
        defer { SiwaProcess.stopEmulator(emulator) }
        try await body(Running(port: port, sitePort: sitePort, keyFile: keyFile))
    }
}
