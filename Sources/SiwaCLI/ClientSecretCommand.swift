import AppleSignIn
import ArgumentParser
import Foundation

/// `siwa client-secret`: prints the ES256 client secret Apple's token and revoke endpoints want.
struct ClientSecretCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client-secret",
        abstract: "Print a client secret (ES256 JWT) for Apple's token and revoke endpoints.",
        discussion: """
            Reads the team, key id, key and client id from the same settings as siwa serve (SIWA_TEAM_ID, \
            SIWA_KEY_ID, SIWA_PRIVATE_KEY_FILE or SIWA_PRIVATE_KEY or SIWA_PRIVATE_KEY_BASE64, SIWA_SERVICES_ID or \
            the only bundle id; --config FILE), each overridden by its option. The key may be PEM, as Apple issues \
            it, or base64. A key id that does not match the key file's name AuthKey_<KeyID>.p8, or the configured \
            SIWA_KEY_ID, is refused unless --force: Apple would refuse every secret signed with it.

            The secret goes to standard output alone, its expiry to standard error, so that \
            SECRET=$(siwa client-secret ...) captures just the secret.

            Example:
              siwa client-secret --team-id ABCDE12345 --key-id KEY1234567 \\
                --client-id com.example.web --key-file AuthKey_KEY1234567.p8 --lifetime 3600
              siwa client-secret --config siwa.json
            """
    )

    @Option(help: "A configuration file, as siwa serve reads (default: SIWA_CONFIG).")
    var config: String?

    @Option(name: .customLong("team-id"), help: "Your 10-character Team ID (the secret's iss). Default: SIWA_TEAM_ID.")
    var teamID: String?

    @Option(
        name: .customLong("key-id"),
        help: "The 10-character id of the .p8 key (the secret's kid). Default: SIWA_KEY_ID."
    )
    var keyID: String?

    @Option(
        name: .customLong("client-id"),
        help: """
            The client id the secret is for (its sub): the bundle id for native codes, the Services ID for web. \
            Default: SIWA_SERVICES_ID, else the only bundle id.
            """
    )
    var clientID: String?

    @Option(
        name: .customLong("key-file"),
        help: "The AuthKey_<KeyID>.p8 file, PEM or base64. Default: the configured key."
    )
    var keyFile: String?

    @Option(help: "Seconds the secret lives (at most 15777000, Apple's six months).")
    var lifetime: Int = 86_400

    @Flag(help: "Sign even when the key id does not match the key file's name or the configured key id.")
    var force = false

    @Flag(help: "Print JSON: {\"clientSecret\", \"expiresAt\"}.")
    var json = false

    func run() async throws {
        do {
            let settings = try await SettingsSource.load(configFile: config)
            let (credentials, keyName) = try credentials(settings)
            let clientID = try ClientID(validating: try chooseClientID(settings), setting: "--client-id")
            guard lifetime >= 60, TimeInterval(lifetime) <= AppleSignInConfiguration.maximumClientSecretLifetime else {
                throw AppleSignInError.invalidConfiguration(
                    "--lifetime",
                    "use 60 to 15777000 seconds; Apple refuses secrets that live longer than six months"
                )
            }
            if !force {
                try checkKeyID(credentials.keyID, keyName: keyName, configured: try settings.given(\.apple.keyID))
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
        } catch let problem as ServerSettings.Problem {
            Terminal.report(.invalidConfiguration(problem.variable, problem.fix), json: json)
            throw ExitCode(2)
        }
    }

    /// The team's credentials from the options over the settings, and the key file's name when the key is a file.
    private func credentials(_ settings: SettingsSource) throws -> (ClientSecretCredentials, String?) {
        guard let teamID = try teamID ?? settings.given(\.apple.teamID) else {
            throw AppleSignInError.invalidConfiguration("--team-id", "give your Team ID, or set SIWA_TEAM_ID")
        }
        guard let keyID = try keyID ?? settings.given(\.apple.keyID) else {
            throw AppleSignInError.invalidConfiguration("--key-id", "give the key's id, or set SIWA_KEY_ID")
        }
        let key: AppleDeveloperKey.Source
        var keyName: String?
        if let file = try keyFile ?? settings.given(\.apple.privateKeyFile) {
            key = .file(file)
            keyName = URL(fileURLWithPath: file).lastPathComponent
        } else if let pem = try settings.given(\.apple.privateKey) {
            key = .pem(pem)
        } else if let base64 = try settings.given(\.apple.privateKeyBase64) {
            key = .base64(base64)
        } else {
            throw AppleSignInError.invalidConfiguration(
                "--key-file",
                "give the AuthKey_<KeyID>.p8 file, or set SIWA_PRIVATE_KEY_FILE (or SIWA_PRIVATE_KEY, SIWA_PRIVATE_KEY_BASE64)"
            )
        }
        let credentials = ClientSecretCredentials(
            teamID: try TeamID(teamID, setting: self.teamID == nil ? "SIWA_TEAM_ID" : "--team-id"),
            keyID: try KeyID(keyID, setting: self.keyID == nil ? "SIWA_KEY_ID" : "--key-id"),
            key: try AppleDeveloperKey(key, setting: keyFile != nil ? "--key-file" : "SIWA_PRIVATE_KEY_FILE")
        )
        return (credentials, keyName)
    }

    private func chooseClientID(_ settings: SettingsSource) throws -> String {
        if let clientID { return clientID }
        if let servicesID = try settings.given(\.apple.servicesID) { return servicesID }
        let bundleIDs = try settings.value(\.apple.bundleIDs)
        guard bundleIDs.count == 1, let only = bundleIDs.first else {
            throw AppleSignInError.invalidConfiguration(
                "--client-id",
                bundleIDs.isEmpty
                    ? "give the client id the secret is for (no SIWA_SERVICES_ID or SIWA_BUNDLE_IDS is set)"
                    : "several bundle ids are configured: choose one with --client-id"
            )
        }
        return only
    }

    /// Apple names a key's file `AuthKey_<KeyID>.p8`: a secret whose `kid` is another key's id is refused at Apple
    /// with `invalid_client`, the least helpful error there is, so it is refused here first.
    private func checkKeyID(_ keyID: KeyID, keyName: String?, configured: String?) throws {
        if let keyName, keyName.hasPrefix("AuthKey_"), keyName.hasSuffix(".p8") {
            let named = keyName.dropFirst("AuthKey_".count).dropLast(".p8".count)
            // Only a name of Apple's shape names a key id (a file renamed AuthKey_production.p8 names none).
            if let named = try? KeyID(String(named)), named != keyID {
                throw AppleSignInError.invalidConfiguration(
                    "--key-id",
                    "the key file is \(keyName) but the key id is \(keyID); Apple refuses a secret whose kid is not "
                        + "its key's id (--force signs anyway)"
                )
            }
        }
        if self.keyID != nil, let configured, configured != keyID.rawValue {
            throw AppleSignInError.invalidConfiguration(
                "--key-id",
                "\(keyID) differs from the configured SIWA_KEY_ID \(configured) (--force signs anyway)"
            )
        }
    }
}
