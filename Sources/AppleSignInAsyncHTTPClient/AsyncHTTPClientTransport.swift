public import AppleSignIn
public import AsyncHTTPClient
public import HTTPTypes
import NIOCore
import NIOHTTP1

/// The live ``HTTPTransport``: async-http-client with a User-Agent, a per-call deadline and a cap on response size.
///
/// It maps deadline, connect and read time-outs to ``AppleSignInError/Code/timeout``, an answer over
/// ``maximumResponseBytes`` to ``AppleSignInError/Code/unexpectedResponse``, and every other failure to
/// ``AppleSignInError/Code/transportFailed``. Request bodies (which hold client secrets and tokens) are never logged.
public struct AsyncHTTPClientTransport: HTTPTransport {
    /// The default User-Agent.
    public static let defaultUserAgent = "siwa/0.1 (Sign in with Apple server; swift)"

    private let client: HTTPClient
    private let userAgent: String
    /// The largest response body read; Apple's answers are a few KB.
    public let maximumResponseBytes: Int

    /// A process-wide client that never follows redirects: Apple's endpoints do not redirect, and following one
    /// would resend a form holding the client secret and tokens to wherever the redirect points.
    public static let sharedClient = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: clientConfiguration()
    )

    /// The configuration of ``sharedClient``: no redirects followed, connect and read timeouts, and no spans of its
    /// own (siwa's server traces each call to Apple around the transport).
    /// - Parameters:
    ///   - connectTimeout: how long a connection may take to open.
    ///   - readTimeout: how long an answer may pause between two reads.
    public static func clientConfiguration(
        connectTimeout: Duration = .seconds(5),
        readTimeout: Duration = .seconds(30)
    ) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        // The server makes each call's span and sends its `traceparent`; async-http-client's own span would
        // double it, and its header replace the one that names the call's span.
        configuration.tracing.tracer = nil
        configuration.timeout = .init(
            connect: .nanoseconds(connectTimeout.nanoseconds),
            read: .nanoseconds(readTimeout.nanoseconds)
        )
        return configuration
    }

    /// - Parameters:
    ///   - client: the HTTP client; by default ``sharedClient``, which never follows redirects.
    ///   - userAgent: sent with every request.
    ///   - maximumResponseBytes: cap on response bodies (default 1 MiB).
    public init(
        client: HTTPClient = AsyncHTTPClientTransport.sharedClient,
        userAgent: String = AsyncHTTPClientTransport.defaultUserAgent,
        maximumResponseBytes: Int = 1 << 20
    ) {
        self.client = client
        self.userAgent = userAgent
        self.maximumResponseBytes = maximumResponseBytes
    }

    public func send(_ request: HTTPRequest, body: [UInt8]?, timeout: Duration) async throws -> HTTPTransportResponse {
        guard let scheme = request.scheme, let authority = request.authority, let path = request.path else {
            throw AppleSignInError(.transportFailed, "request has no scheme, authority or path")
        }
        var outgoing = HTTPClientRequest(url: "\(scheme)://\(authority)\(path)")
        outgoing.method = .init(rawValue: request.method.rawValue)
        for field in request.headerFields {
            outgoing.headers.add(name: field.name.rawName, value: field.value)
        }
        if !outgoing.headers.contains(name: "user-agent") {
            outgoing.headers.add(name: "user-agent", value: userAgent)
        }
        if let body {
            outgoing.body = .bytes(body)
        }
        let deadline = NIODeadline.now() + TimeAmount.nanoseconds(timeout.nanoseconds)
        do {
            let response = try await client.execute(outgoing, deadline: deadline)
            let buffer = try await response.body.collect(upTo: maximumResponseBytes)
            var fields = HTTPFields()
            for (name, value) in response.headers {
                if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
            }
            return HTTPTransportResponse(
                status: HTTPResponse.Status(code: Int(response.status.code)),
                headerFields: fields,
                body: Array(buffer.readableBytesView)
            )
        } catch let error as HTTPClientError where error == .connectTimeout {
            throw AppleSignInError(.timeout, "\(authority) did not accept a connection within the connect timeout")
        } catch let error as HTTPClientError where error == .readTimeout || error == .writeTimeout {
            throw AppleSignInError(.timeout, "\(authority)\(path) paused longer than the read timeout")
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            throw AppleSignInError(.timeout, "no answer from \(authority)\(path) within \(timeout)")
        } catch is NIOTooManyBytesError {
            throw AppleSignInError(
                .unexpectedResponse,
                "answer from \(authority)\(path) is larger than \(maximumResponseBytes) bytes"
            )
        } catch let error as AppleSignInError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw AppleSignInError(.transportFailed, "calling \(authority)\(path) failed: \(error)")
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating.
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return product + attoseconds / 1_000_000_000
    }
}
