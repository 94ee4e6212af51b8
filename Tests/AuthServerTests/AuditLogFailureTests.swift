import AccountStore
import AppleSignIn
import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SiwaTesting
import Testing

/// An audit log that cannot be written to fails nothing it records.
@Suite("Server: audit log failures")
struct AuditLogFailureTests {
    @Test func aFailingAuditWriteDoesNotFailALogout() async throws {
        let store = AuditFailingStore(base: InMemoryAccountStore())
        try await ServerHarness.run(store: store, metrics: true) { harness in
            let signIn = try await harness.signIn("audit-down@example.com")
            let access = try #require(signIn.json.string("accessToken"))
            let logout = try await harness.call(.post, "/auth/logout", bearer: access)
            #expect(logout.status == .noContent)
            let me = try await harness.call(.get, "/api/me", bearer: access)
            #expect(me.json.string("error") == "session_revoked", "the session ended all the same")
            let refresh = try await harness.call(
                .post,
                "/auth/refresh",
                json: ["refreshToken": try #require(signIn.json.string("refreshToken"))]
            )
            #expect(refresh.status == .unauthorized)
            let exposition = try await harness.metrics().body
            #expect(exposition.contains("siwa_audit_write_failures_total 1"), "the failed write is counted")
            #expect(
                try await store.auditEvents(AuditEventFilter(types: [.sessionEnded]), limit: 10, after: nil).items
                    .isEmpty
            )
        }
    }
}

extension AuditLogFailureTests {
    /// The server's one audit log counts every failed write, an account deletion's included: the deletion service used
    /// a log of its own that counted none.
    @Test func aFailingAuditWriteOfADeletionIsCounted() async throws {
        let store = AuditFailingStore(base: InMemoryAccountStore())
        try await ServerHarness.run(store: store, metrics: true) { harness in
            let signIn = try await harness.signIn("audit-down-deleted@example.com")
            let access = try #require(signIn.json.string("accessToken"))
            let deleted = try await harness.call(.delete, "/api/me", bearer: access)
            #expect(deleted.status.code < 300, "\(deleted.status)")
            #expect(try await store.users(email: "audit-down-deleted@example.com").isEmpty, "deleted all the same")
            let exposition = try await harness.metrics().body
            let line = exposition.split(separator: "\n").first { $0.hasPrefix("siwa_audit_write_failures_total ") }
            let count = line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
            // The deletion, the session it ended, and the Apple revocation's outcome.
            #expect(count >= 2, "\(line.map(String.init) ?? "no failures counted")")
        }
    }
}

/// A store whose ``appendAuditEvent(_:)`` always fails (the rest is `base`'s).
private struct AuditFailingStore: AccountStore {
    let base: any AccountStore

    func signIn(
        _ facts: AppleSignInFacts,
        startingSession session: NewSession?,
        now: Date
    ) async throws(StoreError) -> SignInOutcome {
        try await base.signIn(facts, startingSession: session, now: now)
    }

    func user(id: UserID) async throws(StoreError) -> UserRecord? {
        try await base.user(id: id)
    }

    func user(appleUserID: AppleUserID) async throws(StoreError) -> UserRecord? {
        try await base.user(appleUserID: appleUserID)
    }

    func users(email: String) async throws(StoreError) -> [UserRecord] {
        try await base.users(email: email)
    }

    func users(limit: Int, after: UserID?) async throws(StoreError) -> [UserRecord] {
        try await base.users(limit: limit, after: after)
    }

    func deleteUser(
        id: UserID,
        mode: AccountDeletionMode,
        appleRevocationDueAt: Date?,
        by actor: AuditActor,
        now: Date
    ) async throws(StoreError) -> DeletedAccount? {
        try await base.deleteUser(id: id, mode: mode, appleRevocationDueAt: appleRevocationDueAt, by: actor, now: now)
    }

    func deletedAccounts(since: Date) async throws(StoreError) -> [AccountDeletion] {
        try await base.deletedAccounts(since: since)
    }

    func usersChanged(since: Date) async throws(StoreError) -> [UserID] {
        try await base.usersChanged(since: since)
    }

    @discardableResult
    func endAppleConsent(userID: UserID, by actor: AuditActor, now: Date) async throws(StoreError) -> [SessionID] {
        try await base.endAppleConsent(userID: userID, by: actor, now: now)
    }

