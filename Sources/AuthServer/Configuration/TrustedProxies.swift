public import HTTPTypes

/// The reverse proxies siwa runs behind (addresses and CIDR ranges, IPv4 and IPv6), and how the real client address is
/// read through them.
///
/// Only a connection from a trusted proxy may name the client: the one header the proxy writes (``header``:
/// `X-Forwarded-For` by default, or RFC 7239's `Forwarded`) is read from the right, skipping trusted hops, and the first
/// hop that is not a trusted proxy is the client, whatever its form (a client can put anything on the left of the list,
/// never on the right of what the proxy appended). The other header is never read: a proxy passes a header it does not
/// write through unchanged, so a client could fill it with any address. From anyone but a trusted proxy both are
/// ignored and the TCP peer is the client.
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

    /// The most characters of a hop that is no address kept as the client (what a session keeps of an address).
    static let maximumHopLength = 64

    /// The client's address: the peer, or, when the peer is a trusted proxy, the right-most hop in ``header`` that is
    /// not a trusted proxy, whatever its form. `192.0.2.1:4711` and `[2001:db8::1]:4711` are read as their address; a
    /// hop that is no address (`unknown`, an obfuscated `_hidden`, anything else) is the client as written, never an
    /// entry to its left, which the client could have written itself. When every hop is trusted, the left-most one.
    /// - Parameters:
    ///   - peer: the TCP peer's address.
    ///   - headers: the request's header fields.
    /// - Warning: the hop a trusted proxy names is believed as it is: list only proxies that append the peer they see.
    public func clientAddress(peer: String?, headers: HTTPFields) -> String? {
        guard let peer, contains(peer) else { return peer }
        var leftMostTrusted: String?
        let lines = headers[values: header == .forwarded ? Self.forwardedName : Self.xForwardedForName]
        // From the right, element by element, without collecting the list: the proxy's own entry comes first.
        for line in lines.reversed() {
            var rest = Substring(line)
            while !rest.isEmpty {
                let element: Substring
                if let comma = rest.utf8.lastIndex(of: UInt8(ascii: ",")) {
                    element = rest[rest.utf8.index(after: comma)...]
                    rest = rest[..<comma]
                } else {
                    element = rest
                    rest = rest[rest.endIndex...]
                }
                let hop = header == .forwarded ? Self.forNode(of: element) : element.trimmedBlanks
                // An empty list element is no hop (RFC 9110 §5.6.1).
                guard !hop.isEmpty else { continue }
                guard let (address, bytes) = Self.address(ofHop: hop) else {
                    return String(hop.prefix(Self.maximumHopLength))
                }
                guard ranges.contains(where: { $0.contains(bytes) }) else { return String(address) }
                leftMostTrusted = String(address)
            }
        }
        return leftMostTrusted ?? peer
    }

    private static let forwardedName = HTTPField.Name("Forwarded")!
    private static let xForwardedForName = HTTPField.Name("X-Forwarded-For")!

    /// The `for=` node of one `Forwarded` element, unquoted; `unknown` when the element names none (the proxy does
    /// not say who its client was). A quoted string is not read for commas or semicolons: only a client's part of the
    /// header could hold such a string, and reading it would let an unclosed quote swallow the proxy's element.
    static func forNode(of element: Substring) -> Substring {
        guard !element.trimmedBlanks.isEmpty else { return "" }
        var rest = element
        while !rest.isEmpty {
            let pair: Substring
            if let semicolon = rest.utf8.firstIndex(of: UInt8(ascii: ";")) {
                pair = rest[..<semicolon]
                rest = rest[rest.utf8.index(after: semicolon)...]
            } else {
                pair = rest
                rest = rest[rest.endIndex...]
            }
            guard let equals = pair.utf8.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let key = pair[..<equals].trimmedBlanks
            guard key.utf8.count == 3, key.lowercased() == "for" else { continue }
            var value = pair[pair.utf8.index(after: equals)...].trimmedBlanks
            if value.utf8.count >= 2, value.utf8.first == UInt8(ascii: "\""), value.utf8.last == UInt8(ascii: "\"") {
                value = value.dropFirst().dropLast()
            }
            return value.isEmpty ? "unknown" : value
        }
        return "unknown"
    }

    /// The address of a hop and its bytes: `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`, `[2001:db8::1]`,
    /// `[2001:db8::1]:4711` (a port of digits, or RFC 7239's obfuscated `_name`); `nil` for anything else.
    static func address(ofHop hop: Substring) -> (address: Substring, bytes: [UInt8])? {
        let utf8 = hop.utf8
        if utf8.first == UInt8(ascii: "[") {
            guard let close = utf8.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            let inner = hop[utf8.index(after: utf8.startIndex)..<close]
            let after = hop[utf8.index(after: close)...]
            guard after.isEmpty || isPort(after), inner.utf8.contains(UInt8(ascii: ":")),
                let bytes = parse(inner)
            else { return nil }
            return (inner, bytes)
        }
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")) else {
            return parseIPv4(hop).map { (hop, $0) }
        }
        if utf8[utf8.index(after: colon)...].contains(UInt8(ascii: ":")) {
            return parse(hop).map { (hop, $0) }  // a bare IPv6 address
        }
        let host = hop[..<colon]
        guard isPort(hop[colon...]), let bytes = parseIPv4(host) else { return nil }
        return (host, bytes)
    }

    /// `:` and a port: one to five digits, or an obfuscated `_` name of letters, digits, `.`, `_` and `-`.
    private static func isPort(_ text: Substring) -> Bool {
        var bytes = text.utf8.makeIterator()
        guard bytes.next() == UInt8(ascii: ":"), let first = bytes.next() else { return false }
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        if isDigit(first) {
            var count = 1
            while let byte = bytes.next() {
                guard isDigit(byte), count < 5 else { return false }
                count += 1
            }
            return true
        }
        guard first == UInt8(ascii: "_") else { return false }
        var count = 0
        while let byte = bytes.next() {
            let isLetter = (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
            guard
                isLetter || isDigit(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: "-")
            else { return false }
            count += 1
        }
        return count > 0
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

extension StringProtocol {
    var trimmingBlanks: String {
        String(Substring(self).trimmedBlanks)
    }
}

extension Substring {
    /// Without the spaces and tabs at either end.
    var trimmedBlanks: Substring {
        var slice = self
        while let first = slice.utf8.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
            slice = slice[slice.utf8.index(after: slice.startIndex)...]
        }
        while let last = slice.utf8.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") {
            slice = slice[..<slice.utf8.index(before: slice.endIndex)]
        }
        return slice
    }
}
