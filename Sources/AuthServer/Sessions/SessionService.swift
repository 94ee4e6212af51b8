public import AccountStore
import AppleSignIn
import Crypto
import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Owns siwa's sessions: issuing them, rotating refresh tokens (reuse detection with a short grace window), access
/// tokens for the non-rotating contracts, authenticating access tokens, and **ending** sessions.
///
/// It holds the store's session side, the access-token issuer, the revocation list, the user cache, the Apple consent
/// checker, metrics, the clock and the session settings. Controllers speak HTTP and call this; none of them touches
/// the store's revoke methods or the revocation list. Ending is written once, in ``SessionEnding``.
public final class SessionService: Sendable {
    let configuration: AuthServerConfiguration
    let store: any AccountStore
    let issuer: AccessTokenIssuer
    let users: UserCache
    let ending: SessionEnding
    /// The audit log, for the events of sign-ins and of the account lifecycle.
    var audit: AuditLog { ending.audit }
    /// Validates overdue Apple refresh tokens on refresh (`nil`: no Apple credentials, nothing to validate).
    let appleConsent: AppleConsentChecker?
    let metrics: ServerMetrics?
    let clock: any WallClock
    let logger: Logger
    /// Derives each rotation's successor token (``RefreshTokens/successor(of:key:)``).
    private let successorKey: SymmetricKey

    init(
        configuration: AuthServerConfiguration,
        store: any AccountStore,
        issuer: AccessTokenIssuer,
        revocations: RevocationList,
        users: UserCache,
        apple: AppleAPIClient?,
        sealer: DataSealer,
        metrics: ServerMetrics?,
        clock: any WallClock,
        logger: Logger
    ) {
        let ending = SessionEnding(
            store: store,
            revocations: revocations,
            users: users,
            clock: clock,
            audit: AuditLog(store: store, clock: clock, logger: logger, metrics: metrics)
        )
        self.configuration = configuration
        self.store = store
        self.issuer = issuer
        self.users = users
        self.ending = ending
        self.appleConsent = apple.map { apple in
            AppleConsentChecker(
                configuration: configuration.lifecycle,
                store: store,
                apple: apple,
                sealer: sealer,
                ending: ending,
                clock: clock,
                logger: logger
            )
        }
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
        self.successorKey = RefreshTokens.successorKey(dataKey: sealer.keys.primary.key)
    }

    /// Tokens answered to a client.
    public struct Tokens: Sendable {
        public var accessToken: String
        public var expiresIn: Int
        /// The new refresh token (rotation), or `nil` when the client keeps its own (non-rotating contracts).
        public var refreshToken: String?
        public var sessionID: SessionID
        public var userID: UserID
    }

    // MARK: Issuing

    /// A session to be stored with a sign-in (``AccountStore/signIn(_:startingSession:now:)``), and its refresh token.
    struct PreparedSession: Sendable {
        var refreshToken: String
        var record: NewSession
    }

    /// A new session's id and first refresh token, for the sign-in that stores it; `metadata` (the channel) goes to
    /// the console's session list and the audit log.
    func prepareSession(
        contract: SessionContract,
        binding: String? = nil,
        metadata: SessionMetadata = SessionMetadata()
    ) -> PreparedSession {
        let refreshToken = contract.newRefreshToken(binding: binding)
        let now = clock.now
        return PreparedSession(
            refreshToken: refreshToken,
            record: NewSession(
                sessionID: SessionID(),
                refreshTokenHash: RefreshTokens.hash(refreshToken),
                issuedAt: now,
                expiresAt: now.addingTimeInterval(configuration.refreshTokenLifetime),
                metadata: metadata
            )
        )
    }

    /// An access token for a stored session.
    func issueAccessToken(userID: UserID, sessionID: SessionID) throws -> (token: String, expiresIn: Int) {
        try issuer.issue(userID: userID, sessionID: sessionID)
    }

    // MARK: Refresh

