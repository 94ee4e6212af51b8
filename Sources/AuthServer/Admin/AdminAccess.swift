import AccountStore
import AppleSignIn
import HTTPTypes

/// Who is an admin: the subjects of the configuration (`SIWA_ADMIN_USERS`: siwa user ids or Apple `sub`s) and those
/// granted in the store (`siwa users grant-admin`). Never by email.
struct AdminAccess: Sendable {
    let configuration: AuthServerConfiguration
    let store: any AccountStore
    let sessions: SessionService

    /// The signed-in admin of a request: its account and the subject that holds the role.
    struct Admin: Sendable {
        var user: UserRecord
        var subject: AdminSubject
        var sessionID: SessionID
    }

    /// The request's admin: the session the route's guard accepted, in the ways the route allows (the admin API
    /// takes no cookie), and its account's role.
    /// - Throws: 401 without a session (or a session whose account is gone); 403 `admin_required` when the account
    ///   holds no admin role; 403 `account_disabled` for a disabled account.
    func admin(_ context: SiwaRequestContext) async throws -> Admin {
        let claims = try context.requireSession().claims
        guard let user = try await store.user(id: claims.userID), user.status != .deleted else {
            throw AuthServerError.unauthorized(AuthServerError.Code.unknownUser, "the session's account is gone")
        }
        guard user.status != .disabled else { throw AuthServerError.accountDisabled }
        guard let subject = try await role(of: user) else {
            throw AuthServerError(
                .forbidden,
                AuthServerError.Code.adminRequired,
                "this account does not hold the admin role (SIWA_ADMIN_USERS or siwa users grant-admin)"
            )
        }
        return Admin(user: user, subject: subject, sessionID: claims.sessionID)
    }

    /// Whether `subject` holds the role through the configuration (`SIWA_ADMIN_USERS`) rather than a grant in the store.
    func isConfigured(_ subject: AdminSubject) -> Bool {
        configuration.compatibility.adminUsers.contains(subject.rawValue.lowercased())
    }

    /// The subject through which `user` holds the admin role, or `nil`.
    func role(of user: UserRecord) async throws(StoreError) -> AdminSubject? {
        let byID = AdminSubject(user.id)
        let bySub = AdminSubject(user.appleUserID)
        let configured = configuration.compatibility.adminUsers
        if configured.contains(byID.rawValue.lowercased()) { return byID }
        if configured.contains(bySub.rawValue.lowercased()) { return bySub }
        if try await store.isAdmin(byID) { return byID }
        if try await store.isAdmin(bySub) { return bySub }
        return nil
    }
}
