import AccountStore
import AppleSignIn

/// Which client contracts of the tutorials siwa replaces are served (thin adapters over the same sign-in and session
/// logic), and their options. Off by default for `siwa serve`; `siwa demo` turns all of them on.
public struct CompatibilityConfiguration: Sendable {
    /// ServiceStack's `AppleAuthProvider` with `JwtAuthProvider`: `/auth/apple`, `/api/Authenticate`,
    /// `GetAccessToken`, `HelloSecure`, `/users`.
    public var serviceStack: Bool
    /// The Vapor 4 tutorial's `SIWAAPIController` and `SIWAViewController`: `/api/auth/siwa`, `/api/users/me`,
    /// `/web/auth/siwa/…`.
    public var vaporTutorial: Bool
    /// RentManager's API: `/api/auth/apple` and `/api/auth/refresh`.
    public var rentManager: Bool
    /// ServiceStack's `UseTokenCookie` for every sign-in, not only when the request asks for it.
    public var serviceStackTokenCookies: Bool
    /// siwa user ids or Apple user ids (`sub`), lower-cased, that hold the `Admin` role (ServiceStack's `/users`,
    /// RentManager's `role`). Never emails: an email can be unverified, a relay, or shared by several Apple IDs.
    public var adminUsers: Set<String>

    public init(
        serviceStack: Bool = false,
        vaporTutorial: Bool = false,
        rentManager: Bool = false,
        serviceStackTokenCookies: Bool = false,
        adminUsers: Set<String> = []
    ) {
        self.serviceStack = serviceStack
        self.vaporTutorial = vaporTutorial
        self.rentManager = rentManager
        self.serviceStackTokenCookies = serviceStackTokenCookies
        self.adminUsers = adminUsers
    }

    /// Every contract on.
    public static let all = CompatibilityConfiguration(serviceStack: true, vaporTutorial: true, rentManager: true)

    /// Whether the account holds the `Admin` role: by its siwa id or its Apple user id, never its email.
    func isAdmin(_ user: UserRecord) -> Bool {
        guard !adminUsers.isEmpty else { return false }
        return adminUsers.contains(user.id.description.lowercased())
            || adminUsers.contains(user.appleUserID.rawValue.lowercased())
    }
}