    /// Rotates a refresh token of `contract`: a new access token and a new refresh token; the presented one stops
    /// working. Presenting a rotated token again revokes its whole session, unless within
    /// ``AuthServerConfiguration/refreshReuseGrace`` of its rotation (then a sibling token of the same session).
    /// - Throws: ``AuthServerError`` 401 naming why (`refresh_token_reused`, `refresh_token_revoked`,
    ///   `refresh_token_expired`, `invalid_refresh_token`, `apple_consent_revoked`), 403 `account_disabled`, 503
    ///   `apple_unavailable`.
    /// The new token carries `binding` (``SessionContract/newRefreshToken(binding:)``): the OpenID provider keeps the
    /// presented token's.
    func rotate(
        refreshToken: String,
        contract: SessionContract = .canonical,
        binding: String? = nil,
        logger: Logger
    ) async throws -> Tokens {
        try await requireWellFormed(refreshToken, contract: contract)
        let presentedHash = RefreshTokens.hash(refreshToken)
        try await requireAppleConsentBeforeRotating(presentedHash: presentedHash, logger: logger)
        let next = contract.successorToken(of: refreshToken, binding: binding, key: successorKey)
        let now = clock.now
        let outcome = try await store.rotateRefreshToken(
            presentedHash: presentedHash,
            next: RefreshTokenSuccessor(
                hash: RefreshTokens.hash(next),
                issuedAt: now,
                expiresAt: now.addingTimeInterval(configuration.refreshTokenLifetime)
            ),
            now: now,
            reuseGrace: configuration.refreshReuseGrace
        )
        switch outcome {
        case .rotated(let sessionID, let userID):
            RequestLog.current?.identify(user: userID, session: sessionID)
            metrics?.refresh(.rotated)
            try await requireAppleConsentAfterRotating(userID: userID, logger: logger)
            let access = try issuer.issue(userID: userID, sessionID: sessionID)
            return Tokens(
                accessToken: access.token,
                expiresIn: access.expiresIn,
                refreshToken: next,
                sessionID: sessionID,
                userID: userID
            )
        case .reused(let sessionID, let userID):
            RequestLog.current?.identify(user: userID, session: sessionID)
            throw try await reuseDetected(sessionID: sessionID, userID: userID, endedByStore: true, logger: logger)
        case .revoked(let sessionID, let userID):
            RequestLog.current?.identify(user: userID, session: sessionID)
            metrics?.refresh(.revoked)
            if let ended = try await appleConsentEndedError(userID: userID) { throw ended }
            throw AuthServerError.refreshTokenRevoked
        case .expired:
            metrics?.refresh(.expired)
            throw AuthServerError.refreshTokenExpired
        case .notFound:
            metrics?.refresh(.invalid)
            throw AuthServerError.invalidRefreshToken
        }
    }

    /// A new access token for a refresh token that is not rotated: the contracts whose clients keep one refresh token
    /// (ServiceStack's `GetAccessToken`, RentManager's `/api/auth/refresh`, the Vapor tutorial's long-lived bearer).
    /// The token must be its session's current one and of `contract`; a rotated token is reuse, as on
    /// `POST /auth/refresh`, and revokes its session.
    func accessToken(forRefreshToken refreshToken: String, contract: SessionContract) async throws -> Tokens {
        let (sessionID, userID) = try await session(ofRefreshToken: refreshToken, contract: contract)
        let access = try issuer.issue(userID: userID, sessionID: sessionID)
        return Tokens(
            accessToken: access.token,
            expiresIn: access.expiresIn,
            refreshToken: nil,
            sessionID: sessionID,
            userID: userID
        )
    }

    /// The session of a current refresh token of `contract`, or a 401 naming why not (403 `account_disabled` for a
    /// disabled account). Changes nothing, except that a rotated token revokes its session (reuse).
    func session(
        ofRefreshToken refreshToken: String,
        contract: SessionContract
    ) async throws -> (sessionID: SessionID, userID: UserID) {
        try await requireWellFormed(refreshToken, contract: contract)
        let check = try await store.checkRefreshToken(presentedHash: RefreshTokens.hash(refreshToken), now: clock.now)
        switch check {
        case .current(let sessionID, let userID):
            RequestLog.current?.identify(user: userID, session: sessionID)
            return (sessionID, userID)
        case .used(let sessionID, let userID):
            RequestLog.current?.identify(user: userID, session: sessionID)
            // The store's check changes nothing; reuse ends the session here, as a rotation would have.
            throw try await reuseDetected(sessionID: sessionID, userID: userID, logger: logger)
        case .revoked(let sessionID, let userID):
            RequestLog.current?.identify(user: userID, session: sessionID)
            if try await store.user(id: userID)?.isDisabled == true { throw AuthServerError.accountDisabled }
            throw AuthServerError.refreshTokenRevoked
        case .expired:
            throw AuthServerError.refreshTokenExpired
        case .notFound:
            throw AuthServerError.invalidRefreshToken
        }
    }

