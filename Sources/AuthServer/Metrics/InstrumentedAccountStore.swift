import AccountStore
import AppleSignIn
import Tracing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The store as the server uses it: each call timed in `siwa_store_call_duration_seconds{call}` and, with tracing on,
/// a client span of its own named `store <call>` in the trace of the request that made it, so that a slow statement
/// shows in the metrics and in the trace of the request that waited for it. One decorator for every store, rather than code in each SQL store.
///
/// A span carries the call's name and, when the call fails, the ``StoreError`` code: never the arguments (token
/// hashes, e-mail addresses) nor the error's reason, which may quote the database. `buildApplication` wraps the store
/// only when metrics or tracing are on, so a server with neither pays nothing.
struct InstrumentedAccountStore: AccountStore {
    let base: any AccountStore
    let metrics: ServerMetrics?
    let tracer: (any Tracer)?

    /// Runs one store call, timing it and, with a tracer and inside a trace, in a span. The background services'
    /// calls, outside any request, get none: a trace of one store call every few seconds tells nothing.
    private func measure<T>(
        _ call: String,
        _ body: () async throws(StoreError) -> T
    ) async throws(StoreError) -> T {
        let span = tracer.flatMap { tracer in
            InstrumentationContext.current.map { tracer.startSpan("store \(call)", context: $0, ofKind: .client) }
        }
        span?.attributes["db.operation.name"] = call
        let start = ContinuousClock.now
        do {
            let value = try await body()
            metrics?.storeCall(call, duration: .now - start)
            span?.end()
            return value
        } catch {
            metrics?.storeCall(call, duration: .now - start)
            span?.attributes["error.type"] = error.code.description
            span?.setStatus(SpanStatus(code: .error))
            span?.end()
            throw error
        }
    }

    // MARK: Accounts

    func signIn(
        _ facts: AppleSignInFacts,
        startingSession session: NewSession?,
        now: Date
    ) async throws(StoreError) -> SignInOutcome {
        try await measure("signIn") { () async throws(StoreError) in
            try await base.signIn(facts, startingSession: session, now: now)
        }
    }

    func user(id: UserID) async throws(StoreError) -> UserRecord? {
        try await measure("user") { () async throws(StoreError) in try await base.user(id: id) }
    }

    func user(appleUserID: AppleUserID) async throws(StoreError) -> UserRecord? {
        try await measure("userByAppleUserID") { () async throws(StoreError) in
            try await base.user(appleUserID: appleUserID)
        }
    }

    func users(email: String) async throws(StoreError) -> [UserRecord] {
        try await measure("usersByEmail") { () async throws(StoreError) in try await base.users(email: email) }
    }

    func users(limit: Int, after: UserID?) async throws(StoreError) -> [UserRecord] {
        try await measure("users") { () async throws(StoreError) in try await base.users(limit: limit, after: after) }
    }

    func deleteUser(
        id: UserID,
        mode: AccountDeletionMode,
        appleRevocationDueAt: Date?,
        by actor: AuditActor,
        now: Date
    ) async throws(StoreError) -> DeletedAccount? {
        try await measure("deleteUser") { () async throws(StoreError) in
            try await base.deleteUser(
                id: id,
                mode: mode,
                appleRevocationDueAt: appleRevocationDueAt,
                by: actor,
                now: now
            )
        }
    }

    func deletedAccounts(since: Date) async throws(StoreError) -> [AccountDeletion] {
        try await measure("deletedAccounts") { () async throws(StoreError) in
            try await base.deletedAccounts(since: since)
        }
    }

    func usersChanged(since: Date) async throws(StoreError) -> [UserID] {
        try await measure("usersChanged") { () async throws(StoreError) in try await base.usersChanged(since: since) }
    }

    func endAppleConsent(userID: UserID, by actor: AuditActor, now: Date) async throws(StoreError) -> [SessionID] {
        try await measure("endAppleConsent") { () async throws(StoreError) in
            try await base.endAppleConsent(userID: userID, by: actor, now: now)
        }
    }

    func disableUser(id: UserID, by actor: AuditActor, now: Date) async throws(StoreError) -> DisabledAccount? {
        try await measure("disableUser") { () async throws(StoreError) in
            try await base.disableUser(id: id, by: actor, now: now)
        }
    }

    func enableUser(id: UserID, by actor: AuditActor, now: Date) async throws(StoreError) -> UserRecord? {
        try await measure("enableUser") { () async throws(StoreError) in
            try await base.enableUser(id: id, by: actor, now: now)
        }
    }

    // MARK: Apple refresh tokens

