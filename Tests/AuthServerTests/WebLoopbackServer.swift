import AppleSignIn
import AppleSignInAsyncHTTPClient
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import ServiceLifecycle
import SiwaTesting
import Testing

/// Runs an application on a port chosen in advance (HummingbirdTesting's live tests always pick a fresh one, but the
/// web flow needs the server's URL before it starts: it is the public URL and the redirect URI registered at the
/// emulator). The test client reaches it through a transparent loopback relay, so `ServerHarness.server` keeps its
/// type.
enum WebLoopbackServer {
    static func serve(
        _ app: some ApplicationProtocol,
        port: Int,
        tls: Bool = false,
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        let services = ServiceGroup(configuration: .init(services: [app], logger: app.logger))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await services.run() }
            do {
                if tls {
                    try await waitUntilAccepting(port: port)
                } else {
                    try await waitUntilListening(port: port)
                }
                try await Application(router: relay(to: port)).test(.live) { client in
                    try await body(client)
                }
            } catch {
                await services.triggerGracefulShutdown()
                throw error
            }
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
        }
    }

    private static func waitUntilListening(port: Int) async throws {
        let transport = AsyncHTTPClientTransport()
        for _ in 0..<100 {
            let request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(port)", path: "/healthz")
            if let answer = try? await transport.send(request, body: nil, timeout: .seconds(1)),
                answer.response.status == .ok
            {
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("the server did not start on 127.0.0.1:\(port)")
        throw CancellationError()
    }

    /// Forwards every request unchanged (method, path, headers, body) and answers with the server's answer; never
    /// follows a redirect.
    /// A server with TLS: a plain HTTP probe cannot ask it anything, so a TCP connection that is accepted will do.
    private static func waitUntilAccepting(port: Int) async throws {
        for _ in 0..<100 {
            if let connection = try? RawSocketConnection(port: port) {
                connection.close()
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("the server did not start on 127.0.0.1:\(port)")
        throw CancellationError()
    }

    private static func relay(to port: Int) -> Router<BasicRequestContext> {
        let router = Router()
        let transport = AsyncHTTPClientTransport()
        let forward: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in
            var head = HTTPRequest(
                method: request.method,
                scheme: "http",
                authority: "127.0.0.1:\(port)",
                path: request.uri.description
            )
            for field in request.headers where ![.connection, .contentLength].contains(field.name) {
                head.headerFields.append(field)
            }
            var request = request
            let body = try await request.collectBody(upTo: 1 << 20)
            let answer = try await transport.send(
                head,
                body: body.readableBytes == 0 && request.method == .get ? nil : Array(body.readableBytesView),
                timeout: .seconds(20)
            )
            var headers = HTTPFields()
            for field in answer.response.headerFields
            where ![.connection, .contentLength, .transferEncoding].contains(field.name) {
                headers.append(field)
            }
            return Response(
                status: answer.response.status,
                headers: headers,
                body: .init(byteBuffer: ByteBuffer(bytes: answer.body))
            )
        }
        for method in [HTTPRequest.Method.get, .post, .delete, .put, .patch, .head] {
            // "**" matches one path component or more; the root needs its own route.
            router.on("/", method: method, use: forward)
            router.on("**", method: method, use: forward)
        }
        return router
    }
}
