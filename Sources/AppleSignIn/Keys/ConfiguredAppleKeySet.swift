public import Logging

/// A copy of Apple's key set given in configuration, and whether it replaces Apple's key endpoint or backs it up.
///
/// For deployments that cannot reach Apple (air-gapped, or keys pinned on purpose) and for those that want sign-ins
/// to keep verifying when Apple's key endpoint is down.
/// - Warning: Apple rotates its keys. With ``Use/instead``, a token signed by a key Apple added after the copy was
///   made fails as `unknownKey` until the copy is updated; `siwa doctor --apple` names the missing `kid`s.
public struct ConfiguredAppleKeySet: Sendable {
    /// How the configured set is used.
    public enum Use: String, Sendable, CaseIterable {
        /// Apple's key endpoint first; the configured set only while it cannot be reached (the default).
        case fallback
        /// The configured set only: Apple's key endpoint is never called.
        case instead
    }

    /// The keys.
    public var keySet: AppleKeySet
    /// How they are used.
    public var use: Use

    /// Makes a configured set.
    /// - Parameters:
    ///   - keySet: the copy of Apple's keys, usually parsed with ``AppleKeySet/init(configuredJWKS:)``.
    ///   - use: whether it backs up Apple's key endpoint (the default) or replaces it.
    public init(keySet: AppleKeySet, use: Use = .fallback) {
        self.keySet = keySet
        self.use = use
    }

    /// The key source for a cache: `endpoint` (Apple's `/auth/keys`) backed by this set, or this set alone.
    /// - Parameters:
    ///   - endpoint: Apple's key endpoint, never called with ``Use/instead``.
    ///   - logger: where a fallback is reported.
    /// - Returns: a ``FallbackAppleKeySource`` over `endpoint` for ``Use/fallback``, a ``StaticAppleKeySource`` for
    ///   ``Use/instead``.
    public func keySource(
        fetching endpoint: any AppleKeySource,
        logger: Logger = Logger(label: "siwa.apple-keys")
    ) -> any AppleKeySource {
        switch use {
        case .fallback: FallbackAppleKeySource(primary: endpoint, fallback: keySet, logger: logger)
        case .instead: StaticAppleKeySource(keySet: keySet)
        }
    }
}

extension AppleSignInConfiguration {
    /// The key source for this configuration: Apple's key endpoint `endpoint`, backed by or replaced with
    /// ``configuredKeySet`` when there is one.
    /// - Parameters:
    ///   - endpoint: Apple's key endpoint (``AppleKeysEndpoint``).
    ///   - logger: where a fallback is reported.
    /// - Returns: `endpoint` itself without a configured set, else the source
    ///   ``ConfiguredAppleKeySet/keySource(fetching:logger:)`` makes.
    public func keySource(
        fetching endpoint: any AppleKeySource,
        logger: Logger = Logger(label: "siwa.apple-keys")
    ) -> any AppleKeySource {
        configuredKeySet?.keySource(fetching: endpoint, logger: logger) ?? endpoint
    }
}
