import AccountStore
import AppleSignIn
import Crypto
import Foundation
import HTTPTypes
import Logging
import NIOCore
import Tracing

/// Turns a verified Apple sign-in into a siwa account and session. Shared by the native, web and compatibility
/// routes, so that there is one implementation of sign-in.
struct SignInService: Sendable {
    let configuration: AuthServerConfiguration
    let store: any AccountStore
    let verifier: IdentityTokenVerifier
    let apple: AppleAPIClient?
    /// Starts the sessions of sign-ins.
    let sessions: SessionService
    /// The server's audit log, for refused sign-ins.
    let audit: AuditLog
    let sealer: DataSealer
    let clock: any WallClock
    let logger: Logger
    /// Counts sign-ins, refused identity tokens and failed code exchanges (`nil`: counts nothing).
    let metrics: ServerMetrics?
    /// Bounds the sessions one identity token opens, in this process (a store used by one process).
    let replays: IdentityTokenReplayGuard
    /// Whether the store counts the sessions of an identity token for every instance, in the sign-in's own write
    /// (``NewSession/bound``), rather than ``replays``.
    let boundsSessionsInStore: Bool
    /// Traces the identity token's verification (`nil`: tracing is off).
    let tracer: (any Tracer)?

    init(
        configuration: AuthServerConfiguration,
        store: any AccountStore,
        verifier: IdentityTokenVerifier,
        apple: AppleAPIClient?,
        sessions: SessionService,
        sealer: DataSealer,
        clock: any WallClock,
        logger: Logger,
        metrics: ServerMetrics? = nil,
        boundsSessionsInStore: Bool = false,
        tracer: (any Tracer)? = nil
    ) {
        self.configuration = configuration
        self.store = store
        self.verifier = verifier
        self.apple = apple
        self.sessions = sessions
        self.audit = sessions.audit
        self.sealer = sealer
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
        self.tracer = tracer
        self.replays = IdentityTokenReplayGuard(
            limit: min(configuration.maximumSessionsPerIdentityToken, SessionBound.maximumLimit)
        )
        self.boundsSessionsInStore = boundsSessionsInStore
    }

    /// A completed sign-in. It carries no access token: a route whose answer has one asks for it
    /// (``accessToken(for:)``), so that a contract answering only the refresh token (the Vapor tutorial's) does not sign
    /// one for nothing.
    public struct SignedIn: Sendable {
        public var user: UserRecord
        public var isNewUser: Bool
        /// The session the sign-in started.
        public var sessionID: SessionID
        public var refreshToken: String
        /// `user` as JSON, the object `GET /api/me` answers (encoded once, for the user cache and this answer).
        public var userJSON: ByteBuffer
    }

