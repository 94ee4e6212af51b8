/// The key one client's limits count under, for the rate limits (``RateLimiter``) and the per-address
/// connection cap (``ConnectionLimiter``) alike: an IPv4 address (an IPv4-mapped IPv6 address is its IPv4 address), or
/// the /64 of an IPv6 address, the block a subscriber usually holds whole, so that walking through it buys neither a
/// new budget nor new connections. A hop that is no address (a proxy's `unknown`, an obfuscated name) is its own key.
enum ClientKey {
    /// The key of `address`.
    static func of(_ address: String) -> String {
        guard let bytes = AddressRanges.parse(address) else { return address }
        if bytes.count == 4 {
            // Written as IPv4 already: kept as it is, with no formatting per request.
            guard address.utf8.contains(UInt8(ascii: ":")) else { return address }
            return "\(bytes[0]).\(bytes[1]).\(bytes[2]).\(bytes[3])"
        }
        let groups = stride(from: 0, to: 8, by: 2).map {
            String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
        }
        return groups.joined(separator: ":") + "::/64"
    }
}
