public import HTTPTypes

/// The reverse proxies siwa runs behind (addresses and CIDR ranges, IPv4 and IPv6), and how the real client address is
/// read through them.
///
/// Only a connection from a trusted proxy may name the client: the one header the proxy writes (``header``:
/// `X-Forwarded-For` by default, or RFC 7239's `Forwarded`) is read from the right, skipping trusted hops, and the first
/// untrusted address is the client (a client can put any address on the left of the list, never on the right of what
/// the proxy appended). The other header is never read: a proxy passes a header it does not write through unchanged,
/// so a client could fill it with any address. From anyone but a trusted proxy both are ignored and the TCP peer is the
/// client.
public struct TrustedProxies: Sendable, Hashable {
    /// The header the proxies write the client's address into.
    public enum Header: String, Sendable, Hashable {
        /// `X-Forwarded-For` (nginx's `$proxy_add_x_forwarded_for`, HAProxy's `option forwardfor`, most load balancers).
        case xForwardedFor = "x-forwarded-for"
        /// RFC 7239 `Forwarded: for=…`.
        case forwarded
    }

    /// Which header to read (default `X-Forwarded-For`).
    public var header = Header.xForwardedFor

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

    /// No trusted proxy: the TCP peer is always the client.
    public static let none = TrustedProxies(ranges: [])

    init(ranges: [Range], header: Header = .xForwardedFor) {
        self.ranges = ranges
        self.header = header
    }

    /// Parses `127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`, ...
    /// - Throws: ``Failure`` naming the entry that is not an address or range.
    public init(_ entries: [String], header: Header = .xForwardedFor) throws(Failure) {
        self.header = header
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

    /// A trusted-proxy entry that is not an address or a CIDR range.
    public struct Failure: Error, CustomStringConvertible {
        public let entry: String
        public var description: String {
            "'\(entry)' is not an IP address or CIDR range (e.g. 127.0.0.1, 10.0.0.0/8, ::1, fd00::/8)"
        }
    }

    public var isEmpty: Bool { ranges.isEmpty }

    /// Whether `address` (textual) is a trusted proxy.
    public func contains(_ address: String) -> Bool {
        guard !ranges.isEmpty, let bytes = Self.parse(address) else { return false }
        return ranges.contains { $0.contains(bytes) }
    }

    /// The client's address: the peer, or, when the peer is a trusted proxy, the right-most untrusted address the
    /// proxies forwarded in ``header``. When every hop is trusted, the left-most one.
    public func clientAddress(peer: String?, headers: HTTPFields) -> String? {
        guard let peer, contains(peer) else { return peer }
        let hops = Self.forwardedFor(headers, header: header)
        guard !hops.isEmpty else { return peer }
        for hop in hops.reversed() where !contains(hop) {
            return hop
        }
        return hops.first
    }

    /// The `for=` addresses of `Forwarded`, or the addresses of `X-Forwarded-For`, in order, across every header line.
    /// Entries that are not IP addresses (`unknown`, obfuscated names) are skipped.
    static func forwardedFor(_ headers: HTTPFields, header: Header) -> [String] {
        if header == .forwarded {
            let forwarded = headers[values: HTTPField.Name("Forwarded")!]
            var hops: [String] = []
            for line in forwarded {
                for element in line.split(separator: ",") {
                    for pair in element.split(separator: ";") {
                        let keyValue = pair.split(separator: "=", maxSplits: 1)
                        guard keyValue.count == 2, keyValue[0].trimmingBlanks.lowercased() == "for" else { continue }
                        var value = keyValue[1].trimmingBlanks
                        if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                            value = String(value.dropFirst().dropLast())
                        }
                        if let address = address(ofNode: value) { hops.append(address) }
                    }
                }
            }
            return hops
        }
        var hops: [String] = []
        for line in headers[values: HTTPField.Name("X-Forwarded-For")!] {
            for entry in line.split(separator: ",") {
                let value = entry.trimmingBlanks
                if parse(value) != nil { hops.append(value) }
            }
        }
        return hops
    }

    /// The address of a `Forwarded` node: `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]`, `[2001:db8::1]:4711`.
    private static func address(ofNode node: String) -> String? {
        if node.hasPrefix("["), let close = node.firstIndex(of: "]") {
            let inner = String(node[node.index(after: node.startIndex)..<close])
            return parse(inner) != nil ? inner : nil
        }
        let host = node.split(separator: ":", maxSplits: 1).first.map(String.init) ?? node
        return parse(host) != nil && !host.contains(":") ? host : nil
    }

    /// The bytes of a textual IPv4 or IPv6 address (IPv4-mapped IPv6 addresses as their IPv4 bytes).
    static func parse(_ text: String) -> [UInt8]? {
        if !text.utf8.contains(UInt8(ascii: ":")) { return parseIPv4(Substring(text)) }
        guard let bytes = parseIPv6(text) else { return nil }
        // ::ffff:a.b.c.d is the IPv4 address a.b.c.d (how a dual-stack socket reports IPv4 peers).
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return Array(bytes[12..<16])
        }
        return bytes
    }

    /// Four decimal numbers of one to three digits, each at most 255, separated by dots; read byte by byte (it runs for
    /// every rate-limited request's client address).
    private static func parseIPv4(_ text: Substring) -> [UInt8]? {
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

    private static func parseIPv6(_ text: String) -> [UInt8]? {
        var text = Substring(text)
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

extension StringProtocol {
    var trimmingBlanks: String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
