#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The checked claims of an access token siwa signed.
public struct SiwaTokenClaims: Sendable, Hashable {
    /// `sub`: the siwa user id (the same for every app of the team; it is not Apple's `sub`).
    public var subject: String
    /// `iss`: the issuer URL the verifier was made for.
    public var issuer: String
    /// `aud`: every audience the token names (one of them is the verifier's).
    public var audiences: [String]
    /// `iat`.
    public var issuedAt: Date
    /// `exp`.
    public var expiresAt: Date
    /// `sid`: the siwa session (refresh-token family) the token belongs to, when it names one.
    public var sessionID: String?
    /// `jti`, when present.
    public var tokenID: String?
    /// `client_id`: the OpenID Connect client the token was issued to, for tokens siwa's OpenID provider issued to
    /// another app (``Kind/relyingParty``).
    public var clientID: String?
    /// `scope`, split at spaces (empty when the token has none).
    public var scopes: [String]
    /// Which kind of siwa access token this is.
    public var kind: Kind

    /// The kinds of siwa access token.
    public enum Kind: String, Sendable, Hashable {
        /// One of siwa's own: the user's session with siwa (header `typ: JWT`, no `client_id`).
        case session
        /// One siwa's OpenID provider issued to a relying party (header `typ: at+jwt`, with `client_id` and `scope`):
        /// what the user granted that app.
        case relyingParty
    }

    /// Makes claims from their parts; ``SiwaTokenVerifier/verify(_:)`` makes them from a token, tests by hand.
    /// - Parameters:
    ///   - subject: `sub`, the siwa user id.
    ///   - issuer: `iss`.
    ///   - audiences: every audience of `aud`.
    ///   - issuedAt: `iat`.
    ///   - expiresAt: `exp`.
    ///   - sessionID: `sid`, if any.
    ///   - tokenID: `jti`, if any.
    ///   - clientID: `client_id`, for a relying party's token.
    ///   - scopes: `scope`, split at spaces.
    ///   - kind: a session token (the default) or a relying party's.
    public init(
        subject: String,
        issuer: String,
        audiences: [String],
        issuedAt: Date,
        expiresAt: Date,
        sessionID: String? = nil,
        tokenID: String? = nil,
        clientID: String? = nil,
        scopes: [String] = [],
        kind: Kind = .session
    ) {
        self.subject = subject
        self.issuer = issuer
        self.audiences = audiences
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.sessionID = sessionID
        self.tokenID = tokenID
        self.clientID = clientID
        self.scopes = scopes
        self.kind = kind
    }
}

/// Why a token was refused, or why siwa's keys could not be read. The message never holds the token.
public struct SiwaTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        /// Wraps a code's string form, such as `"bad_signature"`; the known ones are the static members.
        /// - Parameter rawValue: the code, as ``description`` prints it.
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Not a compact JWS with a JSON header and payload.
        public static let malformed = Code(rawValue: "malformed")
        /// The header's `alg` is not ES256 (siwa signs with nothing else; `none` and HMAC are refused).
        public static let unsupportedAlgorithm = Code(rawValue: "unsupported_algorithm")
        /// No key of the issuer's key set has the token's `kid`, even after fetching the set again.
        public static let unknownKey = Code(rawValue: "unknown_key")
        /// The signature does not verify.
        public static let badSignature = Code(rawValue: "bad_signature")
        /// `iss` is not the issuer.
        public static let wrongIssuer = Code(rawValue: "wrong_issuer")
        /// `aud` does not name the expected audience.
        public static let wrongAudience = Code(rawValue: "wrong_audience")
        /// `exp` has passed (beyond the leeway).
        public static let expired = Code(rawValue: "expired")
        /// `nbf` or `iat` lies in the future (beyond the leeway).
        public static let notYetValid = Code(rawValue: "not_yet_valid")
        /// The token is no access token of siwa's: an ID token, or a `typ` that does not match its claims.
        public static let wrongTokenType = Code(rawValue: "wrong_token_type")
        /// A claim the token must have is missing or has the wrong type.
        public static let missingClaim = Code(rawValue: "missing_claim")
        /// The discovery document or the key set could not be fetched or read.
        public static let keysUnavailable = Code(rawValue: "keys_unavailable")
    }

    public var code: Code
    public var message: String

    /// Makes an error.
    /// - Parameters:
    ///   - code: which check failed.
    ///   - message: a short reason naming the claim or key involved; never the token.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
