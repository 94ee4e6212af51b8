public import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// An ``AccountStore`` in memory: for tests and trying siwa out. Everything is lost when the process ends.
public actor InMemoryAccountStore: AccountStore {
    struct StoredToken {
        var record: RefreshTokenRecord
        var usedAt: Date?
        /// When ``checkRefreshToken(presentedHash:now:)`` last found it current (see
        /// ``SessionRecord/lastUseResolution``).
        var lastCheckedAt: Date?
    }

    struct StoredSession {
        var userID: UserID
        var createdAt: Date
        var revokedAt: Date?
        var metadata = SessionMetadata()
    }

    // Internal rather than private: `InMemoryAccountStore+Console.swift` reads them.
    var users: [UserID: UserRecord] = [:]
    private var userByApple: [AppleUserID: UserID] = [:]
    private var creationOrder: [UserID] = []
    private var appleTokens: [UserID: AppleTokenRecord] = [:]
    var sessions: [SessionID: StoredSession] = [:]
    var tokens: [[UInt8]: StoredToken] = [:]
    private var nonces: [[UInt8]: Date] = [:]
    private var keys: [SigningKeyRecord] = []
    private var deletions: [AccountDeletion] = []
    private var revocationQueue: [UUID: PendingAppleRevocation] = [:]
    private var notifications: [AppleNotificationRecord] = []
    private var webStates: [[UInt8]: (state: WebFlowState, usedAt: Date?)] = [:]
    private var authorizationCodes: [[UInt8]: AuthorizationCodeRecord] = [:]
    /// By user, then by client id and redirect URI.
    private var clientConsents: [UserID: [[String]: ClientConsentRecord]] = [:]
    private var transfers: [UserID: AppleTransferRecord] = [:]
    /// The audit log, in append order (``InMemoryAccountStore+Console.swift``).
    var auditLog: [AuditEvent] = []
    var adminGrantsBySubject: [AdminSubject: AdminGrant] = [:]
    /// Service tokens with the hash of their secret, oldest first.
    var adminTokensWithHashes: [(token: AdminToken, hash: [UInt8])] = []
    /// The counts of settled days, as ``auditEventCounts(from:until:types:now:)`` first counted them.
    var countedDays: [Int64: [AuditEventCount]] = [:]
    /// The lifecycle events, in sequence order.
    var lifecycleLog: [LifecycleEvent] = []
    var lastEventSequence: Int64 = 0
    /// Webhook deliveries in the order they were queued (``InMemoryAccountStore+Webhooks.swift``).
    var webhookQueue: [StoredWebhookDelivery] = []
    var webhookEndpointsByName: [String: WebhookEndpointState] = [:]

    public init() {}

    /// Set by ``setUnavailable(_:)``: every operation throws ``StoreError/Code/unavailable``, as a database server
    /// that restarts does (for tests of how the server answers meanwhile).
    private var isUnavailable = false

    /// Makes the store fail every operation with ``StoreError/Code/unavailable`` until called with `false`.
    public func setUnavailable(_ unavailable: Bool) {
        isUnavailable = unavailable
    }

    func checkAvailable() throws(StoreError) {
        if isUnavailable { throw StoreError(.unavailable, "the in-memory store is switched off") }
    }

    public func signIn(
        _ facts: AppleSignInFacts,
        startingSession session: NewSession?,
        now: Date
    ) throws(StoreError) -> SignInOutcome {
        try checkAvailable()
        // Checked first, so that a failing session leaves no account behind (one transaction, as in SQL).
        if let session, sessions[session.sessionID] != nil || tokens[session.refreshTokenHash] != nil {
            throw StoreError(.duplicate, "session or token exists")
        }
        var outcome = try findOrCreate(facts, now: now)
        guard !outcome.user.isDisabled else { return outcome }
        let id = outcome.user.id
        if let last = outcome.user.lastSignInAt, now.timeIntervalSince(last) < UserRecord.lastSignInResolution {
            // Recorded recently enough: nothing to write.
        } else {
            outcome.user.lastSignInAt = now
            users[id]?.lastSignInAt = now
        }
        if let session {
            try createSession(
                firstToken: RefreshTokenRecord(
                    hash: session.refreshTokenHash,
                    sessionID: session.sessionID,
                    userID: id,
                    issuedAt: session.issuedAt,
                    expiresAt: session.expiresAt
                ),
                metadata: session.metadata,
                now: now
            )
            if outcome.isNewUser {
                auditLog.append(
                    AuditEvent(
                        time: now,
                        type: .accountCreated,
                        userID: id,
                        actor: .user,
                        channel: session.metadata.channel,
                        clientID: facts.clientID,
                        sessionID: session.sessionID
                    )
                )
            }
            auditLog.append(
                AuditEvent(
                    time: now,
                    type: .signIn,
                    userID: id,
                    actor: .user,
                    channel: session.metadata.channel,
                    clientID: facts.clientID,
                    sessionID: session.sessionID,
                    details: ["account": outcome.isNewUser ? "new" : "returning"]
                )
            )
        }
        return outcome
    }

    private func findOrCreate(_ facts: AppleSignInFacts, now: Date) throws(StoreError) -> SignInOutcome {
        var completedTransfer = false
        if userByApple[facts.appleUserID] == nil, let transferSub = facts.transferSub,
            let transfer = transfers.values.first(where: { $0.transferSub == transferSub && $0.transferredAt == nil })
        {
            let before = users[transfer.userID]?.appleUserID
            moveAccount(transfer.userID, to: facts.appleUserID, now: now)
            if let before {
                appendEvent(.transferred(transfer.userID, from: before, to: facts.appleUserID, by: .user, time: now))
            }
            completedTransfer = true
            auditLog.append(
                AuditEvent(
                    time: now,
                    type: .transferCompleted,
                    userID: transfer.userID,
                    actor: .user,
                    clientID: facts.clientID,
                    reason: "sign_in"
                )
            )
        }
        if userByApple[facts.appleUserID] == nil, let email = facts.linkableEmail,
            let match = creationOrder.lazy.compactMap({ self.users[$0] }).first(where: { user in
                user.emailVerified && !user.isPrivateEmail && user.email?.lowercased() == email.lowercased()
            })
        {
            guard match.appleConsentRevokedAt != nil else { throw Self.emailOfAnotherAppleID }
            moveAccount(match.id, to: facts.appleUserID, now: now)
        }
        if let id = userByApple[facts.appleUserID], var user = users[id] {
            let stored = user
            if let email = facts.email {
                user.email = email
                user.emailVerified = facts.emailVerified ?? user.emailVerified
                user.isPrivateEmail = facts.isPrivateEmail ?? user.isPrivateEmail
            }
            if user.givenName == nil, let given = facts.givenName, !given.isEmpty { user.givenName = given }
            if user.familyName == nil, let family = facts.familyName, !family.isEmpty { user.familyName = family }
            user.clientID = facts.clientID
            user.appleConsentRevokedAt = nil
            if user != stored {
                user.updatedAt = now
                users[id] = user
            }
            return SignInOutcome(user: user, isNewUser: false, completedTransfer: completedTransfer)
        }
        let user = UserRecord(
            id: UserID(),
            appleUserID: facts.appleUserID,
            clientID: facts.clientID,
            email: facts.email,
            emailVerified: facts.emailVerified ?? false,
            isPrivateEmail: facts.isPrivateEmail ?? false,
            givenName: facts.givenName.flatMap { $0.isEmpty ? nil : $0 },
            familyName: facts.familyName.flatMap { $0.isEmpty ? nil : $0 },
            createdAt: now,
            updatedAt: now
        )
        users[user.id] = user
        userByApple[facts.appleUserID] = user.id
        creationOrder.append(user.id)
        appendEvent(.created(user, time: now))
        return SignInOutcome(user: user, isNewUser: true)
    }

    public func user(id: UserID) -> UserRecord? { users[id] }

    public func user(appleUserID: AppleUserID) -> UserRecord? { userByApple[appleUserID].flatMap { users[$0] } }

    public func users(email: String) -> [UserRecord] {
        let email = SearchKey.of(email)
        return creationOrder.compactMap { users[$0] }.filter { $0.email.map(SearchKey.of) == email }
    }

    public func users(limit: Int, after: UserID?) -> [UserRecord] {
        var start = 0
        if let after, let index = creationOrder.firstIndex(of: after) { start = index + 1 }
        return creationOrder[min(start, creationOrder.count)...].prefix(max(0, limit)).compactMap { users[$0] }
    }

    public func deleteUser(
        id: UserID,
        mode: AccountDeletionMode,
        appleRevocationDueAt: Date?,
        by actor: AuditActor,
        now: Date
    ) -> DeletedAccount? {
        guard let user = users[id] else { return nil }
        let ended = revokeSessions(userID: id, by: actor, reason: SessionEndReason.accountDeleted, now: now)
        var queued: PendingAppleRevocation?
        if let appleRevocationDueAt, let token = appleTokens[id] {
            let pending = PendingAppleRevocation(
                userID: id,
                clientID: token.clientID,
                encryptedRefreshToken: token.encryptedRefreshToken,
                createdAt: now,
                nextAttemptAt: appleRevocationDueAt
            )
            revocationQueue[pending.id] = pending
            queued = pending
        }
        appleTokens[id] = nil
        transfers[id] = nil
        for index in notifications.indices
        where notifications[index].userID == id || notifications[index].appleUserID == user.appleUserID {
            notifications[index].appleUserID = AppleNotificationRecord.forgottenAppleUserID
            if mode == .delete { notifications[index].userID = nil }
        }
        tokens = tokens.filter { $0.value.record.userID != id }
        authorizationCodes = authorizationCodes.filter { $0.value.userID != id }
        clientConsents[id] = nil
        userByApple[user.appleUserID] = nil
        switch mode {
        case .delete:
            users[id] = nil
            creationOrder.removeAll { $0 == id }
            for sessionID in sessions.filter({ $0.value.userID == id }).map(\.key) { sessions[sessionID] = nil }
        case .anonymise:
            var anonymised = user
            anonymised.appleUserID = AppleUserID("anonymised:\(id)")
            anonymised.email = nil
            anonymised.emailVerified = false
            anonymised.isPrivateEmail = false
            anonymised.givenName = nil
            anonymised.familyName = nil
            anonymised.updatedAt = now
            users[id] = anonymised
            userByApple[anonymised.appleUserID] = id
        }
        deletions.append(AccountDeletion(userID: id, deletedAt: now))
        for index in lifecycleLog.indices where lifecycleLog[index].userID == id {
            if let blanked = lifecycleLog[index].withoutPersonalData() { lifecycleLog[index] = blanked }
        }
        appendEvent(.deleted(id, mode: mode, by: actor, appleRevocationQueued: queued != nil, time: now))
        return DeletedAccount(user: user, endedSessions: ended, queuedRevocation: queued)
    }

    public func deletedAccounts(since: Date) -> [AccountDeletion] { deletions.filter { $0.deletedAt >= since } }

    public func usersChanged(since: Date) -> [UserID] {
        var changed = Set(users.values.filter { $0.updatedAt >= since }.map(\.id))
        for deletion in deletions where deletion.deletedAt >= since { changed.insert(deletion.userID) }
        return Array(changed)
    }

    public func endAppleConsent(userID: UserID, by actor: AuditActor, now: Date) -> [SessionID] {
        guard users[userID] != nil else { return [] }
        let ended = revokeSessions(userID: userID, by: actor, reason: SessionEndReason.appleConsentRevoked, now: now)
        appleTokens[userID] = nil
        users[userID]?.appleConsentRevokedAt = now
        users[userID]?.updatedAt = now
        appendEvent(.account(.userConsentRevoked, userID, by: actor, time: now))
        return ended
    }

    public func disableUser(id: UserID, by actor: AuditActor, now: Date) -> DisabledAccount? {
        guard var user = users[id] else { return nil }
        let ended = revokeSessions(userID: id, by: actor, reason: SessionEndReason.accountDisabled, now: now)
        user.disabledAt = user.disabledAt ?? now
        user.updatedAt = now
        users[id] = user
        appendEvent(.account(.userDisabled, id, by: actor, time: now))
        return DisabledAccount(user: user, endedSessions: ended)
    }

    public func enableUser(id: UserID, by actor: AuditActor, now: Date) -> UserRecord? {
        guard var user = users[id] else { return nil }
        if user.disabledAt != nil {
            user.disabledAt = nil
            user.updatedAt = now
            users[id] = user
            appendEvent(.account(.userEnabled, id, by: actor, time: now))
        }
        return user
    }

    public func appleTokensDue(validatedBefore: Date, limit: Int) -> [AppleTokenRecord] {
        let due = appleTokens.values.filter { ($0.lastValidatedAt ?? .distantPast) < validatedBefore }
        return Array(
            due.sorted {
                ($0.lastValidatedAt ?? .distantPast, $0.userID.description)
                    < ($1.lastValidatedAt ?? .distantPast, $1.userID.description)
            }.prefix(max(0, limit))
        )
    }

    public func claimAppleTokenValidation(userID: UserID, validatedBefore: Date, now: Date) -> AppleTokenRecord? {
        guard var token = appleTokens[userID], (token.lastValidatedAt ?? .distantPast) < validatedBefore else {
            return nil
        }
        token.lastValidatedAt = now
        appleTokens[userID] = token
        return token
    }

    public func setAppleTokenValidated(userID: UserID, at date: Date) {
        appleTokens[userID]?.lastValidatedAt = date
    }

    public func dueAppleRevocations(now: Date, limit: Int) -> [PendingAppleRevocation] {
        Array(
            revocationQueue.values.filter { $0.nextAttemptAt <= now }
                .sorted { ($0.createdAt, $0.id.uuidString) < ($1.createdAt, $1.id.uuidString) }
                .prefix(max(0, limit))
        )
    }

    public func pendingAppleRevocationCount() -> Int { revocationQueue.count }

    public func finishAppleRevocation(id: UUID) { revocationQueue[id] = nil }

    public func postponeAppleRevocation(id: UUID, until: Date, error: String) {
        revocationQueue[id]?.attempts += 1
        revocationQueue[id]?.nextAttemptAt = until
        revocationQueue[id]?.lastError = error
    }

    public func applyAppleNotification(
        _ event: AppleNotificationRecord,
        action: AppleNotificationAction,
        now: Date
    ) -> AppleNotificationOutcome {
        if let earlier = notifications.first(where: { $0.eventKey == event.eventKey }) { return .duplicate(earlier) }
        var record = event
        record.receivedAt = now
        var ended: [SessionID] = []
        var deleted: UserID?
        if let id = userByApple[event.appleUserID] {
            record.userID = id
            record.outcome = "applied"
            if isStale(event, action: action, userID: id) {
                record.outcome = "stale"
                notifications.append(record)
                return .applied(record, endedSessions: [], deletedUser: nil)
            }
            switch action {
            case .endConsent:
                ended = endAppleConsent(userID: id, by: .apple, now: now)
            case .deleteAccount(let mode):
                ended =
                    deleteUser(id: id, mode: mode, appleRevocationDueAt: nil, by: .apple, now: now)?.endedSessions ?? []
                deleted = id
            case .setEmailForwarding(let forwarding):
                users[id]?.emailForwarding = forwarding
                users[id]?.updatedAt = now
                appendEvent(.emailForwarding(forwarding, userID: id, time: now))
            case .none:
                record.outcome = "ignored"
            }
        } else {
            record.userID = nil
            record.outcome = "unknown_user"
        }
        notifications.append(record)
        if deleted != nil, case .deleteAccount(let mode) = action {
            // The deletion itself is logged without whom it was about, like the account's earlier events.
            notifications[notifications.count - 1].appleUserID = AppleNotificationRecord.forgottenAppleUserID
            if mode == .delete { notifications[notifications.count - 1].userID = nil }
        }
        return .applied(record, endedSessions: ended, deletedUser: deleted)
    }

    /// An event older than the state it would change (see ``AccountStore/applyAppleNotification(_:action:now:)``).
    private func isStale(_ event: AppleNotificationRecord, action: AppleNotificationAction, userID: UserID) -> Bool {
        switch action {
        case .endConsent:
            let latestSignIn = sessions.values.filter { $0.userID == userID }.map(\.createdAt).max()
            return latestSignIn.map {
                event.eventTime < $0.addingTimeInterval(-AppleNotificationRecord.consentOrderingLeeway)
            } ?? false
        case .setEmailForwarding:
            let latest = notifications.filter {
                $0.appleUserID == event.appleUserID && $0.outcome == "applied"
                    && AppleNotificationRecord.emailEventTypes.contains($0.type)
            }.map(\.eventTime).max()
            return latest.map { event.eventTime < $0 } ?? false
        case .deleteAccount, .none:
            return false
        }
    }

    public func appleNotifications(limit: Int) -> [AppleNotificationRecord] {
        Array(notifications.reversed().prefix(max(0, limit)))
    }

    public func saveWebFlowState(_ state: WebFlowState) throws(StoreError) {
        try checkAvailable()
        guard webStates[state.stateHash] == nil else { throw StoreError(.duplicate, "web state exists") }
        webStates[state.stateHash] = (state, nil)
    }

    public func consumeWebFlowState(stateHash: [UInt8], now: Date) -> WebFlowStateOutcome {
        guard let stored = webStates[stateHash] else { return .notFound }
        if stored.usedAt != nil { return .alreadyUsed }
        if stored.state.expiresAt <= now { return .expired }
        webStates[stateHash]?.usedAt = now
        return .consumed(stored.state)
    }

    public func saveAuthorizationCode(_ code: AuthorizationCodeRecord) throws(StoreError) {
        try checkAvailable()
        guard users[code.userID] != nil else { throw StoreError(.notFound, "no user for the authorization code") }
        guard authorizationCodes[code.codeHash] == nil else { throw StoreError(.duplicate, "code exists") }
        var stored = code
        stored.redeemedAt = nil
        stored.issuedSessionID = nil
        authorizationCodes[code.codeHash] = stored
    }

    public func authorizationCode(codeHash: [UInt8]) throws(StoreError) -> AuthorizationCodeRecord? {
        try checkAvailable()
        return authorizationCodes[codeHash]
    }

    public func clientConsent(
        userID: UserID,
        clientID: String,
        redirectURI: String
    ) throws(StoreError) -> ClientConsentRecord? {
        try checkAvailable()
        return clientConsents[userID]?[[clientID, redirectURI]]
    }

    public func saveClientConsent(_ consent: ClientConsentRecord) throws(StoreError) {
        try checkAvailable()
        guard users[consent.userID] != nil else { throw StoreError(.notFound, "no user for the consent") }
        clientConsents[consent.userID, default: [:]][[consent.clientID, consent.redirectURI]] = consent
    }

    public func redeemAuthorizationCode(
        codeHash: [UInt8],
        startingSession session: NewSession,
        now: Date
    ) throws(StoreError) -> AuthorizationCodeOutcome {
        try checkAvailable()
        guard let code = authorizationCodes[codeHash] else { return .notFound }
        if code.redeemedAt != nil {
            var ended: SessionID?
            if let issued = code.issuedSessionID,
                revokeSession(issued, by: .system, reason: SessionEndReason.codeReplayed, now: now)
            {
                ended = issued
            }
            return .replayed(code, endedSession: ended)
        }
        if code.expiresAt <= now { return .expired }
        guard users[code.userID] != nil else { return .notFound }
        guard sessions[session.sessionID] == nil, tokens[session.refreshTokenHash] == nil else {
            throw StoreError(.duplicate, "session or token exists")
        }
        sessions[session.sessionID] = StoredSession(userID: code.userID, createdAt: now, metadata: session.metadata)
        tokens[session.refreshTokenHash] = StoredToken(
            record: RefreshTokenRecord(
                hash: session.refreshTokenHash,
                sessionID: session.sessionID,
                userID: code.userID,
                issuedAt: session.issuedAt,
                expiresAt: session.expiresAt
            )
        )
        var redeemed = code
        redeemed.redeemedAt = now
        redeemed.issuedSessionID = session.sessionID
        authorizationCodes[codeHash] = redeemed
        return .redeemed(redeemed)
    }

    public func purgeExpired(now: Date, retention: TimeInterval) -> PurgeResult {
        let cutoff = now.addingTimeInterval(-retention)
        let codeCount = authorizationCodes.count
        authorizationCodes = authorizationCodes.filter { $0.value.expiresAt > cutoff }
        let nonceCount = nonces.count
        nonces = nonces.filter { $0.value > now }
        let stateCount = webStates.count
        webStates = webStates.filter { $0.value.state.expiresAt > now }
        let tokenCount = tokens.count
        tokens = tokens.filter { $0.value.record.expiresAt > cutoff }
        let sessionCount = sessions.count
        sessions = sessions.filter { id, session in
            if let revokedAt = session.revokedAt { return revokedAt > cutoff }
            return tokens.values.contains { $0.record.sessionID == id } || session.createdAt > cutoff
        }
        let liveSessions = Set(sessions.keys)
        tokens = tokens.filter { liveSessions.contains($0.value.record.sessionID) }
        let deletionCount = deletions.count
        deletions = deletions.filter { $0.deletedAt > cutoff }
        return PurgeResult(
            serverNonces: nonceCount - nonces.count,
            webFlowStates: stateCount - webStates.count,
            refreshTokens: tokenCount - tokens.count,
            sessions: sessionCount - sessions.count,
            accountDeletions: deletionCount - deletions.count,
            authorizationCodes: codeCount - authorizationCodes.count
        )
    }

    public func saveAppleToken(_ token: AppleTokenRecord) throws(StoreError) {
        try checkAvailable()
        guard users[token.userID] != nil else { throw StoreError(.notFound, "no user for the Apple token") }
        appleTokens[token.userID] = token
    }

    public func appleToken(userID: UserID) -> AppleTokenRecord? { appleTokens[userID] }

    public func createSession(
        firstToken: RefreshTokenRecord,
        metadata: SessionMetadata,
        now: Date
    ) throws(StoreError) {
        try checkAvailable()
        guard users[firstToken.userID] != nil else { throw StoreError(.notFound, "no user for the session") }
        guard sessions[firstToken.sessionID] == nil, tokens[firstToken.hash] == nil else {
            throw StoreError(.duplicate, "session or token exists")
        }
        sessions[firstToken.sessionID] = StoredSession(userID: firstToken.userID, createdAt: now, metadata: metadata)
        tokens[firstToken.hash] = StoredToken(record: firstToken)
    }

    public func rotateRefreshToken(
        presentedHash: [UInt8],
        next: RefreshTokenSuccessor,
        now: Date,
        reuseGrace: TimeInterval
    ) throws(StoreError)
        -> RotationOutcome
    {
        try checkAvailable()
        guard let stored = tokens[presentedHash], let session = sessions[stored.record.sessionID] else {
            return .notFound
        }
        let sessionID = stored.record.sessionID
        let userID = stored.record.userID
        if session.revokedAt != nil { return .revoked(sessionID: sessionID, userID: userID) }
        if let usedAt = stored.usedAt {
            let inGrace = reuseGrace > 0 && now.timeIntervalSince(usedAt) < reuseGrace && stored.record.expiresAt > now
            guard inGrace else {
                revokeSession(sessionID, by: .system, reason: SessionEndReason.reuse, now: now)
                return .reused(sessionID: sessionID, userID: userID)
            }
            // Within the grace window the family stays linear: the successor already stored is answered as it stands,
            // and any other replaces every current token of the session.
            if let existing = tokens[next.hash] {
                guard existing.record.sessionID == sessionID else {
                    throw StoreError(.duplicate, "next refresh token exists")
                }
                return .rotated(sessionID: sessionID, userID: userID)
            }
            for (hash, token) in tokens where token.record.sessionID == sessionID && token.usedAt == nil {
                tokens[hash]?.usedAt = now
            }
        }
        if stored.record.expiresAt <= now { return .expired }
        guard tokens[next.hash] == nil else { throw StoreError(.duplicate, "next refresh token exists") }
        if stored.usedAt == nil { tokens[presentedHash]?.usedAt = now }
        tokens[next.hash] = StoredToken(record: next.record(sessionID: sessionID, userID: userID))
        return .rotated(sessionID: sessionID, userID: userID)
    }

    public func checkRefreshToken(presentedHash: [UInt8], now: Date) -> RefreshTokenCheck {
        guard let stored = tokens[presentedHash], let session = sessions[stored.record.sessionID] else {
            return .notFound
        }
        let sessionID = stored.record.sessionID
        let userID = stored.record.userID
        if session.revokedAt != nil { return .revoked(sessionID: sessionID, userID: userID) }
        if stored.usedAt != nil { return .used(sessionID: sessionID, userID: userID) }
        if stored.record.expiresAt <= now { return .expired }
        if let last = stored.lastCheckedAt, now.timeIntervalSince(last) < SessionRecord.lastUseResolution {
            // Recorded recently enough: nothing to write.
        } else {
            tokens[presentedHash]?.lastCheckedAt = now
        }
        return .current(sessionID: sessionID, userID: userID)
    }

    public func session(refreshTokenHash: [UInt8]) -> (sessionID: SessionID, userID: UserID)? {
        tokens[refreshTokenHash].map { ($0.record.sessionID, $0.record.userID) }
    }

    @discardableResult
    public func revokeSession(_ sessionID: SessionID, by actor: AuditActor, reason: String, now: Date) -> Bool {
        guard let session = sessions[sessionID], session.revokedAt == nil else { return false }
        sessions[sessionID]?.revokedAt = now
        appendEvent(
            .sessionEnded(
                sessionID,
                userID: session.userID,
                channel: session.metadata.channel,
                by: actor,
                reason: reason,
                time: now
            )
        )
        return true
    }

    public func revokeSessions(userID: UserID, by actor: AuditActor, reason: String, now: Date) -> [SessionID] {
        let active = sessions.filter { $0.value.userID == userID && $0.value.revokedAt == nil }
            .sorted { $0.value.createdAt < $1.value.createdAt }.map(\.key)
        for sessionID in active {
            sessions[sessionID]?.revokedAt = now
            appendEvent(
                .sessionEnded(
                    sessionID,
                    userID: userID,
                    channel: sessions[sessionID]?.metadata.channel,
                    by: actor,
                    reason: reason,
                    time: now
                )
            )
        }
        return active
    }

    public func revokedSessions(since: Date) -> [SessionRevocation] {
        sessions.compactMap { id, session in
            guard let revokedAt = session.revokedAt, revokedAt >= since else { return nil }
            return SessionRevocation(sessionID: id, userID: session.userID, revokedAt: revokedAt)
        }.sorted { $0.revokedAt < $1.revokedAt }
    }

    public func saveServerNonce(hash: [UInt8], expiresAt: Date) throws(StoreError) {
        try checkAvailable()
        guard nonces[hash] == nil else { throw StoreError(.duplicate, "nonce exists") }
        nonces[hash] = expiresAt
    }

    public func consumeServerNonce(hash: [UInt8], now: Date) -> Bool {
        guard let expiresAt = nonces.removeValue(forKey: hash) else { return false }
        return expiresAt > now
    }

    public func signingKeys() -> [SigningKeyRecord] { keys }

    public func addSigningKey(_ key: SigningKeyRecord) throws(StoreError) {
        try checkAvailable()
        guard !keys.contains(where: { $0.kid == key.kid }) else { throw StoreError(.duplicate, "kid exists") }
        for index in keys.indices where keys[index].retiredAt == nil { keys[index].retiredAt = key.createdAt }
        keys.append(key)
    }

    // MARK: Sealed data

    public func sealedItems(after: SealedItem.Position?, limit: Int) throws(StoreError) -> [SealedItem] {
        try checkAvailable()
        let all =
            keys.map { SealedItem(kind: .signingKey, id: $0.kid, sealed: $0.sealedPrivateKey) }
            + appleTokens.values.map {
                SealedItem(kind: .appleToken, id: $0.userID.description, sealed: $0.encryptedRefreshToken)
            }
            + revocationQueue.values.map {
                SealedItem(kind: .appleRevocation, id: $0.id.lowercasedText, sealed: $0.encryptedRefreshToken)
            }
        let sorted = all.sorted { ($0.kind, $0.id) < ($1.kind, $1.id) }
        guard let after else { return Array(sorted.prefix(max(limit, 0))) }
        return Array(sorted.filter { ($0.kind, $0.id) > (after.kind, after.id) }.prefix(max(limit, 0)))
    }

    public func replaceSealed(_ item: SealedItem, with sealed: [UInt8]) throws(StoreError) -> Bool {
        try checkAvailable()
        switch item.kind {
        case .signingKey:
            guard let index = keys.firstIndex(where: { $0.kid == item.id && $0.sealedPrivateKey == item.sealed })
            else { return false }
            keys[index].sealedPrivateKey = sealed
        case .appleToken:
            guard let userID = UserID(item.id), appleTokens[userID]?.encryptedRefreshToken == item.sealed else {
                return false
            }
            appleTokens[userID]?.encryptedRefreshToken = sealed
        case .appleRevocation:
            guard let id = UUID(text: item.id), id.lowercasedText == item.id,
                revocationQueue[id]?.encryptedRefreshToken == item.sealed
            else { return false }
            revocationQueue[id]?.encryptedRefreshToken = sealed
        }
        return true
    }

    public func ping() throws(StoreError) { try checkAvailable() }

    // MARK: Team transfer

    public func setTransferSub(
        userID: UserID,
        transferSub: AppleUserID,
        targetTeam: String,
        now: Date
    ) throws(StoreError) {
        try checkAvailable()
        guard users[userID] != nil else { throw StoreError(.notFound, "set a transfer_sub: no such user") }
        guard !transfers.values.contains(where: { $0.transferSub == transferSub && $0.userID != userID }) else {
            throw StoreError(.duplicate, "another account has this transfer_sub")
        }
        transfers[userID] = AppleTransferRecord(
            userID: userID,
            transferSub: transferSub,
            targetTeam: targetTeam,
            exportedAt: now
        )
    }

    public func usersWithoutTransfer(after: UserID?, limit: Int) -> [UserRecord] {
        var start = 0
        if let after, let index = creationOrder.firstIndex(of: after) { start = index + 1 }
        return creationOrder[min(start, creationOrder.count)...].lazy
            .filter { self.transfers[$0] == nil }
            .compactMap { self.users[$0] }
            .filter { !$0.appleUserID.rawValue.hasPrefix("anonymised:") }
            .prefix(max(0, limit)).map { $0 }
    }

    public func transfer(userID: UserID) -> AppleTransferRecord? { transfers[userID] }

    public func user(transferSub: AppleUserID) -> UserRecord? {
        transfers.values.first { $0.transferSub == transferSub }.flatMap { users[$0.userID] }
    }

    public func pendingTransfers(after: UserID?, limit: Int) -> [AppleTransferRecord] {
        let pending = transfers.values.filter { $0.transferredAt == nil }
            .filter { transfer in after.map { transfer.userID.description > $0.description } ?? true }
            .sorted { $0.userID.description < $1.userID.description }
        return Array(pending.prefix(max(0, limit)))
    }

    public func reassignAppleUser(
        userID: UserID,
        newAppleUserID: AppleUserID,
        email: String?,
        isPrivateEmail: Bool?,
        now: Date
    ) throws(StoreError) -> UserRecord {
        try checkAvailable()
        guard let user = users[userID] else { throw StoreError(.notFound, "reassign an Apple user: no such user") }
        if let other = userByApple[newAppleUserID], other != userID {
            throw StoreError(.duplicate, "another account has this Apple user id")
        }
        if user.appleUserID != newAppleUserID {
            moveAccount(userID, to: newAppleUserID, now: now)
            appendEvent(.transferred(userID, from: user.appleUserID, to: newAppleUserID, by: .operator, time: now))
        }
        if let email {
            users[userID]?.email = email
            users[userID]?.isPrivateEmail = isPrivateEmail ?? user.isPrivateEmail
            users[userID]?.updatedAt = now
        }
        if transfers[userID]?.transferredAt == nil { transfers[userID]?.transferredAt = now }
        return users[userID] ?? user
    }

    /// Points the account at `appleUserID`, drops its Apple token (issued to the sending team) and marks its
    /// transfer done.
    /// A link by email to an account whose own Apple ID still signs in: refused, never a takeover.
    static let emailOfAnotherAppleID = StoreError(
        .duplicate,
        "sign in: the email belongs to the account of another Apple ID, which still signs in"
    )

    /// Appends a lifecycle event with the next sequence.
    private func appendEvent(_ event: LifecycleEvent) {
        var event = event
        lastEventSequence += 1
        event.sequence = lastEventSequence
        lifecycleLog.append(event)
    }

    public func lifecycleEvents(after: Int64?, limit: Int) throws(StoreError) -> [LifecycleEvent] {
        try checkAvailable()
        let after = after ?? 0
        return Array(lifecycleLog.lazy.filter { $0.sequence > after }.prefix(max(0, limit)))
    }

    public func purgeLifecycleEvents(before: Date) throws(StoreError) -> Int {
        try checkAvailable()
        let needed = Set(webhookQueue.lazy.filter { $0.state == .pending }.map(\.sequence))
        let count = lifecycleLog.count
        lifecycleLog.removeAll { $0.time < before && !needed.contains($0.sequence) }
        webhookQueue.removeAll { $0.state != .pending && $0.createdAt < before }
        return count - lifecycleLog.count
    }

    private func moveAccount(_ userID: UserID, to appleUserID: AppleUserID, now: Date) {
        guard let user = users[userID] else { return }
        userByApple[user.appleUserID] = nil
        userByApple[appleUserID] = userID
        users[userID]?.appleUserID = appleUserID
        users[userID]?.updatedAt = now
        appleTokens[userID] = nil
        if transfers[userID]?.transferredAt == nil { transfers[userID]?.transferredAt = now }
    }
}
