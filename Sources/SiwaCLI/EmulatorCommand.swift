import AppleIDEmulator
import ArgumentParser
import Crypto
import Foundation
import Hummingbird
import Logging

/// `siwa emulator`: runs the Apple ID emulator.
struct EmulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emulator",
        abstract: "Run a local stand-in for appleid.apple.com (keys, authorize page, token, revoke, notifications).",
        discussion: """
            With no --config it registers a demo team with a bundle id and a Services ID, keeps the demo team's \
            .p8 key in siwa-emulator/ (created once, reused after), and prints the settings a server needs.

            Example:
              siwa emulator --port 9090
              curl -s -X POST localhost:9090/emulator/native-sign-in -H 'content-type: application/json' \\
                -d '{"clientId":"com.example.siwa.demo","email":"jane@example.com","givenName":"Jane"}'
            """
    )

    @Option(help: "Address to listen on (loopback by default).")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on.")
    var port = 9090

    @Option(
        name: .customLong("allowed-host"),
        help: ArgumentHelp(
            "A host name besides loopback that the console and control API answer to (repeatable).",
            discussion: "The name the emulator is reached by in a container or from another host; any other name is "
                + "refused (421), so that a site cannot point a name of its own at this machine and drive it.",
            valueName: "name"
        )
    )
    var allowedHosts: [String] = []

    @Option(help: "A JSON file registering teams, keys and clients (EmulatorConfiguration).")
    var config: String?

    @Flag(
        name: .customLong("allow-local-redirect-uris"),
        help: ArgumentHelp(
            "Allow http, localhost and IP-address redirect URIs, which Apple refuses, for a server on this machine.",
            discussion: "The demo team (no --config) always allows them; a --config file may say "
                + "\"allowLocalRedirectURIs\": true instead."
        )
    )
    var allowLocalRedirectURIs = false

    @Option(help: "A JSON file that keeps the emulator's state across restarts.")
    var state: String?

    @Option(help: "For the demo team: the base URL of the server whose callback and notification URLs to register.")
    var serverURL = "http://localhost:8080"

    func run() async throws {
        var logger = Logger(label: "siwa.emulator")
        logger.logLevel = .info
        var configuration: EmulatorConfiguration
        var banner = ""
        if let config {
            guard let data = FileManager.default.contents(atPath: config) else {
                Terminal.error("error: --config: cannot read \(config)")
                throw ExitCode(2)
            }
            do {
                configuration = try EmulatorConfiguration(json: data)
            } catch {
                Terminal.error("error: --config \(config): \(error)")
                throw ExitCode(2)
            }
        } else {
            let keyFile = try Self.demoKeyFile()
            let key = try P256.Signing.PrivateKey(pemRepresentation: String(contentsOfFile: keyFile, encoding: .utf8))
            configuration = .demo(key: key, serverURL: serverURL)
            // The demo team's callbacks are on the developer's own server, usually http://localhost.
            configuration.allowLocalRedirectURIs = true
            banner = Self.demoSettings(keyFile: keyFile, host: host, port: port) + "\n"
        }
        configuration.hostNames += allowedHosts
        if allowLocalRedirectURIs { configuration.allowLocalRedirectURIs = true }
        if configuration.allowLocalRedirectURIs { banner += Self.localRedirectURIsNotice + "\n" }
        let emulator: AppleIDEmulator
        do {
            emulator = try await AppleIDEmulator(
                configuration: configuration,
                delivery: HTTPNotificationDelivery(),
                stateFile: state,
                logger: logger
            )
        } catch let error as EmulatorConfigurationError {
            Terminal.error("error: --config \(config ?? "(the demo team)"): \(error)")
            throw ExitCode(2)
        }
        // Said once the port is bound, unbuffered: never "listening" for a port that turns out to be taken.
        banner += "Apple ID emulator listening on http://\(host):\(port)  (Ctrl-C stops it)\n"
        banner += "Its console, in a browser: http://\(host):\(port)/"
        let said = banner
        do {
            try await emulator.application(host: host, port: port, onServerRunning: { _ in Terminal.say(said) })
                .runService()
        } catch  where "\(error)".contains("Address already in use") {
            Terminal.error(
                "error: port \(port) is in use on \(host); choose another with --port (e.g. --port \(port + 1))"
            )
            throw ExitCode(1)
        }
    }

    /// Said once when the emulator allows what Apple refuses, so that nobody takes the demo's http callbacks for
    /// something production accepts.
    static let localRedirectURIsNotice =
        "The emulator allows http, localhost and IP-address redirect URIs for local development; Apple refuses them."

    /// The demo team's key: created once in `siwa-emulator/`, reused after.
    static func demoKeyFile() throws -> String {
        let directory = "siwa-emulator"
        let path = "\(directory)/AuthKey_\(EmulatorConfiguration.demoKeyID).p8"
        if !FileManager.default.fileExists(atPath: path) {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try P256.Signing.PrivateKey().pemRepresentation.write(toFile: path, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        }
        return path
    }

    static func demoSettings(keyFile: String, host: String, port: Int) -> String {
        """
        Demo team registered. A server needs exactly these settings:
          SIWA_APPLE_BASE_URL=http://\(host):\(port)
          SIWA_TEAM_ID=\(EmulatorConfiguration.demoTeamID)
          SIWA_KEY_ID=\(EmulatorConfiguration.demoKeyID)
          SIWA_PRIVATE_KEY_FILE=\(keyFile)
          SIWA_BUNDLE_IDS=\(EmulatorConfiguration.demoBundleID)
          SIWA_SERVICES_ID=\(EmulatorConfiguration.demoServicesID)
        """
    }
}
