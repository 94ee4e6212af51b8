public import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A refresh token as the store keeps it: only its SHA-256 hash.
public struct RefreshTokenRecord: Sendable, Hashable {
    /// SHA-256 of the token (32 bytes). The token itself is never stored.
    public var hash: [UInt8]
    public var sessionID: SessionID
    public var userID: UserID
    public var issuedAt: Date
    public var expiresAt: Date

    public init(hash: [UInt8], sessionID: SessionID, userID: UserID, issuedAt: Date, expiresAt: Date) {
        self.hash = hash
        self.sessionID = sessionID
        self.userID = userID
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }
}

/// A rotation's next refresh token (``AccountStore/rotateRefreshToken(presentedHash:next:now:reuseGrace:)``): its
/// session and user are the presented token's, which the store takes.
public struct RefreshTokenSuccessor: Sendable, Hashable {
    /// SHA-256 of the token (32 bytes). The token itself is never stored.
    public var hash: [UInt8]
    public var issuedAt: Date
    public var expiresAt: Date

    /// - Parameters:
    ///   - hash: SHA-256 of the new token.
    ///   - issuedAt: when it was issued (the rotation's time).
    ///   - expiresAt: when it stops working.
    public init(hash: [UInt8], issuedAt: Date, expiresAt: Date) {
        self.hash = hash
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }

    /// The token stored for `sessionID` and `userID`.
    public func record(sessionID: SessionID, userID: UserID) -> RefreshTokenRecord {
        RefreshTokenRecord(hash: hash, sessionID: sessionID, userID: userID, issuedAt: issuedAt, expiresAt: expiresAt)
    }
}

/// A session to start together with a sign-in (``AccountStore/signIn(_:startingSession:now:)``): its first refresh
/// token, stored as a hash, belongs to whichever account the sign-in finds or creates.
public struct NewSession: Sendable, Hashable {
    public var sessionID: SessionID
    /// SHA-256 of the first refresh token.
    public var refreshTokenHash: [UInt8]
    public var issuedAt: Date
    public var expiresAt: Date
    /// How and from where the session was started, for the console.
    public var metadata: SessionMetadata
    /// A bound the session counts against across the deployment (the sessions one identity token may open), kept by a
    /// store with ``SharedCounters`` in the sign-in's own write, which then takes the session's id from the bound;
    /// `nil`: none.
    public var bound: SessionBound?

    public init(
        sessionID: SessionID,
        refreshTokenHash: [UInt8],
        issuedAt: Date,
        expiresAt: Date,
        metadata: SessionMetadata = SessionMetadata(),
        bound: SessionBound? = nil
    ) {
        self.sessionID = sessionID
        self.refreshTokenHash = refreshTokenHash
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.metadata = metadata
        self.bound = bound
    }
}

/// The sessions one identity token may open in the whole deployment, as the ids they take: a store shared by several
/// processes (``AccountStore/sharedCounters()`` is not `nil`) starts the sign-in's session under the first of
/// ``sessionIDs`` that no session has taken, atomically with its write (the sessions' primary key decides a race), and
/// starts none once every one is taken (``SignInOutcome/sessionBoundReached``). The ids are derived from the token, so
/// every instance derives the same ones; counting costs a sign-in nothing more than its session's own insert. A store
/// used by one process ignores the bound: its process counts.
public struct SessionBound: Sendable, Hashable {
    /// The ids the token's sessions take, in order; as many as the sessions it may open (at least one).
    public var sessionIDs: [SessionID]

    /// The most sessions the token may open.
    public var limit: Int { sessionIDs.count }

    /// The largest bound a store keeps: a sign-in whose ids are all taken finds it out by looking them up.
    public static let maximumLimit = 100

    /// - Parameter sessionIDs: The ids the token's sessions take, in order, derived from the token so that every
    ///   instance derives the same ones, and distinct from any other session's (at least one).
    public init(sessionIDs: [SessionID]) {
        self.sessionIDs = sessionIDs
    }
}

