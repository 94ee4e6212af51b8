/// The outcome of a sign-in: the account, and whether the server just created it.
///
/// The tokens themselves stay in the client's `TokenStore`; `SiwaClient.send(_:)` attaches them.
public struct Session: Sendable, Equatable {
    /// The signed-in account.
    public let user: User
    /// True when this sign-in created the account (show onboarding).
    public let isNewUser: Bool

    /// Creates a session value.
    public init(user: User, isNewUser: Bool) {
        self.user = user
        self.isNewUser = isNewUser
    }
}
