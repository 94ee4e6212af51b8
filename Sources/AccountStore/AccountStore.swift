public import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Where siwa keeps accounts, sessions and keys. Implementations: ``InMemoryAccountStore`` and the SQL store
/// (`AccountStoreSQL`, SQLite and PostgreSQL). Every implementation passes the same conformance suite (`SiwaTesting`).
///
/// Rules every implementation keeps:
/// - Each method is atomic: a failure leaves stored data as it was.
/// - One account per Apple `sub`, also when two first sign-ins race.
/// - Refresh tokens are kept only as hashes; presenting one rotates it exactly once, even under concurrency.
/// - Times are stored to the millisecond.
public protocol AccountStore: Sendable {
    // MARK: Accounts

    /// Finds the account of `facts.appleUserID` or creates it.
    ///
    /// An existing account takes the token's email when it carries one (and its `email_verified` and
    /// `is_private_email`); a stored name is never replaced or blanked, and a missing one is filled from `facts`.
    /// The account is written (and its `updatedAt` moves) only when the sign-in changes it, so that a user signing in
    /// on many devices at once does not queue on one row.
    /// Two racing first sign-ins of one Apple user create one account (the loser reads the winner's).
    ///
    /// When no account has the `sub` but `facts.transferSub` names a pending transfer, that account is moved to the
    /// `sub` (as ``reassignAppleUser(userID:newAppleUserID:email:isPrivateEmail:now:)`` does) and signs in as a
    /// returning user.
    ///
    /// With `session`, the account's new session and its first refresh token are stored in the same transaction (the
    /// sign-in is then one write, and a session never exists without its account). A disabled account
    /// (``UserRecord/disabledAt``) is returned as it is and no session is started: the caller refuses the sign-in.
    /// A store with ``sharedCounters()`` keeps the session's ``NewSession/bound`` in that write too: it starts the
    /// session under the first of the bound's ids not taken (``SignInOutcome/boundSessionID``), and once all are
    /// taken returns the account with ``SignInOutcome/sessionBoundReached``, starting no session.
    ///
    /// A sign-in that starts a session is recorded in the audit log in that same write: an
    /// ``AuditEventType/signIn`` event (actor the user, with the session's channel, the facts' client id and the
    /// session id; details `account`: `new` or `returning`), preceded by ``AuditEventType/accountCreated`` for a new
    /// account. Every sign-in of an account that is not disabled sets ``UserRecord/lastSignInAt`` to `now` (to within
    /// ``UserRecord/lastSignInResolution``).
    func signIn(
        _ facts: AppleSignInFacts,
        startingSession session: NewSession?,
        now: Date
    ) async throws(StoreError) -> SignInOutcome

    /// The account with siwa id `id`.
    func user(id: UserID) async throws(StoreError) -> UserRecord?

    /// The account of an Apple user.
    func user(appleUserID: AppleUserID) async throws(StoreError) -> UserRecord?

    /// The accounts whose email is `email`, ignoring case (ASCII letters at least), oldest first. Several accounts
    /// can share an email (different Apple IDs).
    func users(email: String) async throws(StoreError) -> [UserRecord]

    /// Accounts ordered by creation, at most `limit`, after the one with id `after` (for paging).
    func users(limit: Int, after: UserID?) async throws(StoreError) -> [UserRecord]

    /// Deletes (or anonymises) the account in one transaction: its sessions end, its refresh tokens and Apple token
    /// go, and the deletion is recorded for ``deletedAccounts(since:)``. With `appleRevocationDueAt`, a kept Apple
    /// token moves to the revocation queue in that same transaction, first due at that time, so a crash cannot lose
    /// it (a caller that tries the revocation at once passes a later time, so that the retry worker does not race
    /// its attempt). The same transaction records a ``LifecycleEventType/sessionEnded`` event per session ended and
    /// a ``LifecycleEventType/userDeleted`` event by `actor`, and blanks the personal values of the account's earlier
    /// events (``LifecycleEvent/withoutPersonalData()``). Returns `nil` when there is no such account.
    func deleteUser(
        id: UserID,
        mode: AccountDeletionMode,
        appleRevocationDueAt: Date?,
        by actor: AuditActor,
        now: Date
    ) async throws(StoreError) -> DeletedAccount?