    /// Verifies the identity token (and nonce), exchanges the code when given, finds or creates the account and
    /// starts a session. A disabled account is refused with 403 `account_disabled` (and its code is not exchanged).
    ///
    /// The web flow passes `flow: .web` and the Services ID as `requiredAudience`; its nonce comes from the flow's
    /// server-side state, so the server-nonce requirement of native sign-ins does not apply to it.
    func signIn(
        identityToken: String,
        authorizationCode: String?,
        nonce: String?,
        givenName: String?,
        familyName: String?,
        redirectURI: String? = nil,
        flow: ServerMetrics.SignInFlow = .native,
        contract: SessionContract = .canonical,
        requiredAudience: ClientID? = nil,
        origin: SessionOrigin = SessionOrigin()
    ) async throws -> SignedIn {
        let channel = contract.channel(flow)
        let token: IdentityToken
        do {
            token = try await verifyIdentityToken(
                identityToken,
                nonce: nonce,
                requiredAudience: requiredAudience,
                consumesServerNonce: flow != .web
            )
        } catch let error as AuthServerError {
            // Apple unreachable or siwa misconfigured is no refusal of the user's token.
            if error.status == .unauthorized {
                await refused(Self.refusalReason(error.code), channel: channel, clientID: requiredAudience)
            }
            throw error
        }
        let limit = replays.limit  // the configured bound, at most SessionBound.maximumLimit
        let bound =
            boundsSessionsInStore && limit > 0
            ? SessionBound(sessionIDs: Self.boundSessionIDs(identityToken, expiresAt: token.expiresAt, limit: limit))
            : nil
        if bound == nil, !replays.admit(identityToken, expiresAt: token.expiresAt, now: clock.now) {
            try await refuseReplay(channel: channel, clientID: token.aud)
        }
        // The account and the session's first refresh token are one store transaction.
        var session = sessions.prepareSession(
            contract: contract,
            metadata: SessionMetadata(
                channel: channel,
                userAgent: origin.userAgent,
                clientAddress: origin.clientAddress
            )
        )
        session.record.bound = bound
        if let first = bound?.sessionIDs.first { session.record.sessionID = first }
        let outcome: SignInOutcome
        do {
            outcome = try await store.signIn(
                AppleSignInFacts(
                    appleUserID: token.sub,
                    clientID: token.aud,
                    email: token.email,
                    emailVerified: token.emailVerified,
                    isPrivateEmail: token.email == nil ? nil : token.emailIsPrivateRelay,
                    givenName: givenName.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap {
                        $0.isEmpty ? nil : $0
                    },
                    familyName: familyName.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.flatMap {
                        $0.isEmpty ? nil : $0
                    },
                    transferSub: token.transferSub,
                    linkByEmail: configuration.linkAccountsByEmail
                ),
                startingSession: session.record,
                now: session.record.issuedAt
            )
        } catch {
            // No session was opened: the token's count is given back (a retry after a 503 is no replay). The store's
            // count went with its failed write.
            if bound == nil { replays.release(identityToken) }
            // Linking by email found an account whose own Apple ID still signs in: refused, never taken over.
            guard error.code == .duplicate, configuration.linkAccountsByEmail else { throw error }
            await refused(AuthServerError.Code.emailInUse, channel: channel, clientID: token.aud)
            throw AuthServerError(
                .conflict,
                AuthServerError.Code.emailInUse,
                "this email belongs to an account of another Apple ID; sign in with that Apple ID"
            )
        }
        let sessionID = outcome.boundSessionID ?? session.record.sessionID
        if outcome.sessionBoundReached {
            try await refuseReplay(channel: channel, clientID: token.aud, userID: outcome.user.id)
        }
        // A disabled account's sign-in started no session (the store's rule): refused.
        RequestLog.current?.identify(
            user: outcome.user.id,
            session: outcome.user.isDisabled ? nil : sessionID
        )
        guard !outcome.user.isDisabled else {
            sessions.signedIn(outcome.user)
            logger.info("sign-in refused: the account is disabled", metadata: ["user": "\(outcome.user.id)"])
            await refused("disabled", channel: channel, clientID: token.aud, userID: outcome.user.id)
            throw AuthServerError.accountDisabled
        }
        if let authorizationCode, !authorizationCode.isEmpty, let apple {
            await keepAppleRefreshToken(
                code: authorizationCode,
                token: token,
                userID: outcome.user.id,
                redirectURI: redirectURI,
                apple: apple
            )
        }
        metrics?.signIn(flow: flow, isNewUser: outcome.isNewUser)
        let cached = sessions.signedIn(outcome.user)
        // A returning sign-in is the access line's already (user, session, status); a new account is worth a line.
        logger.log(
            level: outcome.isNewUser ? .info : .debug,
            "signed in",
            metadata: ["user": "\(outcome.user.id)", "new": "\(outcome.isNewUser)", "client": "\(token.aud)"]
        )
        return SignedIn(
            user: outcome.user,
            isNewUser: outcome.isNewUser,
            sessionID: sessionID,
            refreshToken: session.refreshToken,
            userJSON: cached.json
        )
    }

    /// Refuses an identity token that has opened as many sessions as it may.
    private func refuseReplay(channel: SignInChannel, clientID: ClientID, userID: UserID? = nil) async throws -> Never {
        metrics?.identityTokenFailure(reason: AuthServerError.Code.identityTokenReplayed)
        await refused("replay", channel: channel, clientID: clientID, userID: userID)
        throw AuthServerError.unauthorized(
            AuthServerError.Code.identityTokenReplayed,
            "this identity token has already signed in \(replays.limit) times; get a new one from Apple"
        )
    }

