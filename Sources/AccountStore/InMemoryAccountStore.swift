public import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// An ``AccountStore`` in memory: for tests and trying siwa out. Everything is lost when the process ends.
public actor InMemoryAccountStore: AccountStore {
    private struct StoredToken {
        var record: RefreshTokenRecord
        var usedAt: Date?
    }

    private struct StoredSession {
        var userID: UserID
        var createdAt: Date
        var revokedAt: Date?
    }

    private var users: [UserID: UserRecord] = [:]
    private var userByApple: [AppleUserID: UserID] = [:]
    private var creationOrder: [UserID] = []
    private var appleTokens: [UserID: AppleTokenRecord] = [:]
    private var sessions: [SessionID: StoredSession] = [:]
    private var tokens: [[UInt8]: StoredToken] = [:]
    private var nonces: [[UInt8]: Date] = [:]
    private var keys: [SigningKeyRecord] = []

    public init() {}

    public func signIn(_ facts: AppleSignInFacts, now: Date) throws(StoreError) -> SignInOutcome {
        if let id = userByApple[facts.appleUserID], var user = users[id] {
            if let email = facts.email {
                user.email = email
                user.emailVerified = facts.emailVerified ?? user.emailVerified
                user.isPrivateEmail = facts.isPrivateEmail ?? user.isPrivateEmail
            }
            if user.givenName == nil, let given = facts.givenName, !given.isEmpty { user.givenName = given }
            if user.familyName == nil, let family = facts.familyName, !family.isEmpty { user.familyName = family }
            user.clientID = facts.clientID
            user.updatedAt = now
            users[id] = user
            return SignInOutcome(user: user, isNewUser: false)
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
        return SignInOutcome(user: user, isNewUser: true)
    }

    public func user(id: UserID) -> UserRecord? { users[id] }

    public func user(appleUserID: AppleUserID) -> UserRecord? { userByApple[appleUserID].flatMap { users[$0] } }

    public func users(limit: Int, after: UserID?) -> [UserRecord] {
        var start = 0
        if let after, let index = creationOrder.firstIndex(of: after) { start = index + 1 }
        return creationOrder[min(start, creationOrder.count)...].prefix(max(0, limit)).compactMap { users[$0] }
    }

    public func deleteUser(id: UserID) -> Bool {
        guard let user = users.removeValue(forKey: id) else { return false }
        userByApple[user.appleUserID] = nil
        creationOrder.removeAll { $0 == id }
        appleTokens[id] = nil
        let sessionIDs = sessions.filter { $0.value.userID == id }.map(\.key)
        for sessionID in sessionIDs { sessions[sessionID] = nil }
        tokens = tokens.filter { $0.value.record.userID != id }
        return true
    }

    public func saveAppleToken(_ token: AppleTokenRecord) throws(StoreError) {
        guard users[token.userID] != nil else { throw StoreError(.notFound, "no user for the Apple token") }
        appleTokens[token.userID] = token
    }

    public func appleToken(userID: UserID) -> AppleTokenRecord? { appleTokens[userID] }

    public func createSession(firstToken: RefreshTokenRecord, now: Date) throws(StoreError) {
        guard users[firstToken.userID] != nil else { throw StoreError(.notFound, "no user for the session") }
        guard sessions[firstToken.sessionID] == nil, tokens[firstToken.hash] == nil else {
            throw StoreError(.duplicate, "session or token exists")
        }
        sessions[firstToken.sessionID] = StoredSession(userID: firstToken.userID, createdAt: now)
        tokens[firstToken.hash] = StoredToken(record: firstToken)
    }

    public func rotateRefreshToken(
        presentedHash: [UInt8],
        next: RefreshTokenRecord,
        now: Date
    ) throws(StoreError)
        -> RotationOutcome
    {
        guard let stored = tokens[presentedHash], let session = sessions[stored.record.sessionID] else {
            return .notFound
        }
        let sessionID = stored.record.sessionID
        let userID = stored.record.userID
        if session.revokedAt != nil { return .revoked(sessionID: sessionID, userID: userID) }
        if stored.usedAt != nil {
            sessions[sessionID]?.revokedAt = now
            return .reused(sessionID: sessionID, userID: userID)
        }
        if stored.record.expiresAt <= now { return .expired }
        guard tokens[next.hash] == nil else { throw StoreError(.duplicate, "next refresh token exists") }
        tokens[presentedHash]?.usedAt = now
        var successor = next
        successor.sessionID = sessionID
        successor.userID = userID
        tokens[next.hash] = StoredToken(record: successor)
        return .rotated(sessionID: sessionID, userID: userID)
    }

    public func session(refreshTokenHash: [UInt8]) -> (sessionID: SessionID, userID: UserID)? {
        tokens[refreshTokenHash].map { ($0.record.sessionID, $0.record.userID) }
    }

    public func revokeSession(_ sessionID: SessionID, now: Date) -> Bool {
        guard let session = sessions[sessionID], session.revokedAt == nil else { return false }
        sessions[sessionID]?.revokedAt = now
        return true
    }

    public func revokeSessions(userID: UserID, now: Date) -> [SessionID] {
        let active = sessions.filter { $0.value.userID == userID && $0.value.revokedAt == nil }.map(\.key)
        for sessionID in active { sessions[sessionID]?.revokedAt = now }
        return active
    }

    public func revokedSessions(since: Date) -> [SessionRevocation] {
        sessions.compactMap { id, session in
            guard let revokedAt = session.revokedAt, revokedAt >= since else { return nil }
            return SessionRevocation(sessionID: id, userID: session.userID, revokedAt: revokedAt)
        }.sorted { $0.revokedAt < $1.revokedAt }
    }

    public func saveServerNonce(hash: [UInt8], expiresAt: Date) throws(StoreError) {
        guard nonces[hash] == nil else { throw StoreError(.duplicate, "nonce exists") }
        nonces[hash] = expiresAt
    }

    public func consumeServerNonce(hash: [UInt8], now: Date) -> Bool {
        guard let expiresAt = nonces.removeValue(forKey: hash) else { return false }
        return expiresAt > now
    }

    public func signingKeys() -> [SigningKeyRecord] { keys }

    public func addSigningKey(_ key: SigningKeyRecord) throws(StoreError) {
        guard !keys.contains(where: { $0.kid == key.kid }) else { throw StoreError(.duplicate, "kid exists") }
        for index in keys.indices where keys[index].retiredAt == nil { keys[index].retiredAt = key.createdAt }
        keys.append(key)
    }

    public func ping() {}
}
