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
import Synchronization
import UnixSignals

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `siwa demo`: the emulator and the server in one process, on SQLite, with no configuration.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract:
            "Run the Apple ID emulator and the server together, on SQLite, with no configuration and no Apple account.",
        discussion: """
            Writes only into the working folder: the database (--database), the demo team's key and the Apple \
            settings it runs with in siwa-emulator/ (so that siwa users delete here revokes at the demo's \
            emulator), and the data key \(SettingsCatalog.declared.storage.dataKeyFile.defaultText). Ctrl-C stops both.

            Reads the settings siwa serve reads (SIWA_* variables, a .env file, --config FILE) over the demo's own: \
            SIWA_LOG_LEVEL=debug siwa demo logs at debug. The Apple side, the public URL, the port and the \
            database stay the demo's.

            Example:
              siwa demo --port 8080 --emulator-port 9090
            """
    )

    @Option(help: "A configuration file (.json, .yaml, or KEY=value lines), read as siwa serve reads it.")
    var config: String?

    @Option(help: "The server's port.")
    var port = 8080

    @Option(help: "The emulator's port.")
    var emulatorPort = 9090

    @Option(help: "The SQLite database file.")
    var database = "siwa-demo.sqlite"

    func run() async throws {
        // A busy port is named before anything starts (and again if it is taken meanwhile, below).
        for (flag, value) in [("--port", port), ("--emulator-port", emulatorPort)] where !Self.isFree(port: value) {
            Terminal.error(
                "error: port \(value) is in use on 127.0.0.1; choose another with \(flag) (e.g. \(flag) \(value + 1))"
            )
            throw ExitCode(1)
        }
        let serverURL = "http://localhost:\(port)"
        let keyFile = try EmulatorCommand.demoKeyFile()
        // What ties the server to the demo's emulator, its port and its file stays the demo's; the rest is the
        // operator's to change (a log level, a rate limit, relying parties), over the demo's defaults.
        let apple = [
            "SIWA_APPLE_BASE_URL": "http://127.0.0.1:\(emulatorPort)",
            "SIWA_TEAM_ID": EmulatorConfiguration.demoTeamID,
            "SIWA_KEY_ID": EmulatorConfiguration.demoKeyID,
            "SIWA_PRIVATE_KEY_FILE": keyFile,
            "SIWA_BUNDLE_IDS": EmulatorConfiguration.demoBundleID,
            "SIWA_SERVICES_ID": EmulatorConfiguration.demoServicesID,
            "SIWA_DATABASE_PATH": database,
        ]
        var settings: ServerSettings
        do {
            let source = try await SettingsSource.load(
                configFile: config,
                fixed: apple.merging(["SIWA_PUBLIC_URL": serverURL, "SIWA_PORT": String(port)]) { $1 },
                defaults: [
                    // Every compatibility contract, so that the tutorials' apps work against the demo unchanged.
                    "SIWA_COMPAT": "all",
                    // No metrics listener: its port would be a third one to find free, for a demo nobody scrapes.
                    "SIWA_METRICS_PORT": "0",
                ]
            )
            settings = try ServerSettings.load(from: source)
        } catch let problem as ServerSettings.Problem {
            Terminal.error("error: \(problem)")
            throw ExitCode(2)
        }
        settings.databaseURL = nil
        settings.host = "127.0.0.1"
        // A developer compares Apple's button styles on the demo's /login; a product shows its one.
        settings.server.branding.showsButtonStyles = true
        let logger = Logger.siwa(level: settings.logLevel, format: settings.logFormat)
        try Self.writeAppleSettings(apple)
        let teamKey = try P256.Signing.PrivateKey(pemRepresentation: String(contentsOfFile: keyFile, encoding: .utf8))
        var emulatorConfiguration = EmulatorConfiguration.demo(key: teamKey, serverURL: serverURL)
        // The demo's callbacks are on http://localhost, which Apple refuses: allowed here, and said in the banner.
        emulatorConfiguration.allowLocalRedirectURIs = true
        let emulator = try await AppleIDEmulator(
            configuration: emulatorConfiguration,
            delivery: HTTPNotificationDelivery(),
            logger: logger
        )
        DescriptorLimit.apply(to: &settings.server.connections, logger: logger)
        let store = try await StoreFactory.open(settings, logger: logger, checksDataKey: true)
        let running = Running(banner: Self.banner(port: port, emulatorPort: emulatorPort, database: database))
        let server = try await buildApplication(
            configuration: settings.server,
            apple: try settings.apple,
            store: store.store,
            transport: AsyncHTTPClientTransport(),
            sealer: settings.makeDataSealer(logger: logger),
            host: settings.host,
            port: port,
            logger: logger,
            onServerRunning: { _ in running.started() }
        )
        let group = ServiceGroup(
            configuration: .init(
                services: [
                    .init(
                        service: emulator.application(port: emulatorPort, onServerRunning: { _ in running.started() })
                    ),
                    .init(service: server),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        do {
            try await group.run()
        } catch {
            await store.close()
            if "\(error)".contains("Address already in use") {
                Terminal.error(
                    "error: port \(port) or \(emulatorPort) was taken while siwa started; choose others with --port and "
                        + "--emulator-port"
                )
                throw ExitCode(1)
            }
            throw error
        }
        await store.close()
    }

    /// Prints the banner once both the server and the emulator have bound their ports: never before (a port in
    /// use would contradict it), and flushed at once, wherever standard output goes.
    final class Running: Sendable {
        private let count = Mutex(0)
        let banner: String

        init(banner: String) {
            self.banner = banner
        }

        func started() {
            let both = count.withLock { count -> Bool in
                count += 1
                return count == 2
            }
            guard both else { return }
            Terminal.say(banner)
        }
    }

    /// Writes the Apple side the demo runs with beside the team's key, for the operator commands run in this folder
    /// (``ServerSettings/demoApple(for:)``). It names a key file, never holds a key.
    static func writeAppleSettings(_ settings: [String: String]) throws {
        let text = settings.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)\n" }.joined()
        try text.write(toFile: ServerSettings.demoAppleSettingsFile, atomically: true, encoding: .utf8)
    }

    /// Whether nothing listens on `port` of 127.0.0.1 now.
    static func isFree(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return true }
        defer { close(descriptor) }
        var reuse: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return bound == 0
    }

    static func banner(port: Int, emulatorPort: Int, database: String) -> String {
        """

        siwa demo is running (Ctrl-C stops it)
          server:    http://localhost:\(port)      (database: \(database))
          emulator:  http://localhost:\(emulatorPort)  (plays appleid.apple.com)

        Sign in in a browser: open http://localhost:\(port)/login
        \(EmulatorCommand.localRedirectURIsNotice)
        The emulator's console (Apple IDs, notifications, faults, log): http://localhost:\(emulatorPort)/

        Sign in as an iPhone app would:
          CRED=$(curl -s -X POST localhost:\(emulatorPort)/emulator/native-sign-in -H 'content-type: application/json' \\
            -d '{"clientId":"\(EmulatorConfiguration.demoBundleID)","email":"jane@example.com","givenName":"Jane"}')
          curl -s -X POST localhost:\(port)/auth/apple/native -H 'content-type: application/json' \\
            -d "$(echo "$CRED" | python3 -c 'import json,sys; c=json.load(sys.stdin); print(json.dumps({"identityToken": c["identityToken"], "authorizationCode": c["authorizationCode"], "givenName": (c.get("fullName") or {}).get("givenName")}))')"
        """
    }
}