    /// The ids the sessions of one identity token take (``SessionBound``), one per session it may open (at most
    /// ``SessionBound/maximumLimit``): derived from the token so that every instance derives the same ones, and from
    /// nothing secret, as a session id is none. Laid out as a time-ordered id is (the token's expiry in the first 48
    /// bits, so that they append to the session indexes as new ids do), with UUID version 8, 58 bits of the token's
    /// SHA-256 and the ordinal in the last 16: no time-ordered id (version 7) and, but by a 58-bit coincidence at the
    /// same millisecond, no other token's can equal them.
    static func boundSessionIDs(_ identityToken: String, expiresAt: Date, limit: Int) -> [SessionID] {
        let h = Array(SHA256.hash(data: Array(identityToken.utf8)))
        let ms = UInt64(max(0, expiresAt.timeIntervalSince1970 * 1_000))
        func byte(_ value: UInt64, _ shift: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: value >> shift) }
        return (1...min(max(1, limit), SessionBound.maximumLimit)).map { ordinal in
            let n = UInt64(ordinal)
            return SessionID(
                UUID(
                    uuid: (
                        byte(ms, 40), byte(ms, 32), byte(ms, 24), byte(ms, 16), byte(ms, 8), byte(ms, 0),
                        0x80 | (h[0] & 0x0F), h[1], 0x80 | (h[2] & 0x3F), h[3], h[4], h[5], h[6], h[7],
                        byte(n, 8), byte(n, 0)
                    )
                )
            )
        }
    }

    /// An access token of the session `signedIn` started.
    func accessToken(for signedIn: SignedIn) throws -> (token: String, expiresIn: Int) {
        try sessions.issueAccessToken(userID: signedIn.user.id, sessionID: signedIn.sessionID)
    }

    /// Records a refused sign-in in the audit log: why (a short code), how and for which client, and the account
    /// when known. Never the token. Also recorded: `replay`, `email_in_use`, `disabled`.
    private func refused(
        _ reason: String,
        channel: SignInChannel,
        clientID: ClientID?,
        userID: UserID? = nil
    ) async {
        await audit.append(
            .signInRefused,
            userID: userID,
            // siwa refused it (the user only tried).
            actor: .system,
            channel: channel,
            clientID: clientID,
            reason: reason
        )
    }

    /// The audit log's reason for a refused identity token: the failed check (`expired`, `audience_mismatch`,
    /// `signature_invalid`, `nonce_mismatch`, …), without the answer's `identity_token_` prefix.
    static func refusalReason(_ code: String) -> String {
        let prefix = "identity_token_"
        return code.hasPrefix(prefix) ? String(code.dropFirst(prefix.count)) : code
    }

    /// Verifies an identity token: Apple's checks and the nonce, then `requiredAudience` when given, then (when the
    /// server requires it and `consumesServerNonce`) consumes the server nonce.
    /// - Throws: ``AuthServerError``: 401 naming the failed check, 503 when Apple's keys are unreachable.
    func verifyIdentityToken(
        _ identityToken: String,
        nonce: String?,
        requiredAudience: ClientID? = nil,
        consumesServerNonce: Bool = true
    ) async throws -> IdentityToken {
        // Its span holds the key set's fetch when the cache needs one, and the server nonce's consumption.
        try await traced(tracer, "verify identity token") {
            try await verifyIdentityTokenUntraced(
                identityToken,
                nonce: nonce,
                requiredAudience: requiredAudience,
                consumesServerNonce: consumesServerNonce
            )
        }
    }

    private func verifyIdentityTokenUntraced(
        _ identityToken: String,
        nonce: String?,
        requiredAudience: ClientID?,
        consumesServerNonce: Bool
    ) async throws -> IdentityToken {
        do {
            let token = try await verifier.verify(identityToken, expectedNonce: nonce)
            if let requiredAudience, token.aud != requiredAudience {
                throw AppleSignInError(
                    .audienceMismatch,
                    "the token is for client '\(token.aud)', this flow needs '\(requiredAudience)'"
                )
            }
            if consumesServerNonce, configuration.requireServerNonce { try await consumeServerNonce(of: token) }
            return token
        } catch let error as AppleSignInError {
            logger.info("identity token refused", metadata: ["check": "\(error.code)", "reason": "\(error.reason)"])
            let refusal = AuthServerError.refusedIdentityToken(error)
            metrics?.identityTokenFailure(reason: refusal.code)
            throw refusal
        }
    }

    /// Exchanges the code at Apple and keeps the refresh token sealed. Apple being down does not fail the sign-in.
    private func keepAppleRefreshToken(
        code: String,
        token: IdentityToken,
        userID: UserID,
        redirectURI: String?,
        apple: AppleAPIClient
    ) async {
        do {
            let tokens: AppleTokenResponse
            do {
                tokens = try await apple.exchange(code: code, for: token, redirectURI: redirectURI)
            } catch {
                metrics?.codeExchangeFailed()
                throw error
            }
            guard let refreshToken = tokens.refreshToken else { return }
            try await store.saveAppleToken(
                AppleTokenRecord(
                    userID: userID,
                    clientID: token.aud,
                    encryptedRefreshToken: try sealer.seal(Array(refreshToken.utf8)),
                    storedAt: clock.now,
                    lastValidatedAt: clock.now
                )
            )
        } catch {
            logger.warning(
                "authorization code exchange failed; signed in on the identity token alone",
                metadata: ["error": "\(error)"]
            )
        }
    }

    /// The token's nonce must be an unconsumed server nonce, raw or as SHA-256 hex; it is consumed.
    private func consumeServerNonce(of token: IdentityToken) async throws {
        guard let nonce = token.nonce else {
            throw AppleSignInError(.nonceMissing, "a server-issued nonce is required")
        }
        for candidate in NonceForms.rawNonceHashes(claim: nonce)
        where try await store.consumeServerNonce(hash: candidate, now: clock.now) {
            return
        }
        throw AppleSignInError(.nonceMismatch, "the token's nonce is not an unused server nonce")
    }

    /// Issues a server nonce: the app passes it to Apple (raw or SHA-256) and the sign-in consumes it.
    func issueServerNonce() async throws -> (nonce: String, expiresIn: Int) {
        let nonce = WebAuthorization.randomToken(byteCount: 32)
        try await store.saveServerNonce(
            hash: Array(SHA256.hash(data: Array(nonce.utf8))),
            expiresAt: clock.now.addingTimeInterval(configuration.serverNonceLifetime)
        )
        return (nonce, Int(configuration.serverNonceLifetime))
    }
}