    /// Accounts deleted or anonymised at or after `since`, for the revocation lists and user caches of every instance.
    func deletedAccounts(since: Date) async throws(StoreError) -> [AccountDeletion]

    /// Accounts changed (updated, deleted or anonymised) at or after `since`, for user caches.
    func usersChanged(since: Date) async throws(StoreError) -> [UserID]

    /// Apple ended the user's consent (`consent-revoked`, or `invalid_grant` when validating): every session ends,
    /// the Apple token is dropped and the account is marked with ``UserRecord/appleConsentRevokedAt`` until the next
    /// Apple sign-in. Records ``LifecycleEventType/sessionEnded`` per session and
    /// ``LifecycleEventType/userConsentRevoked`` by `actor` in the same transaction. Returns the sessions ended.
    @discardableResult
    func endAppleConsent(userID: UserID, by actor: AuditActor, now: Date) async throws(StoreError) -> [SessionID]

    /// Disables the account (an operator's `siwa users disable`): ``UserRecord/disabledAt`` is set (an earlier time
    /// is kept) and every session ends, in one transaction; ``usersChanged(since:)`` and
    /// ``revokedSessions(since:)`` report it to every instance. A disabled account signs in to no session until
    /// ``enableUser(id:by:now:)``. Records ``LifecycleEventType/sessionEnded`` per session and
    /// ``LifecycleEventType/userDisabled`` by `actor`. Returns `nil` when there is no such account.
    func disableUser(id: UserID, by actor: AuditActor, now: Date) async throws(StoreError) -> DisabledAccount?

    /// Enables a disabled account again (its ended sessions stay ended; the user signs in anew). Returns the account,
    /// or `nil` when there is no such account. Records ``LifecycleEventType/userEnabled`` by `actor` when it was
    /// disabled.
    @discardableResult
    func enableUser(id: UserID, by actor: AuditActor, now: Date) async throws(StoreError) -> UserRecord?

    // MARK: Apple refresh tokens

    /// Keeps (or replaces) the user's Apple refresh token, sealed by the caller.
    func saveAppleToken(_ token: AppleTokenRecord) async throws(StoreError)

    /// The user's Apple refresh token, if one is kept.
    func appleToken(userID: UserID) async throws(StoreError) -> AppleTokenRecord?

    /// Apple tokens last validated before `validatedBefore` (never-validated ones first), at most `limit`.
    func appleTokensDue(validatedBefore: Date, limit: Int) async throws(StoreError) -> [AppleTokenRecord]

    /// Claims the validation of one user's Apple token: when it was last validated before `validatedBefore`, marks
    /// it validated at `now` and returns it; otherwise `nil`. Of racing claims (on any instance) exactly one wins.
    func claimAppleTokenValidation(
        userID: UserID,
        validatedBefore: Date,
        now: Date
    ) async throws(StoreError) -> AppleTokenRecord?

    /// Sets when the token counts as last validated (to retry sooner after Apple could not be reached).
    func setAppleTokenValidated(userID: UserID, at: Date) async throws(StoreError)

    // MARK: Apple revocation queue

    /// Queued revocations whose next attempt is due at `now`, oldest first, at most `limit`.
    func dueAppleRevocations(now: Date, limit: Int) async throws(StoreError) -> [PendingAppleRevocation]

    /// How many revocations are queued, due or not (a metric's gauge).
    func pendingAppleRevocationCount() async throws(StoreError) -> Int

    /// Removes a revocation Apple confirmed (or that can never succeed).
    func finishAppleRevocation(id: UUID) async throws(StoreError)

    /// Records a failed attempt and when to try again.
    func postponeAppleRevocation(id: UUID, until: Date, error: String) async throws(StoreError)

    // MARK: Apple notifications

    /// Applies a verified notification once: the first delivery of `event.eventKey` performs `action` on the account
    /// of `event.appleUserID` (if any) and logs the event, in one transaction; later deliveries change nothing and
    /// answer ``AppleNotificationOutcome/duplicate(_:)``. The store fills `userID` and `outcome`.
    ///
    /// Events apply in event order, whatever order they arrive in: an event older than the state it would change is
    /// logged with outcome `stale` and changes nothing. For `endConsent`, that state is the user's latest sign-in (the
    /// newest session's creation, less ``AppleNotificationRecord/consentOrderingLeeway`` for clock skew): a consent
    /// revoked before the user signed in again does not end the new session. For
    /// `setEmailForwarding`, it is the last applied email event of that Apple user.
    func applyAppleNotification(
        _ event: AppleNotificationRecord,
        action: AppleNotificationAction,
        now: Date
    ) async throws(StoreError) -> AppleNotificationOutcome

