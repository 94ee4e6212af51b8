public import AsyncHTTPClient
public import HTTPTypes
import NIOCore
import NIOHTTP1
public import SiwaTokenVerifier

/// The live ``SiwaKeyTransport`` on async-http-client: a deadline per fetch, a cap on the answer's size, and no
/// redirects followed (the discovery document and the key set are fetched from where the issuer says, nowhere else).
public struct AsyncHTTPClientKeyTransport: SiwaKeyTransport {
    /// A process-wide client that never follows redirects.
    public static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        // No read timeout of its own: each fetch is bounded by the deadline its caller gives (`send`'s `timeout`), which
        // a second, fixed limit would silently shorten.
        configuration.timeout = .init(connect: .seconds(5))
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    private let client: HTTPClient
    /// The largest answer read (a key set is a few KB).
    public let maximumResponseBytes: Int

    public init(client: HTTPClient = AsyncHTTPClientKeyTransport.sharedClient, maximumResponseBytes: Int = 256 * 1024) {
        self.client = client
        self.maximumResponseBytes = maximumResponseBytes
    }

    public func send(_ request: HTTPRequest, timeout: Duration) async throws -> (response: HTTPResponse, body: [UInt8])
    {
        guard let scheme = request.scheme, let authority = request.authority, let path = request.path else {
            throw SiwaTokenError(.keysUnavailable, "the request has no scheme, authority or path")
        }
        var outgoing = HTTPClientRequest(url: "\(scheme)://\(authority)\(path)")
        outgoing.method = .init(rawValue: request.method.rawValue)
        for field in request.headerFields {
            outgoing.headers.add(name: field.name.rawName, value: field.value)
        }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let deadline =
            NIODeadline.now()
            + .nanoseconds(nanoseconds.overflow ? .max : nanoseconds.partialValue + attoseconds / 1_000_000_000)
        let end = ContinuousClock.now + timeout
        let response = try await client.execute(outgoing, deadline: deadline)
        // The deadline covers the head; the body must arrive by the same time, however slowly it trickles.
        let limit = maximumResponseBytes
        let body = try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await response.body.collect(upTo: limit) }
            group.addTask {
                try await Task.sleep(until: end, clock: .continuous)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let body = first else {
                throw SiwaTokenError(.keysUnavailable, "the answer's body did not arrive within \(timeout)")
            }
            return body
        }
        return (HTTPResponse(status: .init(code: Int(response.status.code))), Array(body.readableBytesView))
    }
}
