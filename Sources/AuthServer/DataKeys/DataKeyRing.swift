public import Crypto
import Foundation

/// The data keys: the first seals, every one opens (``DataSealer``). Older keys stay in the ring after a rotation until
/// no sealed data uses them.
///
/// Written as a key file (one base64 key a line, the first seals; `#` comments and blank lines allowed, so a file of
/// one key, as siwa 0.3 wrote it, is a ring of one) or as a comma-separated list (`SIWA_DATA_KEY`, the first seals).
/// Printing a ring shows the key ids only.
public struct DataKeyRing: Sendable, CustomStringConvertible {
    /// One key and its id.
    public struct Key: Sendable, CustomStringConvertible {
        public let id: DataKeyID
        let key: SymmetricKey

        init(_ key: SymmetricKey) {
            self.id = DataKeyID(of: key)
            self.key = key
        }

        public var description: String { "data key \(id)" }
    }

    /// A ring that cannot be used, with where it goes wrong (never the key material).
    public struct Malformed: Error, CustomStringConvertible {
        /// `line 3`, `entry 2`, or `nil` for the whole ring.
        public let position: String?
        public let reason: String

        public var description: String { position.map { "\($0): \(reason)" } ?? reason }
    }

    /// The keys, the sealing one first.
    public let keys: [Key]

    /// The key that seals.
    public var primary: Key { keys[0] }

    /// The key ids in ring order.
    public var ids: [DataKeyID] { keys.map(\.id) }

    /// A ring of `keys`, the first sealing.
    /// - Throws: ``Malformed`` for no key, a key that is not 256 bits, or the same key twice.
    public init(_ keys: [SymmetricKey]) throws(Malformed) {
        try self.init(keys.map { ($0, nil) })
    }

    private init(_ entries: [(key: SymmetricKey, position: String?)]) throws(Malformed) {
        guard !entries.isEmpty else { throw Malformed(position: nil, reason: "holds no key") }
        var keys: [Key] = []
        var seen: [DataKeyID: String] = [:]
        for (index, entry) in entries.enumerated() {
            let position = entry.position ?? "key \(index + 1)"
            guard entry.key.bitCount == 256 else {
                throw Malformed(position: position, reason: "expected a 256-bit key")
            }
            let key = Key(entry.key)
            if let earlier = seen[key.id] {
                throw Malformed(position: position, reason: "the same key as \(earlier)")
            }
            seen[key.id] = position
            keys.append(key)
        }
        self.keys = keys
    }

    /// A ring of one key.
    public init(key: SymmetricKey) {
        self.keys = [Key(key)]
    }

    /// The key with id `id`, if the ring holds it.
    public func key(_ id: DataKeyID) -> Key? { keys.first { $0.id == id } }

    /// This ring with `key` first (sealing from now on) and the others after it.
    public func adding(_ key: SymmetricKey) throws(Malformed) -> DataKeyRing {
        try DataKeyRing([key] + keys.map(\.key))
    }

    /// This ring without the key `id` (which must not be the sealing one).
    public func removing(_ id: DataKeyID) -> DataKeyRing? {
        guard id != primary.id, key(id) != nil else { return nil }
        return DataKeyRing(unchecked: keys.filter { $0.id != id })
    }

    private init(unchecked keys: [Key]) {
        self.keys = keys
    }

    public var description: String {
        "data keys \(ids.map(\.description).joined(separator: ", ")) (\(primary.id) seals)"
    }

    // MARK: Reading and writing

    /// Reads a key file: one base64 key a line, the first seals; `#` comments and blank lines are skipped.
    /// - Throws: ``Malformed`` naming the line.
    public static func parse(file text: String) throws(Malformed) -> DataKeyRing {
        var entries: [(SymmetricKey, String?)] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
            entries.append((try decode(trimmed, position: "line \(index + 1)"), "line \(index + 1)"))
        }
        return try DataKeyRing(entries)
    }

    /// Reads a comma-separated list of base64 keys (`SIWA_DATA_KEY`), the first sealing.
    /// - Throws: ``Malformed`` naming the entry.
    public static func parse(list text: String) throws(Malformed) -> DataKeyRing {
        var entries: [(SymmetricKey, String?)] = []
        for (index, entry) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let position = "entry \(index + 1)"
            entries.append(
                (try decode(entry.trimmingCharacters(in: .whitespacesAndNewlines), position: position), position)
            )
        }
        return try DataKeyRing(entries)
    }

    /// The key file `path`, or `nil` when there is no such file.
    /// - Throws: ``Malformed`` naming the file and line.
    public static func read(file path: String) throws(Malformed) -> DataKeyRing? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            return try parse(file: String(decoding: data, as: UTF8.self))
        } catch {
            throw Malformed(position: error.position.map { "\(path) \($0)" } ?? path, reason: error.reason)
        }
    }

    /// The ring as a key file, each key under a comment with its id.
    /// - Warning: The text holds the keys: write it to a file only its owner reads.
    public var fileText: String {
        var text = "# siwa data keys: one base64 key a line; the first seals, every one opens (siwa keys data-keys).\n"
        for key in keys {
            text += "# \(key.id)\(key.id == primary.id ? " (seals)" : "")\n\(Self.base64(key.key))\n"
        }
        return text
    }

    /// The key `id` alone, under `comments` (each written as a `#` line): a key file of one key, and lines that, added
    /// to the end of a key file, put the key back in its ring as one that only opens.
    /// - Returns: `nil` when the ring does not hold `id`.
    /// - Warning: The text holds the key: write it to a file only its owner reads.
    public func keyFileText(of id: DataKeyID, comments: [String]) -> String? {
        guard let key = key(id) else { return nil }
        return comments.map { "# \($0)\n" }.joined() + Self.base64(key.key) + "\n"
    }

    /// The ring as a `SIWA_DATA_KEY` value: the base64 keys, comma-separated, the sealing one first.
    /// - Warning: The text holds the keys.
    public var listText: String { keys.map { Self.base64($0.key) }.joined(separator: ",") }

    private static func base64(_ key: SymmetricKey) -> String {
        key.withUnsafeBytes { Data($0).base64EncodedString() }
    }

    private static func decode(_ text: String, position: String) throws(Malformed) -> SymmetricKey {
        guard let data = Data(base64Encoded: text), data.count == 32 else {
            throw Malformed(
                position: position,
                reason: "expected base64 of 32 random bytes (openssl rand -base64 32)"
            )
        }
        return SymmetricKey(data: data)
    }
}
