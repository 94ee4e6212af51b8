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
    /// Two racing first sign-ins of one Apple user create one account (the loser reads the winner's).
    func signIn(_ facts: AppleSignInFacts, now: Date) async throws(StoreError) -> SignInOutcome

    /// The account with siwa id `id`.
    func user(id: UserID) async throws(StoreError) -> UserRecord?

    /// The account of an Apple user.
    func user(appleUserID: AppleUserID) async throws(StoreError) -> UserRecord?

    /// Accounts ordered by creation, at most `limit`, after the one with id `after` (for paging).
    func users(limit: Int, after: UserID?) async throws(StoreError) -> [UserRecord]

    /// Deletes the account, its sessions, refresh tokens and Apple token. Returns whether it existed.
    func deleteUser(id: UserID) async throws(StoreError) -> Bool

    // MARK: Apple refresh tokens

    /// Keeps (or replaces) the user's Apple refresh token, sealed by the caller.
    func saveAppleToken(_ token: AppleTokenRecord) async throws(StoreError)

    /// The user's Apple refresh token, if one is kept.
    func appleToken(userID: UserID) async throws(StoreError) -> AppleTokenRecord?

    // MARK: Sessions

    /// Starts a session with its first refresh token.
    func createSession(firstToken: RefreshTokenRecord, now: Date) async throws(StoreError)

    /// Presents the refresh token with hash `presentedHash`. When it is current it is marked used and `next` is stored
    /// as the session's new token (`next.sessionID` and `next.userID` are taken from the presented token, whatever the
    /// caller put there). Presenting a token that was already used revokes the whole session (theft). Exactly one of
    /// several concurrent presentations of one token can rotate it.
    func rotateRefreshToken(
        presentedHash: [UInt8],
        next: RefreshTokenRecord,
        now: Date
    ) async throws(StoreError)
        -> RotationOutcome

    /// The session a refresh token belongs to (for logout by refresh token).
    func session(refreshTokenHash: [UInt8]) async throws(StoreError) -> (sessionID: SessionID, userID: UserID)?

    /// Revokes one session: its refresh tokens stop working at once. Returns whether it was active.
    @discardableResult
    func revokeSession(_ sessionID: SessionID, now: Date) async throws(StoreError) -> Bool

    /// Revokes every session of a user; returns the sessions revoked.
    @discardableResult
    func revokeSessions(userID: UserID, now: Date) async throws(StoreError) -> [SessionID]

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

    // MARK: Health

    /// Succeeds when the store can serve requests.
    func ping() async throws(StoreError)
}
