public import AccountStore

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension AccountStore {
    /// Rotates to `next`, a token the test also keeps as a record to compare with what the store holds afterwards
    /// (whose session and user are then the presented token's, as the store takes them).
    /// - Parameters:
    ///   - presentedHash: SHA-256 of the presented token.
    ///   - next: the successor, of which the store keeps the hash and the times.
    ///   - now: the rotation's time.
    ///   - reuseGrace: how long a used token may be presented again without revoking its session.
    /// - Returns: what the store answered.
    /// - Throws: what the store throws.
    public func rotateRefreshToken(
        presentedHash: [UInt8],
        next: RefreshTokenRecord,
        now: Date,
        reuseGrace: TimeInterval = 0
    ) async throws(StoreError) -> RotationOutcome {
        try await rotateRefreshToken(
            presentedHash: presentedHash,
            next: RefreshTokenSuccessor(hash: next.hash, issuedAt: next.issuedAt, expiresAt: next.expiresAt),
            now: now,
            reuseGrace: reuseGrace
        )
    }
}