    func disableUser(id: UserID, by actor: AuditActor, now: Date) async throws(StoreError) -> DisabledAccount? {
        try await base.disableUser(id: id, by: actor, now: now)
    }

    @discardableResult
    func enableUser(id: UserID, by actor: AuditActor, now: Date) async throws(StoreError) -> UserRecord? {
        try await base.enableUser(id: id, by: actor, now: now)
    }

    func saveAppleToken(_ token: AppleTokenRecord) async throws(StoreError) {
        try await base.saveAppleToken(token)
    }

    func appleToken(userID: UserID) async throws(StoreError) -> AppleTokenRecord? {
        try await base.appleToken(userID: userID)
    }

    func appleTokensDue(validatedBefore: Date, limit: Int) async throws(StoreError) -> [AppleTokenRecord] {
        try await base.appleTokensDue(validatedBefore: validatedBefore, limit: limit)
    }

    func claimAppleTokenValidation(
        userID: UserID,
        validatedBefore: Date,
        now: Date
    ) async throws(StoreError) -> AppleTokenRecord? {
        try await base.claimAppleTokenValidation(userID: userID, validatedBefore: validatedBefore, now: now)
    }

    func setAppleTokenValidated(userID: UserID, at: Date) async throws(StoreError) {
        try await base.setAppleTokenValidated(userID: userID, at: at)
    }

    func dueAppleRevocations(now: Date, limit: Int) async throws(StoreError) -> [PendingAppleRevocation] {
        try await base.dueAppleRevocations(now: now, limit: limit)
    }

    func pendingAppleRevocationCount() async throws(StoreError) -> Int {
        try await base.pendingAppleRevocationCount()
    }

    func finishAppleRevocation(id: UUID) async throws(StoreError) {
        try await base.finishAppleRevocation(id: id)
    }

    func postponeAppleRevocation(id: UUID, until: Date, error: String) async throws(StoreError) {
        try await base.postponeAppleRevocation(id: id, until: until, error: error)
    }

    func applyAppleNotification(
        _ event: AppleNotificationRecord,
        action: AppleNotificationAction,
        now: Date
    ) async throws(StoreError) -> AppleNotificationOutcome {
        try await base.applyAppleNotification(event, action: action, now: now)
    }

    func appleNotifications(limit: Int) async throws(StoreError) -> [AppleNotificationRecord] {
        try await base.appleNotifications(limit: limit)
    }

    func saveWebFlowState(_ state: WebFlowState) async throws(StoreError) {
        try await base.saveWebFlowState(state)
    }

    func consumeWebFlowState(stateHash: [UInt8], now: Date) async throws(StoreError) -> WebFlowStateOutcome {
        try await base.consumeWebFlowState(stateHash: stateHash, now: now)
    }

    func saveAuthorizationCode(_ code: AuthorizationCodeRecord) async throws(StoreError) {
        try await base.saveAuthorizationCode(code)
    }

    func authorizationCode(codeHash: [UInt8]) async throws(StoreError) -> AuthorizationCodeRecord? {
        try await base.authorizationCode(codeHash: codeHash)
    }

    func clientConsent(
        userID: UserID,
        clientID: String,
        redirectURI: String
    ) async throws(StoreError) -> ClientConsentRecord? {
        try await base.clientConsent(userID: userID, clientID: clientID, redirectURI: redirectURI)
    }

    func saveClientConsent(_ consent: ClientConsentRecord) async throws(StoreError) {
        try await base.saveClientConsent(consent)
    }

    func redeemAuthorizationCode(
        codeHash: [UInt8],
        startingSession session: NewSession,
        now: Date
    ) async throws(StoreError) -> AuthorizationCodeOutcome {
        try await base.redeemAuthorizationCode(codeHash: codeHash, startingSession: session, now: now)
    }

    func createSession(firstToken: RefreshTokenRecord, metadata: SessionMetadata, now: Date) async throws(StoreError) {
        try await base.createSession(firstToken: firstToken, metadata: metadata, now: now)
    }

    func rotateRefreshToken(
        presentedHash: [UInt8],
        next: RefreshTokenSuccessor,
        now: Date,
        reuseGrace: TimeInterval
    ) async throws(StoreError) -> RotationOutcome {
        try await base.rotateRefreshToken(presentedHash: presentedHash, next: next, now: now, reuseGrace: reuseGrace)
    }

    func checkRefreshToken(presentedHash: [UInt8], now: Date) async throws(StoreError) -> RefreshTokenCheck {
        try await base.checkRefreshToken(presentedHash: presentedHash, now: now)
    }

