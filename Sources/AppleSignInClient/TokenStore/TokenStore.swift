/// Where a `SiwaClient` keeps its session tokens and Apple's first-time profile between launches.
///
/// Implementations: `KeychainTokenStore` (Apple platforms), `FileTokenStore` (a 0600 file, written atomically) and
/// `InMemoryTokenStore`. The client reads once and then writes through, so give each store to one client only.
/// Methods are synchronous so that the client's writes reach the store in the order it makes them.
/// - Warning: the contents are bearer credentials: keep them where only this app can read them.
public protocol TokenStore: Sendable {
    /// Reads what is stored; `TokenStoreContents.empty` when nothing is.
    /// - Throws: `SiwaClientError` with code `.tokenStore` when the store cannot be read or decoded.
    func read() throws -> TokenStoreContents

    /// Replaces what is stored, all at once: a reader sees the old contents or the new, never a mix. Writing
    /// `TokenStoreContents.empty` removes the stored item.
    /// - Throws: `SiwaClientError` with code `.tokenStore` when the store cannot be written.
    func write(_ contents: TokenStoreContents) throws
}
