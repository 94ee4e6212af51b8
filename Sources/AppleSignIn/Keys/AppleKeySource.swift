#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Where ``AppleKeyCache`` gets Apple's key set from.
public protocol AppleKeySource: Sendable {
    /// Fetches the key set and how long it may be cached (`nil`: the cache's default).
    /// - Returns: the key set, and its `max-age` in seconds when the source knows one.
    /// - Throws: ``AppleSignInError`` when no key set could be had; ``AppleKeyCache`` then keeps serving the keys it
    ///   holds.
    func fetchKeySet() async throws(AppleSignInError) -> (keySet: AppleKeySet, maxAge: TimeInterval?)
}

/// A fixed key set: for offline checks of old tokens against the keys of their day (`siwa verify --jwks FILE`), and
/// for a configured set used instead of Apple's key endpoint (``ConfiguredAppleKeySet/Use/instead``).
public struct StaticAppleKeySource: AppleKeySource {
    public let keySet: AppleKeySet

    /// Makes a source that always answers `keySet`.
    /// - Parameter keySet: the keys.
    public init(keySet: AppleKeySet) {
        self.keySet = keySet
    }

    /// Answers the fixed set.
    /// - Returns: ``keySet``, with no `max-age` (the cache's default applies).
    /// - Throws: never: the set is always there; the signature is the protocol's.
    public func fetchKeySet() async throws(AppleSignInError) -> (keySet: AppleKeySet, maxAge: TimeInterval?) {
        (keySet, nil)
    }
}
