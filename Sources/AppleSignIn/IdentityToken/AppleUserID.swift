/// Apple's stable user identifier, the `sub` claim: the same for one Apple ID across all apps of one team.
public struct AppleUserID: Hashable, Sendable, CustomStringConvertible, Codable {
    public let rawValue: String

    /// Wraps a user id.
    /// - Parameter rawValue: the `sub` as Apple sent it.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }
}
