#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Where ``AppleKeyCache`` gets Apple's key set from.
public protocol AppleKeySource: Sendable {
    /// Fetches the key set and how long it may be cached (`nil`: the cache's default).
    func fetchKeySet() async throws(AppleSignInError) -> (keySet: AppleKeySet, maxAge: TimeInterval?)
}

/// A fixed key set: for offline checks of old tokens against the keys of their day (`siwa verify --jwks FILE`), and
/// for a configured set used instead of Apple's key endpoint (``ConfiguredAppleKeySet/Use/instead``).
public struct StaticAppleKeySource: AppleKeySource {
    public let keySet: AppleKeySet

    public init(keySet: AppleKeySet) {
        self.keySet = keySet
    }

    public func fetchKeySet() async throws(AppleSignInError) -> (keySet: AppleKeySet, maxAge: TimeInterval?) {
        (keySet, nil)
    }
}
