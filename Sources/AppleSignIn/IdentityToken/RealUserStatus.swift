/// Apple's `real_user_status` claim: how likely the user is a real person (native sign-in only).
public struct RealUserStatus: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int

    /// Wraps the claim's value; values Apple has not documented are kept as they are.
    /// - Parameter rawValue: the integer Apple sent.
    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// 0: the platform cannot tell (not iOS, or an old iOS).
    public static let unsupported = RealUserStatus(rawValue: 0)
    /// 1: the system could not determine.
    public static let unknown = RealUserStatus(rawValue: 1)
    /// 2: the user appears to be a real person.
    public static let likelyReal = RealUserStatus(rawValue: 2)

    public var description: String {
        switch rawValue {
        case 0: return "unsupported"
        case 1: return "unknown"
        case 2: return "likelyReal"
        default: return "status(\(rawValue))"
        }
    }
}
