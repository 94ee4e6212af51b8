#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// siwa's own id of a user (a UUID), the `sub` of siwa's access tokens.
public struct UserID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: UUID

    /// - Parameter rawValue: The UUID; a new random one when `nil`.
    public init(_ rawValue: UUID? = nil) {
        self.rawValue = rawValue ?? .random()
    }

    /// Parses the lower-case UUID text form.
    public init?(_ text: String) {
        guard let uuid = UUID(text: text) else { return nil }
        self.rawValue = uuid
    }

    public var description: String { rawValue.lowercasedText }
}

/// The id of a session: one chain of rotating refresh tokens (a "family"), the `sid` of its access tokens.
public struct SessionID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: UUID

    /// - Parameter rawValue: The UUID; when `nil`, a new time-ordered one (``Foundation/UUID/timeOrdered()``), so
    ///   that a sign-in's new session and its first refresh token are appended to the indexes keyed by session id
    ///   rather than each dirtying a random page. A session id is not a secret and grants nothing: it goes to its
    ///   holder (inside signed tokens as `sid`, and as ServiceStack's `sessionId`) and to operators, and what it
    ///   reveals, when the session started, they know anyway.
    public init(_ rawValue: UUID? = nil) {
        self.rawValue = rawValue ?? .timeOrdered()
    }

    public init?(_ text: String) {
        guard let uuid = UUID(text: text) else { return nil }
        self.rawValue = uuid
    }

    public var description: String { rawValue.lowercasedText }
}
