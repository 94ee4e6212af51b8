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
    /// siwa user ids or email addresses that hold the `Admin` role (ServiceStack's `/users`, RentManager's `role`).
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

    /// Whether the account holds the `Admin` role.
    func isAdmin(userID: String, email: String?) -> Bool {
        adminUsers.contains(userID) || adminUsers.contains(userID.lowercased())
            || email.map { adminUsers.contains($0.lowercased()) } == true
    }
}
