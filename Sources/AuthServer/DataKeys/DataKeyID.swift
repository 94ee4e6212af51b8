import AppleSignIn
public import Crypto

/// The id of a data key: the first 8 bytes of SHA-256 over a fixed label and the key, shown as 16 lower-case hex
/// characters.
///
/// Derived from the key, so that no separate id setting can drift from it; sealed data carries it in its header
/// (``DataSealer``), and the operator commands name keys by it. It says nothing usable about the key (a hash of 256
/// random bits).
public struct DataKeyID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The 8 bytes.
    public let bytes: [UInt8]

    /// The byte count of an id.
    public static let byteCount = 8
    private static let label = Array("siwa data key id v1".utf8)

    /// The id of `key`.
    public init(of key: SymmetricKey) {
        var hash = SHA256()
        hash.update(data: Self.label)
        key.withUnsafeBytes { hash.update(bufferPointer: $0) }
        bytes = Array(hash.finalize().prefix(Self.byteCount))
    }

    /// An id as stored in a sealed header; `nil` unless exactly ``byteCount`` bytes.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = Array(bytes)
    }

    /// An id as printed: 16 hex characters (either case); `nil` otherwise.
    public init?(_ text: String) {
        guard let bytes = Hex.decode(text) else { return nil }
        self.init(bytes: bytes)
    }

    public var description: String { Hex.encode(bytes) }

    public static func < (lhs: DataKeyID, rhs: DataKeyID) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }
}