    /// The notification audit log, newest first, at most `limit`.
    func appleNotifications(limit: Int) async throws(StoreError) -> [AppleNotificationRecord]

    // MARK: Web sign-in states

    /// Keeps a pending web sign-in until its expiry. Fails with ``StoreError/Code/duplicate`` for a known state.
    func saveWebFlowState(_ state: WebFlowState) async throws(StoreError)

    /// Uses up a pending web sign-in: ``WebFlowStateOutcome/consumed(_:)`` exactly once, while unexpired.
    func consumeWebFlowState(stateHash: [UInt8], now: Date) async throws(StoreError) -> WebFlowStateOutcome

    // MARK: OpenID Connect authorization codes

    /// Keeps an authorization code (by hash) until its expiry. Fails with ``StoreError/Code/duplicate`` for a known
    /// hash, ``StoreError/Code/notFound`` when its user does not exist.
    func saveAuthorizationCode(_ code: AuthorizationCodeRecord) async throws(StoreError)

    /// The code with this hash, redeemed or not, expired or not (so that the caller checks the client, redirect URI
    /// and PKCE verifier before redeeming); `nil` when unknown. Deleting the account deletes its codes.
    func authorizationCode(codeHash: [UInt8]) async throws(StoreError) -> AuthorizationCodeRecord?

    /// Redeems a code, in one transaction: when it is unused and unexpired, it is marked redeemed with
    /// `session.sessionID` as its issued session, and `session` is started for the code's user (its first refresh
    /// token stored by hash) → ``AuthorizationCodeOutcome/redeemed(_:)``. Of concurrent redemptions exactly one wins.
    /// A code redeemed before is a replay: the session its first redemption started is revoked in the same
    /// transaction → ``AuthorizationCodeOutcome/replayed(_:endedSession:)``, with a ``LifecycleEventType/sessionEnded``
    /// event (``SessionEndReason/codeReplayed``) when it was active.
    func redeemAuthorizationCode(
        codeHash: [UInt8],
        startingSession session: NewSession,
        now: Date
    ) async throws(StoreError) -> AuthorizationCodeOutcome

    // MARK: Announcements

    /// What this store's other users (other instances, operator commands) change, announced as they commit, for as
    /// long as the caller iterates: every ending and account change is honoured at once rather than at the next poll.
    /// The stream starts with ``StoreAnnouncement/resynchronize`` and says it again after any gap (a lost connection).
    /// `nil` when the store cannot announce (in memory, SQLite: one process): the caller polls.
    func announcements() -> AsyncStream<StoreAnnouncement>?

    // MARK: Shared limits

    /// The counts every instance sharing this store adds to, for the limits that hold for the whole deployment;
    /// `nil` when the store is used by one process (in memory, SQLite): the process counts in memory.
    func sharedCounters() -> (any SharedCounters)?

    // MARK: OpenID Connect consents

    /// What `userID` has allowed the public relying party `clientID` answering at `redirectURI`; `nil` when nothing.
    /// Deleting or anonymising the account deletes its consents.
    func clientConsent(
        userID: UserID,
        clientID: String,
        redirectURI: String
    ) async throws(StoreError) -> ClientConsentRecord?

    /// Keeps a consent, replacing the user's earlier one for the same client and redirect URI. Fails with
    /// ``StoreError/Code/notFound`` when the user does not exist.
    func saveClientConsent(_ consent: ClientConsentRecord) async throws(StoreError)

    // MARK: Sessions

    /// Starts a session with its first refresh token, and how and from where it was started.
    func createSession(firstToken: RefreshTokenRecord, metadata: SessionMetadata, now: Date) async throws(StoreError)

