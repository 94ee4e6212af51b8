import AccountStore
import AppleIDEmulator
import AppleSignIn
import AppleSignInAsyncHTTPClient
import ArgumentParser
import AuthServer
import Crypto
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import UnixSignals

/// `siwa demo`: the emulator and the server in one process, on SQLite, with no configuration.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract:
            "Run the Apple ID emulator and the server together, on SQLite, with no configuration and no Apple account.",
        discussion: """
            Writes only into the working folder: the database (--database), the demo team's key in siwa-emulator/ \
            and the data key siwa-data.key. Ctrl-C stops both.

            Example:
              siwa demo --port 8080 --emulator-port 9090
            """
    )

    @Option(help: "The server's port.")
    var port = 8080

    @Option(help: "The emulator's port.")
    var emulatorPort = 9090

    @Option(help: "The SQLite database file.")
    var database = "siwa-demo.sqlite"

    func run() async throws {
        var logger = Logger(label: "siwa")
        logger.logLevel = .info
        let serverURL = "http://localhost:\(port)"
        let keyFile = try EmulatorCommand.demoKeyFile()
        let teamKey = try P256.Signing.PrivateKey(pemRepresentation: String(contentsOfFile: keyFile, encoding: .utf8))
        let emulator = try await AppleIDEmulator(
            configuration: .demo(key: teamKey, serverURL: serverURL),
            delivery: HTTPNotificationDelivery(),
            logger: logger
        )
        var settings = try ServerSettings.load(from: [
            "SIWA_PUBLIC_URL": serverURL,
            "SIWA_PORT": String(port),
            "SIWA_APPLE_BASE_URL": "http://127.0.0.1:\(emulatorPort)",
            "SIWA_TEAM_ID": EmulatorConfiguration.demoTeamID,
            "SIWA_KEY_ID": EmulatorConfiguration.demoKeyID,
            "SIWA_PRIVATE_KEY_FILE": keyFile,
            "SIWA_BUNDLE_IDS": EmulatorConfiguration.demoBundleID,
            "SIWA_SERVICES_ID": EmulatorConfiguration.demoServicesID,
            "SIWA_DATABASE_PATH": database,
            // Every compatibility contract, so that the tutorials' apps work against the demo unchanged.
            "SIWA_COMPAT": "all",
        ])
        settings.host = "127.0.0.1"
        DescriptorLimit.apply(to: &settings.server.connections, logger: logger)
        let store = try await StoreFactory.open(settings, logger: logger)
        let server = try await buildApplication(
            configuration: settings.server,
            apple: settings.apple,
            store: store.store,
            transport: AsyncHTTPClientTransport(),
            dataKey: settings.dataKey,
            host: settings.host,
            port: port,
            logger: logger
        )
        print(Self.banner(port: port, emulatorPort: emulatorPort, database: database))
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: emulator.application(port: emulatorPort)), .init(service: server)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        do {
            try await group.run()
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    static func banner(port: Int, emulatorPort: Int, database: String) -> String {
        """

        siwa demo is running (Ctrl-C stops it)
          server:    http://localhost:\(port)      (database: \(database))
          emulator:  http://localhost:\(emulatorPort)  (plays appleid.apple.com)

        Sign in in a browser: open http://localhost:\(port)/login

        Sign in as an iPhone app would:
          CRED=$(curl -s -X POST localhost:\(emulatorPort)/emulator/native-sign-in -H 'content-type: application/json' \\
            -d '{"clientId":"\(EmulatorConfiguration.demoBundleID)","email":"jane@example.com","givenName":"Jane"}')
          curl -s -X POST localhost:\(port)/auth/apple/native -H 'content-type: application/json' \\
            -d "$(echo "$CRED" | python3 -c 'import json,sys; c=json.load(sys.stdin); print(json.dumps({"identityToken": c["identityToken"], "authorizationCode": c["authorizationCode"], "givenName": (c.get("fullName") or {}).get("givenName")}))')"
        """
    }
}