    func saveAppleToken(_ token: AppleTokenRecord) async throws(StoreError) {
        try await measure("saveAppleToken") { () async throws(StoreError) in try await base.saveAppleToken(token) }
    }

    func appleToken(userID: UserID) async throws(StoreError) -> AppleTokenRecord? {
        try await measure("appleToken") { () async throws(StoreError) in try await base.appleToken(userID: userID) }
    }

    func appleTokensDue(validatedBefore: Date, limit: Int) async throws(StoreError) -> [AppleTokenRecord] {
        try await measure("appleTokensDue") { () async throws(StoreError) in
            try await base.appleTokensDue(validatedBefore: validatedBefore, limit: limit)
        }
    }

    func claimAppleTokenValidation(
        userID: UserID,
        validatedBefore: Date,
        now: Date
    ) async throws(StoreError) -> AppleTokenRecord? {
        try await measure("claimAppleTokenValidation") { () async throws(StoreError) in
            try await base.claimAppleTokenValidation(userID: userID, validatedBefore: validatedBefore, now: now)
        }
    }

    func setAppleTokenValidated(userID: UserID, at: Date) async throws(StoreError) {
        try await measure("setAppleTokenValidated") { () async throws(StoreError) in
            try await base.setAppleTokenValidated(userID: userID, at: at)
        }
    }

    // MARK: Apple revocation queue

    func dueAppleRevocations(now: Date, limit: Int) async throws(StoreError) -> [PendingAppleRevocation] {
        try await measure("dueAppleRevocations") { () async throws(StoreError) in
            try await base.dueAppleRevocations(now: now, limit: limit)
        }
    }

    func pendingAppleRevocationCount() async throws(StoreError) -> Int {
        try await measure("pendingAppleRevocationCount") { () async throws(StoreError) in
            try await base.pendingAppleRevocationCount()
        }
    }

    func finishAppleRevocation(id: UUID) async throws(StoreError) {
        try await measure("finishAppleRevocation") { () async throws(StoreError) in
            try await base.finishAppleRevocation(id: id)
        }
    }

    func postponeAppleRevocation(id: UUID, until: Date, error: String) async throws(StoreError) {
        try await measure("postponeAppleRevocation") { () async throws(StoreError) in
            try await base.postponeAppleRevocation(id: id, until: until, error: error)
        }
    }

    // MARK: Apple notifications

    func applyAppleNotification(
        _ event: AppleNotificationRecord,
        action: AppleNotificationAction,
        now: Date
    ) async throws(StoreError) -> AppleNotificationOutcome {
        try await measure("applyAppleNotification") { () async throws(StoreError) in
            try await base.applyAppleNotification(event, action: action, now: now)
        }
    }

    func appleNotifications(limit: Int) async throws(StoreError) -> [AppleNotificationRecord] {
        try await measure("appleNotifications") { () async throws(StoreError) in
            try await base.appleNotifications(limit: limit)
        }
    }

    // MARK: Web sign-in states

    func saveWebFlowState(_ state: WebFlowState) async throws(StoreError) {
        try await measure("saveWebFlowState") { () async throws(StoreError) in try await base.saveWebFlowState(state) }
    }

    func consumeWebFlowState(stateHash: [UInt8], now: Date) async throws(StoreError) -> WebFlowStateOutcome {
        try await measure("consumeWebFlowState") { () async throws(StoreError) in
            try await base.consumeWebFlowState(stateHash: stateHash, now: now)
        }
    }

    // MARK: OpenID Connect authorization codes

    func saveAuthorizationCode(_ code: AuthorizationCodeRecord) async throws(StoreError) {
        try await measure("saveAuthorizationCode") { () async throws(StoreError) in
            try await base.saveAuthorizationCode(code)
        }
    }

    func authorizationCode(codeHash: [UInt8]) async throws(StoreError) -> AuthorizationCodeRecord? {
        try await measure("authorizationCode") { () async throws(StoreError) in
            try await base.authorizationCode(codeHash: codeHash)
        }
    }

    func redeemAuthorizationCode(
        codeHash: [UInt8],
        startingSession session: NewSession,
        now: Date
    ) async throws(StoreError) -> AuthorizationCodeOutcome {
        try await measure("redeemAuthorizationCode") { () async throws(StoreError) in
            try await base.redeemAuthorizationCode(codeHash: codeHash, startingSession: session, now: now)
        }
    }

    // MARK: Announcements and shared limits: streams and counters of their own, passed through untimed

    func announcements() -> AsyncStream<StoreAnnouncement>? { base.announcements() }

