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

    /// The proxies' addresses and ranges.
    let addresses: AddressRanges

    /// No trusted proxy: the TCP peer is always the client.
    public static let none = TrustedProxies(addresses: .none)

    init(addresses: AddressRanges, header: Header = .xForwardedFor) {
        self.addresses = addresses
        self.header = header
    }

    /// Parses `127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`, ...
    /// - Throws: ``Failure`` naming the entry that is not an address or range.
    public init(_ entries: [String], header: Header = .xForwardedFor) throws(Failure) {
        self.header = header
        self.addresses = try AddressRanges(entries)
    }

    /// A trusted-proxy entry that is not an address or a CIDR range.
    public typealias Failure = AddressRanges.Failure

    public var isEmpty: Bool { addresses.isEmpty }

    /// Whether `address` (textual) is a trusted proxy.
    public func contains(_ address: String) -> Bool {
        addresses.contains(address)
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
                guard addresses.contains(bytes: bytes) else { return String(address) }
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
                let bytes = AddressRanges.parse(inner)
            else { return nil }
            return (inner, bytes)
        }
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")) else {
            return AddressRanges.parseIPv4(hop).map { (hop, $0) }
        }
        if utf8[utf8.index(after: colon)...].contains(UInt8(ascii: ":")) {
            return AddressRanges.parse(hop).map { (hop, $0) }  // a bare IPv6 address
        }
        let host = hop[..<colon]
        guard isPort(hop[colon...]), let bytes = AddressRanges.parseIPv4(host) else { return nil }
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
