public import Crypto
public import Foundation

/// What the emulator knows about developers: their teams, keys and clients. JSON-codable for `--config FILE`; read one
/// with ``init(json:)``, whose errors name the field and what to write.
///
/// The emulator refuses what Apple's developer account refuses to register (``validate()``): a redirect URI that is
/// not https on a domain name, or such a notification URL, unless ``allowLocalRedirectURIs`` is set for local
/// development.
public struct EmulatorConfiguration: Codable, Sendable {
    /// A developer team.
    public struct Team: Codable, Sendable {
        /// The 10-character Team ID.
        public var teamID: String
        /// The id of the team's Sign in with Apple key.
        public var keyID: String
        /// The key's public half (PEM), which client secrets must verify with: `openssl ec -in AuthKey_KEYID.p8 -pubout`
        /// prints it from the `.p8`.
        public var publicKeyPEM: String
        /// The team's bundle ids and Services IDs.
        public var clients: [Client]

        public init(teamID: String, keyID: String, publicKeyPEM: String, clients: [Client]) {
            self.teamID = teamID
            self.keyID = keyID
            self.publicKeyPEM = publicKeyPEM
            self.clients = clients
        }
    }

    /// A bundle id or Services ID registered for Sign in with Apple.
    public struct Client: Codable, Sendable {
        /// The bundle id or Services ID: the `client_id` of Apple's endpoints and the `aud` of its tokens.
        public var clientID: String
        /// Allowed `redirect_uri` values of the web flow; a bundle id, signing in natively only, needs none.
        public var redirectURIs: [String]
        /// Where server-to-server notifications go.
        public var notificationURL: String?

        public init(clientID: String, redirectURIs: [String] = [], notificationURL: String? = nil) {
            self.clientID = clientID
            self.redirectURIs = redirectURIs
            self.notificationURL = notificationURL
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.clientID = try container.decode(String.self, forKey: .clientID)
            self.redirectURIs = try container.decodeIfPresent([String].self, forKey: .redirectURIs) ?? []
            self.notificationURL = try container.decodeIfPresent(String.self, forKey: .notificationURL)
        }
    }

    public var teams: [Team]
    /// The `iss` of tokens.
    public var issuer: String
    /// How long a rotated-out signing key stays in the key set.
    public var keyGracePeriod: TimeInterval
    /// How long an injected `timeout` fault holds a request.
    public var faultHangDuration: TimeInterval
    /// The host names, besides loopback ones and the issuer's host, that the console and the control API answer to:
    /// the names the emulator is reached by in a container or on another host (`emulator`, `apple.ci.internal`).
    ///
    /// - Warning: a name whose DNS someone else controls lets their pages read and drive the emulator (DNS rebinding).
    public var hostNames: [String]
    /// Whether redirect URIs and notification URLs that Apple refuses to register (http, `localhost`, an IP address)
    /// are allowed: for a server on a developer's machine. Off, the emulator refuses such a configuration as Apple
    /// would.
    public var allowLocalRedirectURIs: Bool

    /// - Parameters:
    ///   - teams: the developer teams, their keys and clients.
    ///   - issuer: the `iss` of tokens; its host is one of the emulator's own names.
    ///   - keyGracePeriod: how long a rotated-out signing key stays in the key set.
    ///   - faultHangDuration: how long an injected `timeout` fault holds a request.
    ///   - hostNames: the names besides loopback that the console and the control API answer to.
    ///   - allowLocalRedirectURIs: whether http, `localhost` and IP-address redirect URIs and notification URLs are
    ///     allowed (local development only: Apple refuses them).
    public init(
        teams: [Team],
        issuer: String = "https://appleid.apple.com",
        keyGracePeriod: TimeInterval = 3600,
        faultHangDuration: TimeInterval = 30,
        hostNames: [String] = [],
        allowLocalRedirectURIs: Bool = false
    ) {
        self.teams = teams
        self.issuer = issuer
        self.keyGracePeriod = keyGracePeriod
        self.faultHangDuration = faultHangDuration
        self.hostNames = hostNames
        self.allowLocalRedirectURIs = allowLocalRedirectURIs
    }

    /// Reads a `--config` file.
    /// - Throws: ``EmulatorConfigurationError`` naming the field that is missing or of the wrong type and what to write
    ///   there, rather than a decoding error.
    public init(json: Data) throws(EmulatorConfigurationError) {
        do {
            self = try JSONDecoder().decode(Self.self, from: json)
        } catch let error as DecodingError {
            throw EmulatorConfigurationError(error)
        } catch {
            throw EmulatorConfigurationError(field: "the file", problem: "is not JSON", remedy: Self.example)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.teams = try container.decode([Team].self, forKey: .teams)
        self.issuer = try container.decodeIfPresent(String.self, forKey: .issuer) ?? "https://appleid.apple.com"
        self.keyGracePeriod = try container.decodeIfPresent(TimeInterval.self, forKey: .keyGracePeriod) ?? 3600
        self.faultHangDuration = try container.decodeIfPresent(TimeInterval.self, forKey: .faultHangDuration) ?? 30
        self.hostNames = try container.decodeIfPresent([String].self, forKey: .hostNames) ?? []
        self.allowLocalRedirectURIs =
            try container.decodeIfPresent(Bool.self, forKey: .allowLocalRedirectURIs) ?? false
    }

    /// A configuration in one line, for error messages.
    static let example =
        #"{"teams": [{"teamID": "ABCDE12345", "keyID": "KEY1234567", "publicKeyPEM": "-----BEGIN PUBLIC KEY-----\n…", "#
        + #""clients": [{"clientID": "com.example.app"}]}]} (docs/emulator.md)"#

    /// The demo setup `siwa emulator` and `siwa demo` use with no configuration: one team whose key is `key`, a bundle
    /// id and a Services ID whose callback is on `serverURL`. A local `serverURL` (`http://localhost:8080`) needs
    /// ``allowLocalRedirectURIs``, which is left to the caller to turn on, and say.
    public static func demo(key: P256.Signing.PrivateKey, serverURL: String = "http://localhost:8080") -> Self {
        EmulatorConfiguration(teams: [
            Team(
                teamID: demoTeamID,
                keyID: demoKeyID,
                publicKeyPEM: key.publicKey.pemRepresentation,
                clients: [
                    Client(clientID: demoBundleID, notificationURL: "\(serverURL)/auth/apple/notifications"),
                    Client(
                        clientID: demoServicesID,
                        // siwa's callback and those of its compatibility contracts (ServiceStack, the Vapor tutorial).
                        redirectURIs: [
                            "\(serverURL)/auth/apple/callback", "\(serverURL)/auth/apple",
                            "\(serverURL)/web/auth/siwa/callback",
                        ],
                        notificationURL: "\(serverURL)/auth/apple/notifications"
                    ),
                ]
            )
        ])
    }

    public static let demoTeamID = "DEMOTEAM01"
    public static let demoKeyID = "DEMOKEY001"
    public static let demoBundleID = "com.example.siwa.demo"
    public static let demoServicesID = "com.example.siwa.demo.web"

    func team(ofClient clientID: String) -> (Team, Client)? {
        for team in teams {
            if let client = team.clients.first(where: { $0.clientID == clientID }) { return (team, client) }
        }
        return nil
    }
}