    /// Presents the refresh token with hash `presentedHash`. When it is current it is marked used and `next` is stored
    /// as the session's new token, of the presented token's session and user. Presenting a token that was already used
    /// revokes the whole session (theft; a ``LifecycleEventType/sessionEnded`` event, ``SessionEndReason/reuse``),
    /// unless it was
    /// used less than `reuseGrace` before `now` (two browser tabs, or a client retrying after a lost answer, present one
    /// token at nearly the same time): then the answer is ``RotationOutcome/rotated(sessionID:userID:)`` and the session
    /// keeps one current token. A `next` already stored for the session (the caller derives successors from the
    /// presented token, so a retry names the same one) is left as it is; any other `next` replaces every current token
    /// of the session, which are marked used. Exactly one of several concurrent presentations of one current token can
    /// rotate it, and however many come within the window, one chain of tokens survives. A rotation is the session's ``SessionRecord/lastUsedAt`` (the presented token's
    /// use time, written anyway).
    func rotateRefreshToken(
        presentedHash: [UInt8],
        next: RefreshTokenSuccessor,
        now: Date,
        reuseGrace: TimeInterval
    ) async throws(StoreError)
        -> RotationOutcome

    /// Checks a refresh token without rotating it, for the client contracts whose refresh answers only a new access
    /// token (ServiceStack's `GetAccessToken`, RentManager's `/api/auth/refresh`): their clients keep presenting the
    /// same refresh token. Changes nothing, also for a used token, except that a current token's session records `now`
    /// as its ``SessionRecord/lastUsedAt`` (to within ``SessionRecord/lastUseResolution``).
    func checkRefreshToken(presentedHash: [UInt8], now: Date) async throws(StoreError) -> RefreshTokenCheck

    /// The session a refresh token belongs to (for logout by refresh token).
    func session(refreshTokenHash: [UInt8]) async throws(StoreError) -> (sessionID: SessionID, userID: UserID)?

    /// Revokes one session: its refresh tokens stop working at once. Returns whether it was active; when it was,
    /// the same transaction records a ``LifecycleEventType/sessionEnded`` event by `actor` for `reason`
    /// (``SessionEndReason``).
    @discardableResult
    func revokeSession(
        _ sessionID: SessionID,
        by actor: AuditActor,
        reason: String,
        now: Date
    ) async throws(StoreError) -> Bool

    /// Revokes every session of a user, recording a ``LifecycleEventType/sessionEnded`` event for each; returns the
    /// sessions revoked.
    @discardableResult
    func revokeSessions(
        userID: UserID,
        by actor: AuditActor,
        reason: String,
        now: Date
    ) async throws(StoreError) -> [SessionID]

    /// Sessions revoked at or after `since`, for the revocation lists that keep access tokens of revoked sessions
    /// out without a database read per request.
    func revokedSessions(since: Date) async throws(StoreError) -> [SessionRevocation]

    // MARK: Server nonces

    /// Keeps a server-issued nonce (by hash) until `expiresAt`.
    func saveServerNonce(hash: [UInt8], expiresAt: Date) async throws(StoreError)

    /// Consumes a nonce: true exactly once, while unexpired.
    func consumeServerNonce(hash: [UInt8], now: Date) async throws(StoreError) -> Bool

    // MARK: Access-token signing keys

    /// Every signing key, oldest first.
    func signingKeys() async throws(StoreError) -> [SigningKeyRecord]

    /// Adds a key and retires the current one at `key.createdAt`. Fails with ``StoreError/Code/duplicate`` for a
    /// `kid` already stored.
    func addSigningKey(_ key: SigningKeyRecord) async throws(StoreError)

    // MARK: Sealed data

    /// The blobs sealed with the data key (signing keys, Apple refresh tokens, queued Apple revocations), in
    /// ``SealedItem/Kind`` order and by id within a kind (in the database's order of text), at most `limit`, after the
    /// one at `after` (for paging). An item added or removed during a walk may or may not be seen; every other item is
    /// seen exactly once.
    func sealedItems(after: SealedItem.Position?, limit: Int) async throws(StoreError) -> [SealedItem]

    /// Replaces an item's sealed bytes with `sealed` when they are still `item.sealed` (compare-and-swap: data that a
    /// server rewrote meanwhile is not overwritten), leaving everything else of the row as it is. Returns whether it
    /// replaced them; `false` when they changed or the item is gone.
    func replaceSealed(_ item: SealedItem, with sealed: [UInt8]) async throws(StoreError) -> Bool

    // MARK: Housekeeping

    /// Deletes what can no longer be used: expired server nonces and web states, refresh tokens and revoked
    /// sessions past `retention` after their expiry or revocation, deletion records older than `retention`, and
    /// authorization codes past `retention` after their expiry.
    func purgeExpired(now: Date, retention: TimeInterval) async throws(StoreError) -> PurgeResult

