import AccountStore
import HTTPTypes
import Logging

/// The validation of overdue Apple refresh tokens on `POST /auth/refresh`.
///
/// By default Apple being unreachable lets the refresh through, so the check can run after the rotation: the only
/// store access it adds is the claim, made when this instance does not know the token to be validated recently
/// (``AppleConsentChecker`` remembers that per user). A revoked consent ends every session, the just-rotated token's
/// included, so the answer is the same as checking first. When refreshes are refused while Apple is unreachable, a
/// refused refresh must not use up the presented token (the client's retry would then look like token theft), so the
/// user is looked up and checked before rotating, at the cost of one read per refresh.
extension SessionService {
    func requireAppleConsentBeforeRotating(presentedHash: [UInt8], logger: Logger) async throws {
        guard let appleConsent, appleConsent.configuration.refuseRefreshWhenAppleUnavailable else { return }
        guard let owner = try await store.session(refreshTokenHash: presentedHash) else { return }
        try await requireAppleConsent(userID: owner.userID, checker: appleConsent, logger: logger)
    }

    func requireAppleConsentAfterRotating(userID: UserID, logger: Logger) async throws {
        guard let appleConsent, !appleConsent.configuration.refuseRefreshWhenAppleUnavailable else { return }
        try await requireAppleConsent(userID: userID, checker: appleConsent, logger: logger)
    }

    private func requireAppleConsent(userID: UserID, checker: AppleConsentChecker, logger: Logger) async throws {
        switch await checker.checkIfDue(userID: userID) {
        case .valid, .notDue:
            return
        case .revoked:
            throw Self.appleConsentRevoked
        case .unavailable:
            guard checker.configuration.refuseRefreshWhenAppleUnavailable else { return }
            throw AuthServerError(
                .serviceUnavailable,
                AuthServerError.Code.appleUnavailable,
                "the Apple sign-in of this account must be re-validated and Apple cannot be reached; try again later"
            )
        }
    }

    /// For a refresh token whose session has ended: the `apple_consent_revoked` error when Apple ended the user's
    /// consent (an error path, so the store read does not slow down refreshes).
    /// The same read answers `account_disabled` (403) for an account an operator disabled, which ended its sessions.
    func appleConsentEndedError(userID: UserID) async throws -> AuthServerError? {
        guard let user = try await store.user(id: userID) else { return nil }
        if user.isDisabled { return AuthServerError.accountDisabled }
        return user.appleConsentRevokedAt == nil ? nil : Self.appleConsentRevoked
    }

    static var appleConsentRevoked: AuthServerError { AuthServerError.appleConsentRevoked }
}