    func session(refreshTokenHash: [UInt8]) async throws(StoreError) -> (sessionID: SessionID, userID: UserID)? {
        try await base.session(refreshTokenHash: refreshTokenHash)
    }

    @discardableResult
    func revokeSession(
        _ sessionID: SessionID,
        by actor: AuditActor,
        reason: String,
        now: Date
    ) async throws(StoreError) -> Bool {
        try await base.revokeSession(sessionID, by: actor, reason: reason, now: now)
    }

    @discardableResult
    func revokeSessions(
        userID: UserID,
        by actor: AuditActor,
        reason: String,
        now: Date
    ) async throws(StoreError) -> [SessionID] {
        try await base.revokeSessions(userID: userID, by: actor, reason: reason, now: now)
    }

    func revokedSessions(since: Date) async throws(StoreError) -> [SessionRevocation] {
        try await base.revokedSessions(since: since)
    }

    func saveServerNonce(hash: [UInt8], expiresAt: Date) async throws(StoreError) {
        try await base.saveServerNonce(hash: hash, expiresAt: expiresAt)
    }

    func consumeServerNonce(hash: [UInt8], now: Date) async throws(StoreError) -> Bool {
        try await base.consumeServerNonce(hash: hash, now: now)
    }

    func signingKeys() async throws(StoreError) -> [SigningKeyRecord] {
        try await base.signingKeys()
    }

    func addSigningKey(_ key: SigningKeyRecord) async throws(StoreError) {
        try await base.addSigningKey(key)
    }

    func sealedItems(after: SealedItem.Position?, limit: Int) async throws(StoreError) -> [SealedItem] {
        try await base.sealedItems(after: after, limit: limit)
    }

    func replaceSealed(_ item: SealedItem, with sealed: [UInt8]) async throws(StoreError) -> Bool {
        try await base.replaceSealed(item, with: sealed)
    }

    func purgeExpired(now: Date, retention: TimeInterval) async throws(StoreError) -> PurgeResult {
        try await base.purgeExpired(now: now, retention: retention)
    }

    func searchUsers(
        _ query: String,
        limit: Int,
        after cursor: PageCursor?
    ) async throws(StoreError) -> Page<UserRecord> {
        try await base.searchUsers(query, limit: limit, after: cursor)
    }

    func accountTotals(createdSince: [Date]) async throws(StoreError) -> AccountTotals {
        try await base.accountTotals(createdSince: createdSince)
    }

    func sessions(userID: UserID, now: Date, limit: Int) async throws(StoreError) -> [SessionRecord] {
        try await base.sessions(userID: userID, now: now, limit: limit)
    }

    func appendAuditEvent(_ event: AuditEvent) async throws(StoreError) {
        throw StoreError(.unavailable, "the audit log is down (test)")
    }

    func auditEvents(
        _ filter: AuditEventFilter,
        limit: Int,
        after cursor: PageCursor?
    ) async throws(StoreError) -> Page<AuditEvent> {
        try await base.auditEvents(filter, limit: limit, after: cursor)
    }

    func auditEventCounts(
        from: Date,
        until: Date,
        types: Set<AuditEventType>,
        now: Date
    ) async throws(StoreError) -> [AuditEventCount] {
        try await base.auditEventCounts(from: from, until: until, types: types, now: now)
    }

    @discardableResult
    func lifecycleEvents(after: Int64?, limit: Int) async throws(StoreError) -> [LifecycleEvent] {
        try await base.lifecycleEvents(after: after, limit: limit)
    }

    func purgeLifecycleEvents(before: Date) async throws(StoreError) -> Int {
        try await base.purgeLifecycleEvents(before: before)
    }

    func queueWebhookDeliveries(
        endpoint: String,
        types: Set<LifecycleEventType>,
        channel: SignInChannel?,
        limit: Int,
        now: Date
    ) async throws(StoreError) -> (queued: Int, more: Bool) {
        try await base.queueWebhookDeliveries(
            endpoint: endpoint,
            types: types,
            channel: channel,
            limit: limit,
            now: now
        )
    }

    func claimWebhookDeliveries(
        endpoint: String,
        limit: Int,
        now: Date,
        until: Date
    ) async throws(StoreError) -> [WebhookDelivery] {
        try await base.claimWebhookDeliveries(endpoint: endpoint, limit: limit, now: now, until: until)
    }

