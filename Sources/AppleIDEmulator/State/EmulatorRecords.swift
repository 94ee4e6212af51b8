public import Foundation

/// Everything the emulator remembers; JSON-codable so `--state FILE` keeps it across restarts.
struct EmulatorRecords: Codable {
    var signingKeys: [SigningKeyRecord] = []
    /// Apple IDs by lower-cased email.
    var appleIDs: [String: AppleIDRecord] = [:]
    var codes: [String: CodeRecord] = [:]
    var refreshTokens: [String: TokenRecord] = [:]
    var accessTokens: [String: TokenRecord] = [:]
    var migrationTokens: [String: MigrationTokenRecord] = [:]
    var transfers: [TransferRecord] = []
    var log: [EmulatorLogEntry] = []
    /// The last notifications signed, oldest first, kept byte for byte for redelivery.
    var sentNotifications: [SentNotificationRecord] = []
}

extension EmulatorRecords {
    /// Reads a state file; a field it lacks (a file written by an older emulator) starts empty.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func read<T: Decodable>(_ key: CodingKeys, _ empty: T) throws -> T {
            try container.decodeIfPresent(T.self, forKey: key) ?? empty
        }
        self.init()
        signingKeys = try read(.signingKeys, [])
        appleIDs = try read(.appleIDs, [:])
        codes = try read(.codes, [:])
        refreshTokens = try read(.refreshTokens, [:])
        accessTokens = try read(.accessTokens, [:])
        migrationTokens = try read(.migrationTokens, [:])
        transfers = try read(.transfers, [])
        log = try read(.log, [])
        sentNotifications = try read(.sentNotifications, [])
    }
}

struct SigningKeyRecord: Codable {
    var kid: String
    var privateKeyPEM: String
    var createdAt: Date
    var retiredAt: Date?
}

/// A test Apple ID.
struct AppleIDRecord: Codable {
    var email: String
    var givenName: String?
    var familyName: String?
    /// Per team: the user's `sub`, relay address and consent.
    var teams: [String: TeamLink] = [:]
}

/// One Apple ID's relationship with one team.
struct TeamLink: Codable {
    var sub: String
    var relayEmail: String
    /// Whether the user has authorized this team's apps (the next authorization is then not a first one).
    var consented = false
    /// When the user last revoked consent (`nil`: never, or authorized again since).
    var consentRevokedAt: Date?
    var hideEmail = false
    var emailForwarding = true
    /// Whether the first authorization left out the email scope, so that this team's tokens carry no email (optional:
    /// state files written before it lack it).
    var emailWithheld: Bool?
}

struct CodeRecord: Codable {
    var clientID: String
    var teamID: String
    var appleID: String
    /// The `redirect_uri` of a web authorization; `nil` for a native one (then none may be sent).
    var redirectURI: String?
    var nonce: String?
    var expiresAt: Date
    var used = false
}

struct TokenRecord: Codable {
    var clientID: String
    var teamID: String
    var appleID: String
    var expiresAt: Date?
    var revoked = false
    /// For access tokens: the refresh token they came from.
    var refreshToken: String?
}

struct MigrationTokenRecord: Codable {
    var teamID: String
    var clientID: String
    var expiresAt: Date
}

/// A `transfer_sub` issued for moving a user from one team to another.
struct TransferRecord: Codable {
    var transferSub: String
    var appleID: String
    var fromTeam: String
    var toTeam: String
    var createdAt: Date
}

/// One call the emulator received.
public struct EmulatorLogEntry: Codable, Sendable {
    public var time: Date
    public var endpoint: String
    public var grantType: String?
    public var clientID: String?
    public var outcome: String
    /// `true` when a token was minted for a client id no team registers (to test that a server refuses it).
    public var unregisteredClient: Bool?
}

/// A signed server-to-server notification as it was sent: redelivery POSTs the same bytes to the same URL.
struct SentNotificationRecord: Codable {
    var id: String
    var type: String
    var clientID: String
    var sub: String
    var sentAt: Date
    /// The client's notification URL when it was signed (`nil`: the client has none).
    var url: String?
    /// The JSON body, `{"payload": "<JWT>"}`, exactly as POSTed.
    var body: Data
}
