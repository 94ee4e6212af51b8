import Crypto

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The OpenID provider for other apps (relying parties): the clients registered in configuration. With no client the
/// discovery document and keys are still served (for siwa's own access tokens), and `/oauth/authorize` and
/// `/oauth/token` refuse every client.
public struct OpenIDConfiguration: Sendable {
    /// The registered relying parties.
    public var clients: [OpenIDClient]
    /// Seconds an authorization code lives (default 60).
    public var codeLifetime: TimeInterval = 60

    public init(clients: [OpenIDClient] = []) {
        self.clients = clients
    }

    /// The client with this id.
    func client(_ id: String) -> OpenIDClient? {
        clients.first { $0.id == id }
    }

    /// The scopes siwa grants: `openid` (the ID token and `sub`), `email` (`email`, `email_verified`,
    /// `is_private_email`) and `profile` (`name`, `given_name`, `family_name`).
    public static let supportedScopes = ["openid", "email", "profile"]
}

/// A relying party: its id, how it authenticates, where it may be sent back to, and what it may ask for.
public struct OpenIDClient: Sendable, Hashable {
    /// The `client_id`: letters, digits, `.`, `_`, `~` and `-`.
    public var id: String
    /// SHA-256 of the client secret (the secret itself is never configured); `nil` for a public client, which has no
    /// secret and must use PKCE.
    public var secretHash: [UInt8]?
    /// The exact redirect URIs an authorization may return to (compared as strings).
    public var redirectURIs: [String]
    /// The scopes it may be granted (a subset of ``OpenIDConfiguration/supportedScopes``, always with `openid`).
    public var scopes: Set<String>
    /// Where RP-initiated logout may send the browser afterwards (exact strings).
    public var postLogoutRedirectURIs: [String]
    /// How its ID tokens are signed (`id_token_signed_response_alg`): RS256 unless it asks for ES256.
    public var idTokenSigningAlgorithm: IDTokenSigningAlgorithm
    /// The application's name as users know it, shown on the consent page; `nil` shows the `client_id`.
    public var name: String?
    /// Where siwa POSTs a logout token when one of its sessions ends (OpenID Connect Back-Channel Logout 1.0,
    /// `backchannel_logout_uri`); `nil`: it is not told. Checked like a webhook endpoint's URL: https, and no
    /// address in the operator's network unless allowed.
    public var backchannelLogoutURI: URL?
    /// Whether it needs `sid` in its logout tokens (`backchannel_logout_session_required`). siwa always sends `sid`
    /// (and `sub`), so this only records what the relying party registered.
    public var backchannelLogoutSessionRequired: Bool = false

    /// The algorithms siwa signs ID tokens with.
    public enum IDTokenSigningAlgorithm: String, Sendable, Hashable, CaseIterable {
        /// RSASSA-PKCS1-v1_5 with SHA-256: what OpenID Connect requires a provider to offer, and what a client that
        /// registers nothing expects.
        case rs256 = "RS256"
        /// ECDSA P-256 with SHA-256, as siwa's access tokens.
        case es256 = "ES256"
    }

    /// - Parameters:
    ///   - id: the `client_id`.
    ///   - secretHash: SHA-256 of the client secret; `nil` for a public client.
    ///   - redirectURIs: the exact redirect URIs.
    ///   - scopes: the scopes it may be granted (`openid` is always added).
    ///   - postLogoutRedirectURIs: where RP-initiated logout may send the browser.
    ///   - idTokenSigningAlgorithm: how its ID tokens are signed (RS256 by default).
    ///   - name: the application's name as users know it (the consent page shows it).
    public init(
        id: String,
        secretHash: [UInt8]?,
        redirectURIs: [String],
        scopes: Set<String> = Set(OpenIDConfiguration.supportedScopes),
        postLogoutRedirectURIs: [String] = [],
        idTokenSigningAlgorithm: IDTokenSigningAlgorithm = .rs256,
        name: String? = nil
    ) {
        self.id = id
        self.secretHash = secretHash
        self.redirectURIs = redirectURIs
        self.scopes = scopes.union(["openid"])
        self.postLogoutRedirectURIs = postLogoutRedirectURIs
        self.idTokenSigningAlgorithm = idTokenSigningAlgorithm
        self.name = name
    }

    /// A public client: no secret, PKCE required.
    public var isPublic: Bool { secretHash == nil }

    /// Whether a user must allow it once on siwa's consent page before it gets a code. Public clients must: any app
    /// can claim a custom scheme or a loopback port, so a code sent there silently could reach an impostor
    /// (RFC 8252 §8.6). Confidential clients are the team's own servers, which authenticate at the token endpoint.
    public var requiresConsent: Bool { isPublic }

    /// The endpoint that delivers its back-channel logout tokens, when it has a ``backchannelLogoutURI``.
    public var backchannelLogoutEndpoint: WebhookEndpoint? {
        backchannelLogoutURI.map { WebhookEndpoint(backchannelLogoutOf: id, url: $0) }
    }

    /// What users see it called: its ``name``, else its `client_id`.
    public var displayName: String { name ?? id }

    /// The SHA-256 of a client secret, as configured.
    public static func hashSecret(_ secret: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(secret.utf8)))
    }

    /// Whether `secret` is this client's, compared in constant time (over the hashes, so that neither the length nor
    /// the content of the configured secret shows in the time taken).
    /// - Warning: A public client has no secret: this is always `false` for it.
    public func acceptsSecret(_ secret: String) -> Bool {
        guard let secretHash, secretHash.count == 32 else { return false }
        let presented = Self.hashSecret(secret)
        var difference: UInt8 = 0
        for index in 0..<32 { difference |= presented[index] ^ secretHash[index] }
        return difference == 0
    }

    /// Whether `name` may be a client's ``name``: 1 to 64 characters, no control characters, not only spaces.
    public static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.count) && !name.allSatisfy(\.isWhitespace)
            && !name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Whether `id` is a well-formed client id: 1 to 128 characters of `A-Z a-z 0-9 . _ ~ -`.
    public static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 128
            && id.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
                    || byte == UInt8(ascii: "-")
            }
    }
}
