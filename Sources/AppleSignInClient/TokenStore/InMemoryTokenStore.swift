import Synchronization

/// A token store that forgets everything when the process ends: for tests, previews and server-side tools.
public final class InMemoryTokenStore: TokenStore {
    private let contents: Mutex<TokenStoreContents>

    /// Creates a store holding `contents`.
    public init(_ contents: TokenStoreContents = .empty) {
        self.contents = Mutex(contents)
    }

    public func read() -> TokenStoreContents {
        contents.withLock { $0 }
    }

    public func write(_ contents: TokenStoreContents) {
        self.contents.withLock { $0 = contents }
    }
}