    func recordWebhookAttempt(
        _ id: UUID,
        _ attempt: WebhookAttempt,
        next: WebhookAttemptNext
    ) async throws(StoreError) -> Bool {
        try await base.recordWebhookAttempt(id, attempt, next: next)
    }

    func webhookDeliveries(
        endpoint: String,
        state: WebhookDeliveryState?,
        before: Int64?,
        limit: Int
    ) async throws(StoreError) -> [WebhookDelivery] {
        try await base.webhookDeliveries(endpoint: endpoint, state: state, before: before, limit: limit)
    }

    func webhookDelivery(
        _ id: UUID
    ) async throws(StoreError) -> (delivery: WebhookDelivery, attempts: [WebhookAttempt])? {
        try await base.webhookDelivery(id)
    }

    func redeliverWebhook(_ id: UUID, now: Date) async throws(StoreError) -> Bool {
        try await base.redeliverWebhook(id, now: now)
    }

    func webhookEndpoints() async throws(StoreError) -> [WebhookEndpointState] {
        try await base.webhookEndpoints()
    }

    func setWebhookEndpoint(_ name: String, disabled: Bool, now: Date) async throws(StoreError) -> Bool {
        try await base.setWebhookEndpoint(name, disabled: disabled, now: now)
    }

    func purgeAuditEvents(before: Date) async throws(StoreError) -> Int {
        try await base.purgeAuditEvents(before: before)
    }

    @discardableResult
    func grantAdmin(_ subject: AdminSubject, by actor: AuditActor, now: Date) async throws(StoreError) -> Bool {
        try await base.grantAdmin(subject, by: actor, now: now)
    }

    @discardableResult
    func revokeAdmin(_ subject: AdminSubject, by actor: AuditActor, now: Date) async throws(StoreError) -> Bool {
        try await base.revokeAdmin(subject, by: actor, now: now)
    }

    func adminGrants() async throws(StoreError) -> [AdminGrant] {
        try await base.adminGrants()
    }

    func isAdmin(_ subject: AdminSubject) async throws(StoreError) -> Bool {
        try await base.isAdmin(subject)
    }

    func createAdminToken(_ token: AdminToken, tokenHash: [UInt8]) async throws(StoreError) {
        try await base.createAdminToken(token, tokenHash: tokenHash)
    }

    func adminToken(tokenHash: [UInt8]) async throws(StoreError) -> AdminToken? {
        try await base.adminToken(tokenHash: tokenHash)
    }

    func adminTokens() async throws(StoreError) -> [AdminToken] {
        try await base.adminTokens()
    }

    @discardableResult
    func revokeAdminToken(named name: String, by actor: AuditActor, now: Date) async throws(StoreError) -> AdminToken? {
        try await base.revokeAdminToken(named: name, by: actor, now: now)
    }

    func noteAdminTokenUse(_ id: UUID, at time: Date) async throws(StoreError) {
        try await base.noteAdminTokenUse(id, at: time)
    }

    func ping() async throws(StoreError) {
        try await base.ping()
    }

    func setTransferSub(
        userID: UserID,
        transferSub: AppleUserID,
        targetTeam: String,
        now: Date
    ) async throws(StoreError) {
        try await base.setTransferSub(userID: userID, transferSub: transferSub, targetTeam: targetTeam, now: now)
    }

    func usersWithoutTransfer(after: UserID?, limit: Int) async throws(StoreError) -> [UserRecord] {
        try await base.usersWithoutTransfer(after: after, limit: limit)
    }

    func transfer(userID: UserID) async throws(StoreError) -> AppleTransferRecord? {
        try await base.transfer(userID: userID)
    }

    func user(transferSub: AppleUserID) async throws(StoreError) -> UserRecord? {
        try await base.user(transferSub: transferSub)
    }

    func pendingTransfers(after: UserID?, limit: Int) async throws(StoreError) -> [AppleTransferRecord] {
        try await base.pendingTransfers(after: after, limit: limit)
    }

    @discardableResult
    func reassignAppleUser(
        userID: UserID,
        newAppleUserID: AppleUserID,
        email: String?,
        isPrivateEmail: Bool?,
        now: Date
    ) async throws(StoreError) -> UserRecord {
        try await base.reassignAppleUser(
            userID: userID,
            newAppleUserID: newAppleUserID,
            email: email,
            isPrivateEmail: isPrivateEmail,
            now: now
        )
    }

}