    // MARK: Operator console

    /// Finds accounts for the console, `limit` at most per page, after `cursor` (from the previous page's
    /// ``Page/next``).
    ///
    /// An empty `query` (or only whitespace) lists every account, newest first. Otherwise the accounts that match, in
    /// this order: the account whose siwa id is `query` (any case), the account whose Apple `sub` is `query`, then
    /// accounts whose email starts with it, then those whose given name does, then those whose family name does
    /// (each ordered by that text, then id; case ignored as ``SearchKey`` does). An account is answered once, at its
    /// first match. Anonymised accounts are included (status ``UserStatus/deleted``).
    ///
    /// Each step is one index range in SQL, so a page costs the same however many accounts there are.
    /// - Throws: ``StoreError/Code/invalidInput`` for a cursor this store did not make for a search.
    func searchUsers(
        _ query: String,
        limit: Int,
        after cursor: PageCursor?
    ) async throws(StoreError) -> Page<UserRecord>

    /// How many accounts exist (not counting deleted or anonymised ones), and how many were created at or after each
    /// of `createdSince`.
    func accountTotals(createdSince: [Date]) async throws(StoreError) -> AccountTotals

    /// A user's sessions for the console, at most `limit`: the active ones (``SessionRecord/isActive(at:)``), newest
    /// first, then the ended ones, the most recently ended first.
    func sessions(userID: UserID, now: Date, limit: Int) async throws(StoreError) -> [SessionRecord]

    /// Appends an event to the audit log (``AuditEvent/limited()`` of it).
    /// - Throws: ``StoreError/Code/duplicate`` for an event id already stored.
    /// - Warning: Never a token, code, key or hash in an event (see ``AuditEvent``).
    func appendAuditEvent(_ event: AuditEvent) async throws(StoreError)

    /// The audit events that `filter` lets through, newest first (by time, then id), at most `limit`, after `cursor`
    /// (from the previous page's ``Page/next``). Events appended meanwhile with a time before the cursor's appear on
    /// a later page; none repeats and none is skipped.
    /// - Throws: ``StoreError/Code/invalidInput`` for a cursor this store did not make for the audit log.
    func auditEvents(
        _ filter: AuditEventFilter,
        limit: Int,
        after cursor: PageCursor?
    ) async throws(StoreError) -> Page<AuditEvent>

    /// The audit events of `types` on every UTC day that overlaps `from..<until` (whole days), counted by day, type,
    /// channel and reason, ordered by day, type, channel and reason; only non-zero counts.
    ///
    /// A day that ended at least ``AuditEventCount/settleTime`` before `now` is counted once and its counts kept
    /// (SQL: `audit_daily_counts`), so that a month of charts reads a few hundred rows instead of every event; an event
    /// appended later with a time on such a day is not in them. Newer days are counted from the events on each call.
    func auditEventCounts(
        from: Date,
        until: Date,
        types: Set<AuditEventType>,
        now: Date
    ) async throws(StoreError) -> [AuditEventCount]

    /// Deletes the audit events from before `before` (the retention), in batches that each hold the database
    /// briefly, and the kept counts of the days that ended by then. Returns how many events went.
    @discardableResult
    func purgeAuditEvents(before: Date) async throws(StoreError) -> Int

    /// Grants the admin role to `subject` and records ``AuditEventType/adminGranted``, in one transaction. Returns
    /// `false` (and changes nothing) when it is granted already.
    @discardableResult
    func grantAdmin(_ subject: AdminSubject, by actor: AuditActor, now: Date) async throws(StoreError) -> Bool

    /// Revokes the admin role of `subject` and records ``AuditEventType/adminRevoked``, in one transaction. Returns
    /// `false` (and changes nothing) when it was not granted.
    @discardableResult
    func revokeAdmin(_ subject: AdminSubject, by actor: AuditActor, now: Date) async throws(StoreError) -> Bool

    /// Every admin grant, oldest first.
    func adminGrants() async throws(StoreError) -> [AdminGrant]

    /// Whether `subject` holds the admin role in the store (one key lookup).
    func isAdmin(_ subject: AdminSubject) async throws(StoreError) -> Bool

    // MARK: Service tokens of the admin API