/// The way a user signed in: siwa's own routes (native, web) or one of the client contracts. Stored as its raw value;
/// a channel siwa does not know yet reads back as itself.
public struct SignInChannel: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// `POST /auth/apple/native` (apps).
    public static let native = SignInChannel(rawValue: "native")
    /// The web flow (browsers).
    public static let web = SignInChannel(rawValue: "web")
    /// ServiceStack's `Authenticate`.
    public static let serviceStack = SignInChannel(rawValue: "servicestack")
    /// The Vapor tutorial's `POST /api/auth/siwa`.
    public static let vaporTutorial = SignInChannel(rawValue: "vapor-tutorial")
    /// RentManager's `POST /api/auth/apple`.
    public static let rentManager = SignInChannel(rawValue: "rentmanager")

    /// A relying party's session, started at siwa's OpenID token endpoint: `oidc:<client_id>`.
    /// - Parameter clientID: the relying party's `client_id`.
    public static func openID(_ clientID: String) -> SignInChannel {
        SignInChannel(rawValue: "oidc:" + clientID)
    }

    public var description: String { rawValue }
}

/// What is kept about how and from where a session was started, shown to admins. Long values are cut on creation.
public struct SessionMetadata: Sendable, Hashable {
    /// The most Unicode scalars ``userAgent`` keeps.
    public static let maxUserAgentLength = 256
    /// The most characters ``clientAddress`` keeps (an IPv6 address with a zone fits).
    public static let maxClientAddressLength = 64

    public let channel: SignInChannel?
    /// The `User-Agent` of the request that started the session, cut to ``maxUserAgentLength``.
    public let userAgent: String?
    /// The client's address (the real client behind trusted proxies), cut to ``maxClientAddressLength``.
    public let clientAddress: String?

    public init(channel: SignInChannel? = nil, userAgent: String? = nil, clientAddress: String? = nil) {
        self.channel = channel
        self.userAgent = userAgent?.cut(toScalars: Self.maxUserAgentLength)
        self.clientAddress = clientAddress?.cut(toScalars: Self.maxClientAddressLength)
    }
}

/// A session as the console shows it (``AccountStore/sessions(userID:now:limit:)``).
public struct SessionRecord: Sendable, Hashable {
    /// How precisely ``lastUsedAt`` follows refresh-token checks: a check less than this after the recorded last use
    /// writes nothing (so that a client checking its token on every request does not write every time). A rotation
    /// always records its time.
    public static let lastUseResolution: TimeInterval = 60

    public var id: SessionID
    public var userID: UserID
    public var createdAt: Date
    /// When a refresh token of the session was last rotated or checked (see ``lastUseResolution``); `nil` until then.
    public var lastUsedAt: Date?
    /// When its newest refresh token expires; `nil` when none is kept.
    public var expiresAt: Date?
    /// When it was revoked (logout, an admin, Apple, reuse, deletion, disabling).
    public var revokedAt: Date?
    public var metadata: SessionMetadata

    public init(
        id: SessionID,
        userID: UserID,
        createdAt: Date,
        lastUsedAt: Date?,
        expiresAt: Date?,
        revokedAt: Date?,
        metadata: SessionMetadata
    ) {
        self.id = id
        self.userID = userID
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
        self.metadata = metadata
    }

    /// Whether the session can still refresh at `now`: not revoked, and a refresh token unexpired.
    public func isActive(at now: Date) -> Bool {
        revokedAt == nil && (expiresAt.map { $0 > now } ?? false)
    }

    /// When it ended: its revocation, or else its expiry once past (its creation when no refresh token is kept);
    /// `nil` while active.
    public func endedAt(now: Date) -> Date? {
        if let revokedAt { return revokedAt }
        guard let expiresAt else { return createdAt }
        return expiresAt > now ? nil : expiresAt
    }
}

