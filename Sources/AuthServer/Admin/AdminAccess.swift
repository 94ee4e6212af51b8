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

    /// Who acts through the admin API: a signed-in admin, or a service token.
    enum Caller: Sendable {
        case admin(Admin)
        case serviceToken(AdminToken)

        /// Who the audit log says acted.
        var actor: AuditActor {
            switch self {
            case .admin(let admin): .admin(admin.subject)
            case .serviceToken(let token): .serviceToken(token.name)
            }
        }

        /// The caller's own account (a service token has none).
        var userID: UserID? {
            if case .admin(let admin) = self { return admin.user.id }
            return nil
        }

        /// The caller for the log: the admin's account id, or the token's name.
        var logName: String {
            switch self {
            case .admin(let admin): "admin \(admin.user.id)"
            case .serviceToken(let token): "token \(token.name)"
            }
        }
    }

    /// The admin API's caller: the service token the route's guard accepted, else the admin of ``admin(_:)``.
    /// - Throws: as ``admin(_:)``.
    func caller(_ context: SiwaRequestContext) async throws -> Caller {
        if let token = context.serviceToken { return .serviceToken(token) }
        return .admin(try await admin(context))
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