    /// Stores a service token with the SHA-256 of its secret (never the secret) and records
    /// ``AuditEventType/adminTokenCreated`` by its ``AdminToken/createdBy``, in one transaction.
    /// - Throws: ``StoreError`` `duplicate` when a token not revoked has the same name (or the hash is known).
    func createAdminToken(_ token: AdminToken, tokenHash: [UInt8]) async throws(StoreError)

    /// The service token whose secret hashes to `tokenHash` (one key lookup), revoked and expired ones included.
    func adminToken(tokenHash: [UInt8]) async throws(StoreError) -> AdminToken?

    /// Every service token, revoked and expired ones included, oldest first.
    func adminTokens() async throws(StoreError) -> [AdminToken]

    /// Revokes the token named `name` that is not revoked yet and records ``AuditEventType/adminTokenRevoked``, in one
    /// transaction. Returns the revoked token, or `nil` (and changes nothing) when no such token is unrevoked.
    @discardableResult
    func revokeAdminToken(named name: String, by actor: AuditActor, now: Date) async throws(StoreError) -> AdminToken?

    /// Notes that the token `id` was presented at `time` (its ``AdminToken/lastUsedAt``).
    func noteAdminTokenUse(_ id: UUID, at time: Date) async throws(StoreError)

    // MARK: Health

    /// Succeeds when the store can serve requests.
    func ping() async throws(StoreError)

    // MARK: Team transfer (TN3159)

    /// Sending team: keeps the `transfer_sub` Apple gave for moving the account to `targetTeam`, replacing an earlier
    /// transfer of it (which then counts as pending again).
    /// - Throws: ``StoreError/Code/notFound`` for no such account, ``StoreError/Code/duplicate`` when another account
    ///   has this `transfer_sub`.
    func setTransferSub(
        userID: UserID,
        transferSub: AppleUserID,
        targetTeam: String,
        now: Date
    ) async throws(StoreError)

    /// Sending team: accounts with no transfer (and not anonymised), in creation order, at most `limit`, after the one
    /// with id `after`. An export walks these, so that a re-run skips the accounts it already exported.
    func usersWithoutTransfer(after: UserID?, limit: Int) async throws(StoreError) -> [UserRecord]

    /// The account's transfer, if it has one.
    func transfer(userID: UserID) async throws(StoreError) -> AppleTransferRecord?

    /// The account whose transfer has this `transfer_sub`.
    func user(transferSub: AppleUserID) async throws(StoreError) -> UserRecord?

    /// Receiving team: transfers not yet done (``AppleTransferRecord/transferredAt`` is `nil`), ordered by user id, at
    /// most `limit`, after the one of user `after`.
    func pendingTransfers(after: UserID?, limit: Int) async throws(StoreError) -> [AppleTransferRecord]

    /// Receiving team: moves the account to its `sub` at the receiving team, in one transaction. A given `email`
    /// (and `isPrivateEmail`) replaces the stored one; the Apple refresh token, issued to the sending team, is dropped;
    /// the account's transfer is marked done at `now`. Sessions and everything else stay. Calling it again with the
    /// same `sub` changes nothing more. The move records a ``LifecycleEventType/userTransferred`` event by an
    /// operator.
    /// - Throws: ``StoreError/Code/notFound`` for no such account, ``StoreError/Code/duplicate`` when another account
    ///   has `newAppleUserID` already.
    @discardableResult
    func reassignAppleUser(
        userID: UserID,
        newAppleUserID: AppleUserID,
        email: String?,
        isPrivateEmail: Bool?,
        now: Date
    ) async throws(StoreError) -> UserRecord

    // MARK: Lifecycle events

    /// The lifecycle events after the one with sequence `after` (`nil`: from the oldest kept), in commit order, at
    /// most `limit`: a reader that pages with the last event's ``LifecycleEvent/sequence`` misses none, also when
    /// several instances write at once.
    func lifecycleEvents(after: Int64?, limit: Int) async throws(StoreError) -> [LifecycleEvent]

    /// Deletes the lifecycle events that happened before `before`, except those a pending webhook delivery still
    /// needs, with the finished deliveries (and their attempts) queued before it; returns how many events.
    func purgeLifecycleEvents(before: Date) async throws(StoreError) -> Int

    // MARK: Webhook deliveries