    func sharedCounters() -> (any SharedCounters)? { base.sharedCounters() }

    // MARK: OpenID Connect consents

    func clientConsent(
        userID: UserID,
        clientID: String,
        redirectURI: String
    ) async throws(StoreError) -> ClientConsentRecord? {
        try await measure("clientConsent") { () async throws(StoreError) in
            try await base.clientConsent(userID: userID, clientID: clientID, redirectURI: redirectURI)
        }
    }

    func saveClientConsent(_ consent: ClientConsentRecord) async throws(StoreError) {
        try await measure("saveClientConsent") { () async throws(StoreError) in
            try await base.saveClientConsent(consent)
        }
    }

    // MARK: Sessions

    func createSession(firstToken: RefreshTokenRecord, metadata: SessionMetadata, now: Date) async throws(StoreError) {
        try await measure("createSession") { () async throws(StoreError) in
            try await base.createSession(firstToken: firstToken, metadata: metadata, now: now)
        }
    }

    func rotateRefreshToken(
        presentedHash: [UInt8],
        next: RefreshTokenSuccessor,
        now: Date,
        reuseGrace: TimeInterval
    ) async throws(StoreError) -> RotationOutcome {
        try await measure("rotateRefreshToken") { () async throws(StoreError) in
            try await base.rotateRefreshToken(
                presentedHash: presentedHash,
                next: next,
                now: now,
                reuseGrace: reuseGrace
            )
        }
    }

    func checkRefreshToken(presentedHash: [UInt8], now: Date) async throws(StoreError) -> RefreshTokenCheck {
        try await measure("checkRefreshToken") { () async throws(StoreError) in
            try await base.checkRefreshToken(presentedHash: presentedHash, now: now)
        }
    }

    func session(refreshTokenHash: [UInt8]) async throws(StoreError) -> (sessionID: SessionID, userID: UserID)? {
        try await measure("session") { () async throws(StoreError) in
            try await base.session(refreshTokenHash: refreshTokenHash)
        }
    }

    func revokeSession(
        _ sessionID: SessionID,
        by actor: AuditActor,
        reason: String,
        now: Date
    ) async throws(StoreError) -> Bool {
        try await measure("revokeSession") { () async throws(StoreError) in
            try await base.revokeSession(sessionID, by: actor, reason: reason, now: now)
        }
    }

    func revokeSessions(
        userID: UserID,
        by actor: AuditActor,
        reason: String,
        now: Date
    ) async throws(StoreError) -> [SessionID] {
        try await measure("revokeSessions") { () async throws(StoreError) in
            try await base.revokeSessions(userID: userID, by: actor, reason: reason, now: now)
        }
    }

    func revokedSessions(since: Date) async throws(StoreError) -> [SessionRevocation] {
        try await measure("revokedSessions") { () async throws(StoreError) in
            try await base.revokedSessions(since: since)
        }
    }

    // MARK: Server nonces

    func saveServerNonce(hash: [UInt8], expiresAt: Date) async throws(StoreError) {
        try await measure("saveServerNonce") { () async throws(StoreError) in
            try await base.saveServerNonce(hash: hash, expiresAt: expiresAt)
        }
    }

    func consumeServerNonce(hash: [UInt8], now: Date) async throws(StoreError) -> Bool {
        try await measure("consumeServerNonce") { () async throws(StoreError) in
            try await base.consumeServerNonce(hash: hash, now: now)
        }
    }

    // MARK: Access-token signing keys

    func signingKeys() async throws(StoreError) -> [SigningKeyRecord] {
        try await measure("signingKeys") { () async throws(StoreError) in try await base.signingKeys() }
    }

    func addSigningKey(_ key: SigningKeyRecord) async throws(StoreError) {
        try await measure("addSigningKey") { () async throws(StoreError) in try await base.addSigningKey(key) }
    }

    // MARK: Sealed data

    func sealedItems(after: SealedItem.Position?, limit: Int) async throws(StoreError) -> [SealedItem] {
        try await measure("sealedItems") { () async throws(StoreError) in
            try await base.sealedItems(after: after, limit: limit)
        }
    }

    func replaceSealed(_ item: SealedItem, with sealed: [UInt8]) async throws(StoreError) -> Bool {
        try await measure("replaceSealed") { () async throws(StoreError) in
            try await base.replaceSealed(item, with: sealed)
        }
    }

    // MARK: Housekeeping

    func purgeExpired(now: Date, retention: TimeInterval) async throws(StoreError) -> PurgeResult {
        try await measure("purgeExpired") { () async throws(StoreError) in
            try await base.purgeExpired(now: now, retention: retention)
        }
    }

