/// Apple's stable user identifier, the `sub` claim: the same for one Apple ID across all apps of one team.
public struct AppleUserID: Hashable, Sendable, CustomStringConvertible, Codable {
    public let rawValue: String

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }
}