    /// Refuses a token that cannot be one of `contract`'s: empty, too long, or issued on another contract's routes.
    /// A token of another contract is refused without ending its session (presenting it on the wrong route proves
    /// nothing about who holds it), except a rotated one: reuse is reuse on every route.
    private func requireWellFormed(_ refreshToken: String, contract: SessionContract) async throws {
        guard !refreshToken.isEmpty, refreshToken.utf8.count <= 512 else {
            metrics?.refresh(.invalid)
            throw AuthServerError.invalidRefreshToken
        }
        let issuedBy = SessionContract.of(refreshToken)
        guard issuedBy == contract else {
            try await refuseIfReused(refreshToken)
            metrics?.refresh(.invalid)
            throw AuthServerError.unauthorized(
                AuthServerError.Code.invalidRefreshToken,
                "this refresh token was issued on \(issuedBy.displayName) and works only there"
            )
        }
    }

    /// Refuses a refresh token presented where it does not belong (another contract's route, another client) when it
    /// is a rotated one: reuse is reuse wherever the token turns up, so its session ends and the reuse is audited.
    /// Any other token passes, for the caller to refuse in its own words.
    /// - Throws: ``AuthServerError`` 401 `refresh_token_reused`.
    func refuseIfReused(_ refreshToken: String) async throws {
        guard !refreshToken.isEmpty, refreshToken.utf8.count <= 512 else { return }
        let hash = RefreshTokens.hash(refreshToken)
        if case .used(let sessionID, let userID) = try await store.checkRefreshToken(
            presentedHash: hash,
            now: clock.now
        ) {
            throw try await reuseDetected(sessionID: sessionID, userID: userID, logger: logger)
        }
    }

    /// A rotated token was presented again, on any route: the session ends (a rotation has already revoked it in the
    /// store, and revoking again changes nothing; a check has not), and this instance refuses its access tokens at once.
    /// The audit log records the reuse and the session's end (by the system).
    private func reuseDetected(
        sessionID: SessionID,
        userID: UserID,
        endedByStore: Bool = false,
        logger: Logger
    ) async throws -> AuthServerError {
        metrics?.refresh(.reused)
        await audit.append(.refreshTokenReuse, userID: userID, actor: .system, sessionID: sessionID)
        if endedByStore {
            await ending.storeEnded([sessionID], userID: userID, by: .system, reason: "reuse")
        } else {
            try await ending.end(sessionID, userID: userID, by: .system, reason: "reuse")
        }
        logger.warning(
            "refresh token reused: session revoked",
            metadata: ["user": "\(userID)", "session": "\(sessionID)"]
        )
        return AuthServerError.unauthorized(
            AuthServerError.Code.refreshTokenReused,
            "this refresh token was already used; the session has been revoked, sign in again"
        )
    }

    // MARK: Authenticating

    /// Checks one of siwa's own access tokens with no database read (``verify(_:)``); a relying party's token is
    /// refused, so that a caller that asks for a session never gets one from a token granted to another app.
    /// - Throws: ``AuthServerError`` 401 `invalid_token`, `relying_party_token`, `session_revoked` or
    ///   `account_deleted`.
    func authenticate(_ token: String) throws(AuthServerError) -> AccessTokenClaims {
        switch try verify(token) {
        case .session(let claims): return claims
        case .relyingParty: throw AuthServerError.relyingPartyToken
        }
    }

    /// Checks an access token of either kind with no database read: signature, claims and kind (cached), then the
    /// revocation list.
    /// - Throws: ``AuthServerError`` 401 `invalid_token`, `session_revoked` or `account_deleted`.
    func verify(_ token: String) throws(AuthServerError) -> VerifiedAccessToken {
        guard let verified = issuer.verify(token) else {
            throw AuthServerError.unauthorized(
                AuthServerError.Code.invalidToken,
                "the access token is malformed, expired or not signed by this server"
            )
        }
        let (userID, sessionID) = verified.subject
        switch ending.revocations.status(of: sessionID, userID: userID) {
        case .active: break
        case .sessionRevoked:
            throw AuthServerError.unauthorized(
                AuthServerError.Code.sessionRevoked,
                "the session of this access token has ended"
            )
        case .accountDeleted:
            throw AuthServerError.unauthorized(
                AuthServerError.Code.accountDeleted,
                "the account of this access token was deleted"
            )
        }
        return verified
    }

    /// The account of an authenticated session, or 401 when it is gone.
    func account(_ userID: UserID) async throws -> UserRecord {
        guard let user = try await users.user(id: userID, store: store) else {
            throw AuthServerError.unauthorized(AuthServerError.Code.unknownUser, "the account no longer exists")
        }
        return user
    }