    // MARK: Operator console

    func searchUsers(
        _ query: String,
        limit: Int,
        after cursor: PageCursor?
    ) async throws(StoreError) -> Page<UserRecord> {
        try await measure("searchUsers") { () async throws(StoreError) in
            try await base.searchUsers(query, limit: limit, after: cursor)
        }
    }

    func accountTotals(createdSince: [Date]) async throws(StoreError) -> AccountTotals {
        try await measure("accountTotals") { () async throws(StoreError) in
            try await base.accountTotals(createdSince: createdSince)
        }
    }

    func sessions(userID: UserID, now: Date, limit: Int) async throws(StoreError) -> [SessionRecord] {
        try await measure("sessions") { () async throws(StoreError) in
            try await base.sessions(userID: userID, now: now, limit: limit)
        }
    }

    func appendAuditEvent(_ event: AuditEvent) async throws(StoreError) {
        try await measure("appendAuditEvent") { () async throws(StoreError) in try await base.appendAuditEvent(event) }
    }

    func auditEvents(
        _ filter: AuditEventFilter,
        limit: Int,
        after cursor: PageCursor?
    ) async throws(StoreError) -> Page<AuditEvent> {
        try await measure("auditEvents") { () async throws(StoreError) in
            try await base.auditEvents(filter, limit: limit, after: cursor)
        }
    }

    func auditEventCounts(
        from: Date,
        until: Date,
        types: Set<AuditEventType>,
        now: Date
    ) async throws(StoreError) -> [AuditEventCount] {
        try await measure("auditEventCounts") { () async throws(StoreError) in
            try await base.auditEventCounts(from: from, until: until, types: types, now: now)
        }
    }

    func lifecycleEvents(after: Int64?, limit: Int) async throws(StoreError) -> [LifecycleEvent] {
        try await measure("lifecycleEvents") { () async throws(StoreError) in
            try await base.lifecycleEvents(after: after, limit: limit)
        }
    }

    func purgeLifecycleEvents(before: Date) async throws(StoreError) -> Int {
        try await measure("purgeLifecycleEvents") { () async throws(StoreError) in
            try await base.purgeLifecycleEvents(before: before)
        }
    }

    func queueWebhookDeliveries(
        endpoint: String,
        types: Set<LifecycleEventType>,
        channel: SignInChannel?,
        limit: Int,
        now: Date
    ) async throws(StoreError) -> (queued: Int, more: Bool) {
        try await measure("queueWebhookDeliveries") { () async throws(StoreError) in
            try await base.queueWebhookDeliveries(
                endpoint: endpoint,
                types: types,
                channel: channel,
                limit: limit,
                now: now
            )
        }
    }

    func claimWebhookDeliveries(
        endpoint: String,
        limit: Int,
        now: Date,
        until: Date
    ) async throws(StoreError) -> [WebhookDelivery] {
        try await measure("claimWebhookDeliveries") { () async throws(StoreError) in
            try await base.claimWebhookDeliveries(endpoint: endpoint, limit: limit, now: now, until: until)
        }
    }

    func recordWebhookAttempt(
        _ id: UUID,
        _ attempt: WebhookAttempt,
        next: WebhookAttemptNext
    ) async throws(StoreError) -> Bool {
        try await measure("recordWebhookAttempt") { () async throws(StoreError) in
            try await base.recordWebhookAttempt(id, attempt, next: next)
        }
    }

    func webhookDeliveries(
        endpoint: String,
        state: WebhookDeliveryState?,
        before: Int64?,
        limit: Int
    ) async throws(StoreError) -> [WebhookDelivery] {
        try await measure("webhookDeliveries") { () async throws(StoreError) in
            try await base.webhookDeliveries(endpoint: endpoint, state: state, before: before, limit: limit)
        }
    }

    func webhookDelivery(
        _ id: UUID
    ) async throws(StoreError) -> (delivery: WebhookDelivery, attempts: [WebhookAttempt])? {
        try await measure("webhookDelivery") { () async throws(StoreError) in
            try await base.webhookDelivery(id)
        }
    }

    func redeliverWebhook(_ id: UUID, now: Date) async throws(StoreError) -> Bool {
        try await measure("redeliverWebhook") { () async throws(StoreError) in
            try await base.redeliverWebhook(id, now: now)
        }
    }

    func webhookEndpoints() async throws(StoreError) -> [WebhookEndpointState] {
        try await measure("webhookEndpoints") { () async throws(StoreError) in
            try await base.webhookEndpoints()
        }
    }

