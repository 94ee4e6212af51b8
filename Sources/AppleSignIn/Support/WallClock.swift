#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The source of the current wall-clock time, injected wherever `iat`, `exp` or a cache age is judged.
///
/// Logic never calls `Date()` itself, so tests can set time (real Apple tokens from 2019 verify at a clock set
/// inside their lifetime) and skew it.
public protocol WallClock: Sendable {
    /// The current time.
    var now: Date { get }
}

/// The system's real time.
public struct SystemWallClock: WallClock {
    /// Makes the system clock.
    public init() {}
    public var now: Date { Date() }
}
