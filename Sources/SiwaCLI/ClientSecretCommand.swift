import AppleSignIn
import ArgumentParser
import Foundation

/// `siwa client-secret`: prints the ES256 client secret Apple's token and revoke endpoints want.
struct ClientSecretCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client-secret",
        abstract: "Print a client secret (ES256 JWT) for Apple's token and revoke endpoints.",
        discussion: """
            The secret goes to standard output alone, its expiry to standard error, so that \
            SECRET=$(siwa client-secret ...) captures just the secret.

            Example:
              siwa client-secret --team-id ABCDE12345 --key-id KEY1234567 \\
                --client-id com.example.web --key-file AuthKey_KEY1234567.p8 --lifetime 3600
            """
    )

    @Option(name: .customLong("team-id"), help: "Your 10-character Team ID (the secret's iss).")
    var teamID: String

    @Option(name: .customLong("key-id"), help: "The 10-character id of the .p8 key (the secret's kid).")
    var keyID: String

    @Option(
        name: .customLong("client-id"),
        help: "The client id the secret is for (its sub): the bundle id for native codes, the Services ID for web."
    )
    var clientID: String

    @Option(name: .customLong("key-file"), help: "Path to the AuthKey_<KeyID>.p8 file.")
    var keyFile: String

    @Option(help: "Seconds the secret lives (at most 15777000, Apple's six months).")
    var lifetime: Int = 86_400

    @Flag(help: "Print JSON: {\"clientSecret\", \"expiresAt\"}.")
    var json = false

    func run() throws {
        do {
            let credentials = try ClientSecretCredentials(teamID: teamID, keyID: keyID, privateKey: .file(keyFile))
            let clientID = try ClientID(validating: clientID, setting: "--client-id")
            guard lifetime >= 60, TimeInterval(lifetime) <= AppleSignInConfiguration.maximumClientSecretLifetime else {
                throw AppleSignInError.invalidConfiguration(
                    "--lifetime",
                    "use 60 to 15777000 seconds; Apple refuses secrets that live longer than six months"
                )
            }
            let factory = ClientSecretFactory(credentials: credentials, lifetime: TimeInterval(lifetime))
            let secret = factory.makeSecret(for: clientID, now: Date())
            let expiry = ISO8601DateFormatter().string(from: secret.expiresAt)
            if json {
                var out: [UInt8] = []
                out.append(contentsOf: "{\"clientSecret\":".utf8)
                JSONWriter.appendString(secret.token, to: &out)
                out.append(contentsOf: ",\"expiresAt\":".utf8)
                JSONWriter.appendString(expiry, to: &out)
                out.append(contentsOf: ",\"expiresAtUnix\":\(Int(secret.expiresAt.timeIntervalSince1970))}".utf8)
                print(String(decoding: out, as: UTF8.self))
            } else {
                print(secret.token)
                Terminal.error(
                    "expires \(expiry) (in \(lifetime) s); sub \(clientID), iss \(credentials.teamID), kid \(credentials.keyID)"
                )
            }
        } catch let error as AppleSignInError {
            Terminal.report(error, json: json)
            throw ExitCode(2)
        }
    }
}