    func setWebhookEndpoint(_ name: String, disabled: Bool, now: Date) async throws(StoreError) -> Bool {
        try await measure("setWebhookEndpoint") { () async throws(StoreError) in
            try await base.setWebhookEndpoint(name, disabled: disabled, now: now)
        }
    }

    func purgeAuditEvents(before: Date) async throws(StoreError) -> Int {
        try await measure("purgeAuditEvents") { () async throws(StoreError) in
            try await base.purgeAuditEvents(before: before)
        }
    }

    func grantAdmin(_ subject: AdminSubject, by actor: AuditActor, now: Date) async throws(StoreError) -> Bool {
        try await measure("grantAdmin") { () async throws(StoreError) in
            try await base.grantAdmin(subject, by: actor, now: now)
        }
    }

    func revokeAdmin(_ subject: AdminSubject, by actor: AuditActor, now: Date) async throws(StoreError) -> Bool {
        try await measure("revokeAdmin") { () async throws(StoreError) in
            try await base.revokeAdmin(subject, by: actor, now: now)
        }
    }

    func adminGrants() async throws(StoreError) -> [AdminGrant] {
        try await measure("adminGrants") { () async throws(StoreError) in try await base.adminGrants() }
    }

    func isAdmin(_ subject: AdminSubject) async throws(StoreError) -> Bool {
        try await measure("isAdmin") { () async throws(StoreError) in try await base.isAdmin(subject) }
    }

    // MARK: Service tokens

    func createAdminToken(_ token: AdminToken, tokenHash: [UInt8]) async throws(StoreError) {
        try await measure("createAdminToken") { () async throws(StoreError) in
            try await base.createAdminToken(token, tokenHash: tokenHash)
        }
    }

    func adminToken(tokenHash: [UInt8]) async throws(StoreError) -> AdminToken? {
        try await measure("adminToken") { () async throws(StoreError) in
            try await base.adminToken(tokenHash: tokenHash)
        }
    }

    func adminTokens() async throws(StoreError) -> [AdminToken] {
        try await measure("adminTokens") { () async throws(StoreError) in try await base.adminTokens() }
    }

    func revokeAdminToken(named name: String, by actor: AuditActor, now: Date) async throws(StoreError) -> AdminToken? {
        try await measure("revokeAdminToken") { () async throws(StoreError) in
            try await base.revokeAdminToken(named: name, by: actor, now: now)
        }
    }

    func noteAdminTokenUse(_ id: UUID, at time: Date) async throws(StoreError) {
        try await measure("noteAdminTokenUse") { () async throws(StoreError) in
            try await base.noteAdminTokenUse(id, at: time)
        }
    }

    // MARK: Health

    func ping() async throws(StoreError) {
        try await measure("ping") { () async throws(StoreError) in try await base.ping() }
    }

    // MARK: Team transfer

    func setTransferSub(
        userID: UserID,
        transferSub: AppleUserID,
        targetTeam: String,
        now: Date
    ) async throws(StoreError) {
        try await measure("setTransferSub") { () async throws(StoreError) in
            try await base.setTransferSub(userID: userID, transferSub: transferSub, targetTeam: targetTeam, now: now)
        }
    }

    func usersWithoutTransfer(after: UserID?, limit: Int) async throws(StoreError) -> [UserRecord] {
        try await measure("usersWithoutTransfer") { () async throws(StoreError) in
            try await base.usersWithoutTransfer(after: after, limit: limit)
        }
    }

    func transfer(userID: UserID) async throws(StoreError) -> AppleTransferRecord? {
        try await measure("transfer") { () async throws(StoreError) in try await base.transfer(userID: userID) }
    }

    func user(transferSub: AppleUserID) async throws(StoreError) -> UserRecord? {
        try await measure("userByTransferSub") { () async throws(StoreError) in
            try await base.user(transferSub: transferSub)
        }
    }

    func pendingTransfers(after: UserID?, limit: Int) async throws(StoreError) -> [AppleTransferRecord] {
        try await measure("pendingTransfers") { () async throws(StoreError) in
            try await base.pendingTransfers(after: after, limit: limit)
        }
    }

    func reassignAppleUser(
        userID: UserID,
        newAppleUserID: AppleUserID,
        email: String?,
        isPrivateEmail: Bool?,
        now: Date
    ) async throws(StoreError) -> UserRecord {
        try await measure("reassignAppleUser") { () async throws(StoreError) in
            try await base.reassignAppleUser(
                userID: userID,
                newAppleUserID: newAppleUserID,
                email: email,
                isPrivateEmail: isPrivateEmail,
                now: now
            )
        }
    }
}
