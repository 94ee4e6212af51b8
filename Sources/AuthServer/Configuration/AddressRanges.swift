/// A list of IP addresses and CIDR ranges, IPv4 and IPv6 (`127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`): the trusted
/// proxies (``TrustedProxies``) and the networks the admin routes answer (``AuthServerConfiguration/adminNetworks``).
/// An IPv4-mapped IPv6 address is its IPv4 address.
public struct AddressRanges: Sendable, Hashable {
    /// A range of addresses: `prefix` bits of `bytes` (4 bytes for IPv4, 16 for IPv6).
    struct Range: Sendable, Hashable {
        var bytes: [UInt8]
        var prefix: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var remaining = prefix
            for index in bytes.indices where remaining > 0 {
                let bits = min(8, remaining)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if address[index] & mask != bytes[index] & mask { return false }
                remaining -= bits
            }
            return true
        }
    }

    let ranges: [Range]

    /// No address at all.
    public static let none = AddressRanges(ranges: [])

    init(ranges: [Range]) {
        self.ranges = ranges
    }

    /// Parses `127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`, ... (blank entries are skipped).
    /// - Throws: ``Failure`` naming the entry that is not an address or range.
    public init(_ entries: [String]) throws(Failure) {
        var ranges: [Range] = []
        for entry in entries {
            let trimmed = entry.trimmingBlanks
            guard !trimmed.isEmpty else { continue }
            let parts = trimmed.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let bytes = Self.parse(String(parts[0])) else { throw Failure(entry: trimmed) }
            var prefix = bytes.count * 8
            if parts.count == 2 {
                guard let bits = Int(parts[1]), bits >= 0, bits <= prefix else { throw Failure(entry: trimmed) }
                prefix = bits
            }
            ranges.append(Range(bytes: bytes, prefix: prefix))
        }
        self.ranges = ranges
    }

    /// An entry that is not an address or a CIDR range.
    public struct Failure: Error, CustomStringConvertible {
        public let entry: String
        public var description: String {
            "'\(entry)' is not an IP address or CIDR range (e.g. 127.0.0.1, 10.0.0.0/8, ::1, fd00::/8)"
        }
    }

    /// Whether the list is empty.
    public var isEmpty: Bool { ranges.isEmpty }

    /// Whether `address` (textual) is in one of the ranges; `false` for anything that is not an address.
    public func contains(_ address: String) -> Bool {
        guard !ranges.isEmpty, let bytes = Self.parse(address) else { return false }
        return contains(bytes: bytes)
    }

    /// Whether an address's bytes (4 for IPv4, 16 for IPv6) are in one of the ranges.
    func contains(bytes: [UInt8]) -> Bool {
        ranges.contains { $0.contains(bytes) }
    }

    /// The bytes of a textual IPv4 or IPv6 address (IPv4-mapped IPv6 addresses as their IPv4 bytes).
    static func parse(_ text: String) -> [UInt8]? {
        parse(Substring(text))
    }

    /// The bytes of a textual IPv4 or IPv6 address (IPv4-mapped IPv6 addresses as their IPv4 bytes).
    static func parse(_ text: Substring) -> [UInt8]? {
        if !text.utf8.contains(UInt8(ascii: ":")) { return parseIPv4(text) }
        guard let bytes = parseIPv6(text) else { return nil }
        // ::ffff:a.b.c.d is the IPv4 address a.b.c.d (how a dual-stack socket reports IPv4 peers).
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return Array(bytes[12..<16])
        }
        return bytes
    }

    /// Four decimal numbers of one to three digits, each at most 255, separated by dots; read byte by byte (it runs for
    /// every rate-limited request's client address).
    static func parseIPv4(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(4)
        var value = 0
        var digits = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, value <= 255, bytes.count < 3 else { return nil }
                bytes.append(UInt8(value))
                (value, digits) = (0, 0)
            } else if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") && digits < 3 {
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
            } else {
                return nil
            }
        }
        guard digits > 0, value <= 255, bytes.count == 3 else { return nil }
        bytes.append(UInt8(value))
        return bytes
    }

    private static func parseIPv6(_ text: Substring) -> [UInt8]? {
        var text = text
        if let zone = text.firstIndex(of: "%") { text = text[..<zone] }  // fe80::1%eth0
        let halves = text.split(separator: "::", omittingEmptySubsequences: false).map(String.init)
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt8]? {
            guard !part.isEmpty else { return [] }
            var bytes: [UInt8] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if index == pieces.count - 1, piece.contains(".") {
                    guard let v4 = parseIPv4(piece) else { return nil }
                    bytes += v4
                    continue
                }
                guard !piece.isEmpty, piece.count <= 4, let value = UInt16(piece, radix: 16) else { return nil }
                bytes += [UInt8(value >> 8), UInt8(value & 0xFF)]
            }
            return bytes
        }
        guard let head = groups(halves[0]) else { return nil }
        if halves.count == 1 { return head.count == 16 ? head : nil }
        guard let tail = groups(halves[1]), head.count + tail.count < 16 else { return nil }
        return head + Array(repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}
