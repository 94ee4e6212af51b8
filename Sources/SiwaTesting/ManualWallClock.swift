public import AppleSignIn
import Synchronization

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A wall clock that tests set and advance.
public final class ManualWallClock: WallClock {
    private let current: Mutex<Date>

    public init(_ now: Date) {
        self.current = Mutex(now)
    }

    /// A clock at `seconds` since 1970.
    public convenience init(unixTime seconds: TimeInterval) {
        self.init(Date(timeIntervalSince1970: seconds))
    }

    public var now: Date { current.withLock { $0 } }

    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }

    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
