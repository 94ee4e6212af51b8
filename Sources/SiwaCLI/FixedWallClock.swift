import AppleSignIn
import Foundation

/// A wall clock stopped at one time: `siwa verify --now` checks an old token against the moment it was used.
struct FixedWallClock: WallClock {
    let now: Date
}