/// The outcome of presenting a refresh token.
public enum RotationOutcome: Sendable, Hashable {
    /// The token was current: it is now used up and `next` is the session's current token.
    case rotated(sessionID: SessionID, userID: UserID)
    /// The token had already been rotated: treated as theft, the whole session is now revoked.
    case reused(sessionID: SessionID, userID: UserID)
    /// The token's session was revoked (logout, consent revoked, reuse).
    case revoked(sessionID: SessionID, userID: UserID)
    /// The token is past its expiry.
    case expired
    /// No such token.
    case notFound
}

/// The state of a presented refresh token, from ``AccountStore/checkRefreshToken(presentedHash:now:)``.
public enum RefreshTokenCheck: Sendable, Hashable {
    /// The session's current token, unexpired.
    case current(sessionID: SessionID, userID: UserID)
    /// A token that was already rotated away.
    case used(sessionID: SessionID, userID: UserID)
    /// The token's session was revoked.
    case revoked(sessionID: SessionID, userID: UserID)
    /// The token is past its expiry.
    case expired
    /// No such token.
    case notFound
}

/// A session revocation, for the in-memory revocation lists of every instance.
public struct SessionRevocation: Sendable, Hashable {
    public var sessionID: SessionID
    public var userID: UserID
    public var revokedAt: Date

    public init(sessionID: SessionID, userID: UserID, revokedAt: Date) {
        self.sessionID = sessionID
        self.userID = userID
        self.revokedAt = revokedAt
    }
}

/// The Apple refresh token kept for a user (encrypted by the caller), for revocation and periodic validation.
public struct AppleTokenRecord: Sendable, Hashable {
    public var userID: UserID
    /// The client id Apple issued the token to (the bundle id or the Services ID).
    public var clientID: ClientID
    /// AES-GCM sealed box of the token (the store never sees it in clear).
    public var encryptedRefreshToken: [UInt8]
    public var storedAt: Date
    public var lastValidatedAt: Date?

    public init(
        userID: UserID,
        clientID: ClientID,
        encryptedRefreshToken: [UInt8],
        storedAt: Date,
        lastValidatedAt: Date? = nil
    ) {
        self.userID = userID
        self.clientID = clientID
        self.encryptedRefreshToken = encryptedRefreshToken
        self.storedAt = storedAt
        self.lastValidatedAt = lastValidatedAt
    }
}

/// A key that signs siwa's access tokens, shared by every instance through the store.
public struct SigningKeyRecord: Sendable, Hashable {
    public var kid: String
    /// The private key, sealed by the caller with the data key.
    public var sealedPrivateKey: [UInt8]
    public var createdAt: Date
    /// When it stopped signing (it still verifies until its last tokens expire); `nil` while current.
    public var retiredAt: Date?

    public init(kid: String, sealedPrivateKey: [UInt8], createdAt: Date, retiredAt: Date? = nil) {
        self.kid = kid
        self.sealedPrivateKey = sealedPrivateKey
        self.createdAt = createdAt
        self.retiredAt = retiredAt
    }
}

extension SessionRecord {
    /// Whether `first` is listed before `second` by ``AccountStore/sessions(userID:now:limit:)``: active sessions
    /// first, newest first; then ended ones, the most recently ended first; ties by id, the greater first (session ids
    /// are time-ordered: within one millisecond, the newer session).
    public static func listedBefore(_ first: SessionRecord, _ second: SessionRecord, now: Date) -> Bool {
        let (firstActive, secondActive) = (first.isActive(at: now), second.isActive(at: now))
        if firstActive != secondActive { return firstActive }
        let firstTime = firstActive ? first.createdAt : (first.endedAt(now: now) ?? first.createdAt)
        let secondTime = secondActive ? second.createdAt : (second.endedAt(now: now) ?? second.createdAt)
        let (a, b) = (firstTime.storedMilliseconds, secondTime.storedMilliseconds)
        if a != b { return a > b }
        return second.id.description.utf8.lexicographicallyPrecedes(first.id.description.utf8)
    }
}
