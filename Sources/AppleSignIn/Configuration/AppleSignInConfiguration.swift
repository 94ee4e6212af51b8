#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Everything `AppleSignIn` needs to know about your app and Apple, validated when it is made.
///
/// Identity-token verification needs only the client ids. Talking to Apple's REST API (code exchange, refresh-token
/// validation, revocation) also needs ``credentials``: team id, key id and the `.p8` key that sign the client secret.
public struct AppleSignInConfiguration: Sendable {
    /// Apple's issuer, the `iss` of every identity token and notification.
    public static let appleIssuer = "https://appleid.apple.com"
    /// The issuer Apple's discovery document briefly announced in June 2025 (tokens kept ``appleIssuer``).
    public static let accountAppleIssuer = "https://account.apple.com"
    /// Apple's longest allowed client-secret lifetime, in seconds (six months).
    public static let maximumClientSecretLifetime: TimeInterval = 15_777_000

    /// The bundle ids of your native apps: `aud` of tokens from iOS, macOS, watchOS and tvOS.
    public var bundleIDs: [ClientID]
    /// The Services ID of your website and Android sign-in: `aud` of tokens from the web flow.
    public var servicesID: ClientID?
    /// The key that signs client secrets; `nil` when only verifying tokens.
    public var credentials: ClientSecretCredentials?
    /// Where Apple is (the emulator in development).
    public var appleBaseURL: AppleBaseURL
    /// How far `exp` and `iat` may be off to allow for clock drift.
    public var clockLeeway: TimeInterval
    /// How long a client secret lives. At most ``maximumClientSecretLifetime``.
    public var clientSecretLifetime: TimeInterval
    /// Also accept `iss` = ``accountAppleIssuer``.
    public var acceptsAccountAppleIssuer: Bool
    /// When a nonce is expected but the token has none and says `nonce_supported: false` (an old platform that cannot
    /// carry one), accept it as Apple's documentation allows. Off by default: a missing nonce fails.
    public var acceptsMissingNonceOnUnsupportedPlatforms: Bool
    /// A copy of Apple's key set from configuration, used instead of Apple's key endpoint or while it cannot be
    /// reached; `nil` (the default): Apple's key endpoint alone.
    public var configuredKeySet: ConfiguredAppleKeySet? = nil

    /// Every client id whose tokens are accepted: the bundle ids, then the services id.
    public var allowedClientIDs: [ClientID] {
        bundleIDs + (servicesID.map { [$0] } ?? [])
    }

    /// Whether tokens for `clientID` are accepted: one of ``allowedClientIDs``, without building that list.
    func allows(_ clientID: ClientID) -> Bool {
        servicesID == clientID || bundleIDs.contains(clientID)
    }

    /// The allowed client id whose UTF-8 bytes are `text`, or nil: ``allows(_:)`` on bytes, with no string made.
    func allowedClientID(named text: UnsafeBufferPointer<UInt8>) -> ClientID? {
        if let servicesID, JSONObjectView.text(text, is: servicesID.rawValue) { return servicesID }
        return bundleIDs.first { JSONObjectView.text(text, is: $0.rawValue) }
    }

