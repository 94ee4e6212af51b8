/// siwa's tokens for one session: a short-lived access token (a JWT) and the refresh token that rotates on every use.
///
/// Prints redacted, so that logging a value never leaks a token.
/// - Warning: both are bearer credentials.
public struct SessionTokens: Codable, Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// Sent as `Authorization: Bearer …`.
    public var accessToken: String
    /// Exchanged at `POST /auth/refresh` for new tokens; works once.
    public var refreshToken: String

    /// Creates tokens.
    public init(accessToken: String, refreshToken: String) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
    }

    public var description: String { "SessionTokens(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