    /// Queues for the endpoint `endpoint` one delivery of each event of `types` after the endpoint's cursor, examining
    /// at most `limit` events, and moves the cursor past the events examined. An endpoint seen for the first time
    /// starts at the last event: it hears what happens from now on. Safe from several instances at once (each event
    /// is queued once per endpoint).
    /// - Parameters:
    ///   - endpoint: The endpoint's configured name.
    ///   - types: The event types it subscribes to.
    ///   - channel: Only `session.ended` events of sessions started on this channel (``LifecycleEvent/sessionChannel``:
    ///     a relying party's back-channel logout); `nil`: every event of `types`.
    ///   - limit: The most events examined.
    ///   - now: The queueing time.
    /// - Returns: How many deliveries were queued, and whether events remain after the ones examined.
    func queueWebhookDeliveries(
        endpoint: String,
        types: Set<LifecycleEventType>,
        channel: SignInChannel?,
        limit: Int,
        now: Date
    ) async throws(StoreError) -> (queued: Int, more: Bool)

    /// Claims up to `limit` of the endpoint's deliveries that are due: pending, due at or before `now`, not claimed by
    /// an instance whose claim still lasts, and the earliest pending delivery of their account. No other call claims
    /// them again before `until` (on PostgreSQL, concurrent claims skip each other's rows).
    /// - Parameters:
    ///   - endpoint: The endpoint's configured name.
    ///   - limit: The most deliveries claimed.
    ///   - now: The claiming time.
    ///   - until: When the claim lapses if no attempt is recorded (an instance that died mid-attempt).
    /// - Returns: The claimed deliveries in event order.
    func claimWebhookDeliveries(
        endpoint: String,
        limit: Int,
        now: Date,
        until: Date
    ) async throws(StoreError) -> [WebhookDelivery]

    /// Records an attempt of a delivery and what follows it, ends its claim, and keeps the endpoint's failing time
    /// (set by a failure when unset, cleared by a success).
    /// - Parameters:
    ///   - id: The delivery.
    ///   - attempt: How the attempt went.
    ///   - next: Delivered, retried at a time, or given up.
    /// - Returns: Whether the delivery exists.
    @discardableResult
    func recordWebhookAttempt(
        _ id: UUID,
        _ attempt: WebhookAttempt,
        next: WebhookAttemptNext
    ) async throws(StoreError) -> Bool

    /// The endpoint's deliveries, latest event first, with the given state (`nil`: any), of events before the
    /// sequence `before` (`nil`: the latest), at most `limit`.
    func webhookDeliveries(
        endpoint: String,
        state: WebhookDeliveryState?,
        before: Int64?,
        limit: Int
    ) async throws(StoreError) -> [WebhookDelivery]

    /// One delivery and its attempts, oldest first; `nil` for no such delivery.
    func webhookDelivery(
        _ id: UUID
    ) async throws(StoreError) -> (delivery: WebhookDelivery, attempts: [WebhookAttempt])?

    /// Makes a delivery pending again, due at `now` (an operator's redelivery); returns whether it exists.
    @discardableResult
    func redeliverWebhook(_ id: UUID, now: Date) async throws(StoreError) -> Bool

    /// The state of every endpoint the store has queued for, by name.
    func webhookEndpoints() async throws(StoreError) -> [WebhookEndpointState]

    /// Disables or enables an endpoint the store knows; returns whether this call changed it (`false` for an unknown
    /// endpoint, or one already in that state), so that of several instances disabling it at once one records it.
    /// Enabling clears its failing time.
    @discardableResult
    func setWebhookEndpoint(_ name: String, disabled: Bool, now: Date) async throws(StoreError) -> Bool
}

extension AccountStore {
    /// Rotates with no grace: presenting a used token is always reuse.
    public func rotateRefreshToken(
        presentedHash: [UInt8],
        next: RefreshTokenSuccessor,
        now: Date
    ) async throws(StoreError) -> RotationOutcome {
        try await rotateRefreshToken(presentedHash: presentedHash, next: next, now: now, reuseGrace: 0)
    }

    /// Starts a session with no metadata.
    public func createSession(firstToken: RefreshTokenRecord, now: Date) async throws(StoreError) {
        try await createSession(firstToken: firstToken, metadata: SessionMetadata(), now: now)
    }

    /// Finds or creates the account, without starting a session.
    public func signIn(_ facts: AppleSignInFacts, now: Date) async throws(StoreError) -> SignInOutcome {
        try await signIn(facts, startingSession: nil, now: now)
    }
}