    /// Makes a validated configuration.
    /// - Parameters:
    ///   - bundleIDs: one or more bundle ids (may be empty when only the web flow is used).
    ///   - servicesID: the Services ID for the web and Android flows.
    ///   - credentials: team id, key id and key, for the REST API.
    ///   - appleBaseURL: Apple, or the emulator.
    ///   - clockLeeway: seconds of allowed clock drift (0 to 300; default 60).
    ///   - clientSecretLifetime: seconds (60 to 15,777,000; default one day).
    ///   - acceptsAccountAppleIssuer: also accept tokens whose `iss` is ``accountAppleIssuer`` (default `false`).
    ///   - acceptsMissingNonceOnUnsupportedPlatforms: accept a token without a nonce that says
    ///     `nonce_supported: false` when a nonce is expected (default `false`).
    /// - Throws: ``AppleSignInError/Code/invalidConfiguration`` naming the setting and how to fix it.
    public init(
        bundleIDs: [ClientID],
        servicesID: ClientID? = nil,
        credentials: ClientSecretCredentials? = nil,
        appleBaseURL: AppleBaseURL = .apple,
        clockLeeway: TimeInterval = 60,
        clientSecretLifetime: TimeInterval = 86_400,
        acceptsAccountAppleIssuer: Bool = false,
        acceptsMissingNonceOnUnsupportedPlatforms: Bool = false
    ) throws(AppleSignInError) {
        for (index, id) in bundleIDs.enumerated() {
            _ = try ClientID(validating: id.rawValue, setting: "bundleIDs[\(index)]")
        }
        if let servicesID {
            _ = try ClientID(validating: servicesID.rawValue, setting: "servicesID")
        }
        guard !bundleIDs.isEmpty || servicesID != nil else {
            throw .invalidConfiguration(
                "bundleIDs",
                "configure at least one client id: your app's bundle id, or a Services ID for web sign-in"
            )
        }
        if let servicesID, bundleIDs.contains(servicesID) {
            throw .invalidConfiguration(
                "servicesID",
                "the Services ID must differ from every bundle id; create a Services ID in Identifiers"
            )
        }
        if Set(bundleIDs).count != bundleIDs.count {
            throw .invalidConfiguration("bundleIDs", "a bundle id is listed twice")
        }
        guard clockLeeway >= 0, clockLeeway <= 300 else {
            throw .invalidConfiguration("clockLeeway", "use 0 to 300 seconds (60 is usual)")
        }
        guard clientSecretLifetime >= 60, clientSecretLifetime <= Self.maximumClientSecretLifetime else {
            throw .invalidConfiguration(
                "clientSecretLifetime",
                "use 60 to 15777000 seconds; Apple refuses client secrets that live longer than six months"
            )
        }
        self.bundleIDs = bundleIDs
        self.servicesID = servicesID
        self.credentials = credentials
        self.appleBaseURL = appleBaseURL
        self.clockLeeway = clockLeeway
        self.clientSecretLifetime = clientSecretLifetime
        self.acceptsAccountAppleIssuer = acceptsAccountAppleIssuer
        self.acceptsMissingNonceOnUnsupportedPlatforms = acceptsMissingNonceOnUnsupportedPlatforms
    }

    /// Whether `clientID` is the Services ID (a web or Android code, exchanged with a `redirect_uri`).
    /// - Parameter clientID: a client id, usually the `aud` of an identity token.
    /// - Returns: `true` for the configured ``servicesID``; `false` for a bundle id, or when none is configured.
    public func isServicesID(_ clientID: ClientID) -> Bool {
        clientID == servicesID
    }
}

/// The developer credentials that sign client secrets.
public struct ClientSecretCredentials: Sendable, CustomStringConvertible {
    /// Your team id: `iss` of the client secret.
    public let teamID: TeamID
    /// The id of the `.p8` key: `kid` of the client secret.
    public let keyID: KeyID
    /// The `.p8` key.
    public let key: AppleDeveloperKey

    /// Bundles values that are already validated.
    /// - Parameters:
    ///   - teamID: your team id.
    ///   - keyID: the id of the `.p8` key.
    ///   - key: the parsed `.p8` key.
    public init(teamID: TeamID, keyID: KeyID, key: AppleDeveloperKey) {
        self.teamID = teamID
        self.keyID = keyID
        self.key = key
    }

    /// Validates and loads the three settings.
    /// - Parameters:
    ///   - teamID: the Team ID, checked as ``TeamID/init(_:setting:)`` does.
    ///   - keyID: the Key ID, checked as ``KeyID/init(_:setting:)`` does.
    ///   - privateKey: where the `.p8` key is, loaded as ``AppleDeveloperKey/init(_:setting:)`` does.
    /// - Throws: ``AppleSignInError/Code/invalidConfiguration`` naming `teamID`, `keyID` or `privateKey`.
    public init(teamID: String, keyID: String, privateKey: AppleDeveloperKey.Source) throws(AppleSignInError) {
        self.teamID = try TeamID(teamID)
        self.keyID = try KeyID(keyID)
        self.key = try AppleDeveloperKey(privateKey)
    }

    public var description: String { "ClientSecretCredentials(team: \(teamID), key: \(keyID), privateKey: redacted)" }
}