    /// The account and its JSON, from the cache.
    func accountEntry(_ userID: UserID) async throws -> UserCache.Entry {
        guard let entry = try await users.entry(id: userID, store: store) else {
            throw AuthServerError.unauthorized(AuthServerError.Code.unknownUser, "the account no longer exists")
        }
        return entry
    }

    /// Keeps the cache current with an account a sign-in wrote; returns its entry (the account's `user` object
    /// encoded once, for the cache and the sign-in's answer).
    @discardableResult
    func signedIn(_ user: UserRecord) -> UserCache.Entry {
        users.update(user)
    }

    // MARK: Ending

    /// Ends one session of `userID` (logout, by the user).
    func endSession(_ sessionID: SessionID, userID: UserID) async throws {
        try await ending.end(sessionID, userID: userID, by: .user, reason: "logout")
    }

    /// Ends the session of a refresh token of any contract (logout by refresh token); an unknown token ends nothing.
    func endSession(refreshToken: String) async throws {
        guard !refreshToken.isEmpty, refreshToken.utf8.count <= 512,
            let session = try await store.session(refreshTokenHash: RefreshTokens.hash(refreshToken))
        else { return }
        try await ending.end(session.sessionID, userID: session.userID, by: .user, reason: "logout")
    }

    /// Ends the session of a refresh token presented for revocation (`/oauth/revoke`), in one look at the store. A
    /// rotated token is reuse here as on every route: its session ends and the reuse is audited.
    /// - Returns: Whether the token was a rotated one.
    @discardableResult
    func revoke(refreshToken: String) async throws -> Bool {
        guard !refreshToken.isEmpty, refreshToken.utf8.count <= 512 else { return false }
        switch try await store.checkRefreshToken(presentedHash: RefreshTokens.hash(refreshToken), now: clock.now) {
        case .current(let sessionID, let userID):
            try await ending.end(sessionID, userID: userID, by: .user, reason: "logout")
        case .used(let sessionID, let userID):
            _ = try await reuseDetected(sessionID: sessionID, userID: userID, logger: logger)
            return true
        case .expired:
            // The check names no session for an expired token; the logout's own look-up still ends it.
            try await endSession(refreshToken: refreshToken)
        case .revoked, .notFound:
            break
        }
        return false
    }

    /// Ends one session of `userID`, recorded as ended by `actor` for `reason`. Returns whether it was active.
    @discardableResult
    func endSession(_ sessionID: SessionID, userID: UserID, by actor: AuditActor, reason: String) async throws -> Bool {
        try await ending.end(sessionID, userID: userID, by: actor, reason: reason)
    }

    /// Sessions the store has already ended, in the same transaction as what ended them: this instance refuses their
    /// access tokens at once and reads the account again; with `actor`, each is recorded in the audit log as ended.
    func noteEnded(_ sessionIDs: [SessionID], userID: UserID?, by actor: AuditActor? = nil, reason: String = "") async {
        guard let actor else {
            ending.recordEnded(sessionIDs, userID: userID)
            return
        }
        await ending.storeEnded(sessionIDs, userID: userID, by: actor, reason: reason)
    }

    /// Whether the session is neither ended nor its account refused, as this instance knows it now.
    func isActive(_ sessionID: SessionID, userID: UserID) -> Bool {
        ending.revocations.status(of: sessionID, userID: userID) == .active
    }

    /// Ends every session of a user.
    @discardableResult
    func endAllSessions(userID: UserID, by actor: AuditActor, reason: String) async throws -> [SessionID] {
        try await ending.endAll(userID: userID, by: actor, reason: reason)
    }

    /// An account was deleted (its sessions ended in the deletion's transaction, which ``AccountDeletionService``
    /// records in the audit log): its access tokens are refused and it leaves the cache.
    func forgetDeletedAccount(_ userID: UserID, endedSessions: [SessionID]) {
        ending.recordEnded(endedSessions, userID: userID, deletedUser: userID)
    }

    /// An Apple notification (of `type`) was applied in the store: the sessions it ended (recorded as ended by
    /// Apple), the account it changed or deleted.
    func notificationApplied(endedSessions: [SessionID], userID: UserID?, deletedUser: UserID?, type: String) async {
        await ending.storeEnded(endedSessions, userID: userID, deletedUser: deletedUser, by: .apple, reason: type)
    }
}
