import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Bounds connections and how long a request may take to arrive, so that a flood of slow or idle connections cannot
/// use up the process's file descriptors or its event loops.
///
/// One ``ConnectionLimiter`` is shared by every connection; each connection gets its own ``ConnectionGuard`` handler,
/// which sits after Hummingbird's HTTP decoder and sees request heads and bodies as they complete:
/// - over the total cap, or over the cap of its client address (an IPv6 address's /64: ``ClientKey``), a new
///   connection is closed at once (never queued);
/// - a request head must be complete within ``AuthServerConfiguration/ConnectionLimits/requestHeadTimeout`` of its
///   first byte, and its body within ``AuthServerConfiguration/ConnectionLimits/requestBodyTimeout`` of its head: a
///   client that trickles one byte at a time within the idle timeout is closed all the same.
///
/// Addresses of trusted proxies have no per-address cap: every client behind the proxy shares its address.
final class ConnectionLimiter: Sendable {
    let limits: AuthServerConfiguration.ConnectionLimits
    let trustedProxies: TrustedProxies
    /// Counts the connections a cap closes (`nil`: not counted).
    let metrics: ServerMetrics?
    private let state = Mutex(State())

    private struct State {
        var total = 0
        var perAddress: [String: Int] = [:]
    }

    init(
        limits: AuthServerConfiguration.ConnectionLimits,
        trustedProxies: TrustedProxies,
        metrics: ServerMetrics? = nil
    ) {
        self.limits = limits
        self.trustedProxies = trustedProxies
        self.metrics = metrics
    }

    /// The per-address key of a peer: its ``ClientKey`` (as the rate limits count it: an IPv6 peer by its /64), or
    /// `nil` for a trusted proxy (no per-address cap) or no address.
    func capKey(of address: String?) -> String? {
        address.flatMap { trustedProxies.contains($0) ? nil : ClientKey.of($0) }
    }

    /// Counts a new connection in; `false` (and nothing counted) when it is over a cap.
    func admit(capKey: String?) -> Bool {
        let refusal = state.withLock { state -> ServerMetrics.ConnectionCap? in
            guard state.total < limits.maximumConnections else { return .total }
            if let capKey {
                let count = state.perAddress[capKey, default: 0]
                guard count < limits.maximumConnectionsPerAddress else { return .address }
                state.perAddress[capKey] = count + 1
            }
            state.total += 1
            return nil
        }
        guard let refusal else { return true }
        metrics?.connectionRefused(by: refusal)
        return false
    }

    /// Counts a closed connection out.
    func release(capKey: String?) {
        state.withLock { state in
            state.total -= 1
            if let capKey, let count = state.perAddress[capKey] {
                state.perAddress[capKey] = count > 1 ? count - 1 : nil
            }
        }
    }

    /// A handler for one new connection.
    func makeHandler() -> ConnectionGuard {
        ConnectionGuard(limiter: self)
    }
}

/// The per-connection half of ``ConnectionLimiter``.
///
/// Deadlines, by phase: from the first byte of a request (on a new or a kept-alive connection), the head must be
/// complete within the head timeout; from the head, the body within the body timeout. While the route works, and while
/// a connection waits for its first or next request, no deadline runs (the idle timeout closes a connection that stays
/// silent). A small handler at the front of the pipeline
/// (``FirstByteWatch``) tells when a new request's first bytes arrive.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum Phase {
        /// Waiting for a request head to complete (deadline running).
        case head
        /// Waiting for the end of a request body (deadline running).
        case body
        /// The request is in; the route is working or the answer is being written.
        case answering
        /// A kept-alive connection between requests.
        case idle
    }

    private let limiter: ConnectionLimiter
    /// The peer's per-address key (``ConnectionLimiter/capKey(of:)``), kept for the release.
    private var capKey: String?
    private var admitted = false
    private var decided = false
    private var phase = Phase.idle
    private var deadline: Scheduled<Void>?

    init(limiter: ConnectionLimiter) {
        self.limiter = limiter
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let watch = FirstByteWatch(guard: self)
        try? context.pipeline.syncOperations.addHandler(watch, position: .first)
        if context.channel.isActive { admit(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context: context)
        context.fireChannelActive()
    }

    private func admit(context: ChannelHandlerContext) {
        guard !decided else { return }
        decided = true
        capKey = limiter.capKey(of: context.channel.remoteAddress?.ipAddress)
        guard limiter.admit(capKey: capKey) else {
            context.close(promise: nil)
            return
        }
        admitted = true
        // No deadline until the first byte: a client may connect ahead of its first request (browsers pre-connect,
        // test clients connect at start). A connection that never speaks is closed by the idle timeout.
        enter(.idle, context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        release()
    }

    private func release() {
        deadline?.cancel()
        deadline = nil
        if admitted {
            admitted = false
            limiter.release(capKey: capKey)
        }
    }

    /// Bytes arrived (``FirstByteWatch``): on a waiting kept-alive connection, a new request has begun.
    func bytesArrived(context: ChannelHandlerContext) {
        if phase == .idle { enter(.head, context: context) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard admitted else { return }
        switch unwrapInboundIn(data) {
        case .head: enter(.body, context: context)
        case .body: break
        case .end: enter(.answering, context: context)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), phase == .answering {
            // The answer is complete: the connection waits for its next request, under the idle timeout only.
            enter(.idle, context: context)
        }
        context.write(data, promise: promise)
    }

    private func enter(_ next: Phase, context: ChannelHandlerContext) {
        phase = next
        deadline?.cancel()
        deadline = nil
        let timeout: Duration
        switch next {
        case .head: timeout = limiter.limits.requestHeadTimeout
        case .body: timeout = limiter.limits.requestBodyTimeout
        case .answering, .idle: return
        }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            loopBound.value.close(promise: nil)
        }
    }
}

/// Sits first in a connection's pipeline and tells its ``ConnectionGuard`` when bytes arrive, before any decoding:
/// the start of a request on a kept-alive connection.
final class FirstByteWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let connectionGuard: ConnectionGuard
    private var guardContext: ChannelHandlerContext?

    init(guard connectionGuard: ConnectionGuard) {
        self.connectionGuard = connectionGuard
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if guardContext == nil { guardContext = try? context.pipeline.syncOperations.context(handler: connectionGuard) }
        if let guardContext { connectionGuard.bytesArrived(context: guardContext) }
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        guardContext = nil
    }
}
