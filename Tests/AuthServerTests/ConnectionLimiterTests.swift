import NIOCore
import NIOEmbedded
import Testing

@testable import AuthServer

/// The per-address connection cap counts a client as the rate limits do: an IPv6 peer by its /64 (the block one
/// subscriber usually holds whole), an IPv4-mapped IPv6 peer as its IPv4 address. Loopback offers no second IPv6
/// address to connect from, so connections come from embedded channels with the peer address set.
@Suite struct ConnectionLimiterTests {
    private static func limiter(perAddress: Int) -> ConnectionLimiter {
        var limits = AuthServerConfiguration.ConnectionLimits()
        limits.maximumConnectionsPerAddress = perAddress
        return ConnectionLimiter(limits: limits, trustedProxies: try! TrustedProxies(["2001:db8:ffff::/48"]))
    }

    @Test func addressesOfOneIPv6SlashSixtyFourShareTheCap() {
        let limiter = Self.limiter(perAddress: 2)
        let first = limiter.capKey(of: "2001:db8:1:2::a")
        let second = limiter.capKey(of: "2001:db8:1:2:ffff:ffff:ffff:b")
        let third = limiter.capKey(of: "2001:db8:1:2::c")
        #expect(first == second && second == third, "one /64, one key: \(String(describing: first))")
        #expect(limiter.admit(capKey: first))
        #expect(limiter.admit(capKey: second))
        #expect(!limiter.admit(capKey: third), "a third address of the same /64 is over the cap of 2")
        let neighbour = limiter.capKey(of: "2001:db8:1:3::a")
        #expect(neighbour != first)
        #expect(limiter.admit(capKey: neighbour), "the next /64 has a cap of its own")
        limiter.release(capKey: first)
        #expect(limiter.admit(capKey: third), "a closed connection frees its place in the /64")
    }

    @Test func anIPv4MappedPeerCountsAsItsIPv4Address() {
        let limiter = Self.limiter(perAddress: 1)
        let mapped = limiter.capKey(of: "::ffff:192.0.2.7")
        #expect(mapped == limiter.capKey(of: "192.0.2.7"))
        #expect(mapped == "192.0.2.7")
        #expect(limiter.admit(capKey: mapped))
        #expect(!limiter.admit(capKey: limiter.capKey(of: "192.0.2.7")))
        #expect(RateLimiter.bucketKey("::ffff:192.0.2.7") == "192.0.2.7", "the rate limits count it alike")
        #expect(limiter.capKey(of: "2001:db8:ffff:1::1") == nil, "a trusted proxy has no per-address cap")
    }

    /// Connections through ``ConnectionGuard``, the handler every accepted connection gets.
    @Test func connectionsFromOneSlashSixtyFourAreClosedOverTheCap() throws {
        let limiter = Self.limiter(perAddress: 1)
        let first = try Self.connect(limiter, from: "2001:db8:1:2::a")
        #expect(first.isActive)
        let second = try Self.connect(limiter, from: "2001:db8:1:2::b")
        #expect(!second.isActive, "another address of the same /64 is closed at once")
        let neighbour = try Self.connect(limiter, from: "2001:db8:1:3::b")
        #expect(neighbour.isActive, "another /64 is admitted")
        first.close(promise: nil)
        let later = try Self.connect(limiter, from: "2001:db8:1:2::c")
        #expect(later.isActive, "the /64's place is free again once its connection closed")
        for channel in [neighbour, later] { channel.close(promise: nil) }
    }

    private static func connect(_ limiter: ConnectionLimiter, from address: String) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        let peer = try SocketAddress(ipAddress: address, port: 50_000)
        channel.remoteAddress = peer
        try channel.pipeline.syncOperations.addHandler(limiter.makeHandler())
        channel.connect(to: peer, promise: nil)
        return channel
    }
}
