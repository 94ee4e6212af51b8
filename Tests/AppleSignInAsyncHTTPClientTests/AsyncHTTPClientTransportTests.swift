import AppleSignIn
import AppleSignInAsyncHTTPClient
import AsyncHTTPClient
import Crypto
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SiwaTesting
import Synchronization
import Testing

/// The live transport against a real HTTP server on loopback, playing Apple's endpoints.
@Suite("AsyncHTTPClient transport")
struct AsyncHTTPClientTransportTests {
    /// What the loopback "Apple" received.
    final class Received: Sendable {
        let userAgents = Mutex<[String]>([])
        let forms = Mutex<[String]>([])
    }

    /// Runs a Hummingbird server playing Apple on a free loopback port and gives `body` its base URL.
    private func withFakeApple(
        jwks: [UInt8],
        received: Received = Received(),
        _ body: @escaping @Sendable (AppleBaseURL) async throws -> Void
    ) async throws {
        let router = Router()
        router.get("/auth/keys") { request, _ -> Response in
            received.userAgents.withLock { $0.append(request.headers[.userAgent] ?? "") }
            return Response(
                status: .ok,
                headers: [.contentType: "application/json", .cacheControl: "max-age=300"],
                body: .init(byteBuffer: ByteBuffer(bytes: jwks))
            )
        }
        router.post("/auth/revoke") { request, _ -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 64 * 1024)
            received.forms.withLock { $0.append(String(buffer: body)) }
            return .ok
        }
        router.get("/slow") { _, _ -> HTTPResponse.Status in
            try await Task.sleep(for: .milliseconds(1500))
            return .ok
        }
        router.post("/redirect") { _, _ -> Response in
            Response(status: .temporaryRedirect, headers: [.location: "http://127.0.0.1:9/steal"])
        }
        router.get("/huge") { _, _ -> Response in
            Response(status: .ok, body: .init(byteBuffer: ByteBuffer(repeating: UInt8(ascii: "x"), count: 2 << 20)))
        }
        let app = Application(router: router)
        try await app.test(.live) { client in
            let port = try #require(client.port)
            try await body(try AppleBaseURL("http://localhost:\(port)"))
        }
    }

    /// A deadline that bounds a hang only: these tests check behaviour, not speed. The test process runs some 700
    /// tests at once on the cooperative pool's two threads, and in its first minutes a task may wait more than a
    /// minute for its turn while the client's deadline, kept on an event loop, runs on; a real hang is stopped by the
    /// test command's watchdog.
    static let hangBound = Duration.seconds(600)

    private func get(_ base: AppleBaseURL, _ path: String, timeout: Duration = hangBound) async throws {
        let request = HTTPRequest(method: .get, scheme: base.scheme, authority: base.authority, path: path)
        _ = try await AsyncHTTPClientTransport().send(request, body: nil, timeout: timeout)
    }

    /// A transport on a client configured as the shared one (no redirects followed) but whose connect and read
    /// timeouts are hang bounds too: the shared client's 5 and 30 s, kept on its event loop, can pass while a starved
    /// test task is not reading.
    private func withPatientTransport(_ body: (AsyncHTTPClientTransport) async throws -> Void) async throws {
        let client = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: AsyncHTTPClientTransport.clientConfiguration(
                connectTimeout: Self.hangBound,
                readTimeout: Self.hangBound
            )
        )
        do {
            try await body(AsyncHTTPClientTransport(client: client))
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    @Test func fetchesApplesKeySetWithUserAgent() async throws {
        let apple = try TestAppleKeys(count: 2)
        let received = Received()
        try await withFakeApple(jwks: try apple.jwks(), received: received) { base in
            let cache = AppleKeyCache(source: AppleKeysEndpoint(baseURL: base, transport: AsyncHTTPClientTransport()))
            let key = try await cache.key(for: "test-key-2")
            #expect(key.keyID == "test-key-2")
            #expect(cache.keyIDs == ["test-key-1", "test-key-2"])
        }
        // Every request carries siwa's User-Agent. (On a loaded machine the key set endpoint's 5 s attempt may time out
        // and its retry be the one answered: two requests, both with it.)
        let agents = received.userAgents.withLock { $0 }
        #expect(!agents.isEmpty)
        #expect(agents.allSatisfy { $0 == AsyncHTTPClientTransport.defaultUserAgent }, "\(agents)")
    }

    @Test func postsFormEncodedRevocation() async throws {
        let received = Received()
        try await withFakeApple(jwks: try TestAppleKeys().jwks(), received: received) { base in
            let configuration = try AppleSignInConfiguration(bundleIDs: ["com.example.app"], appleBaseURL: base)
            let credentials = ClientSecretCredentials(
                teamID: try TeamID("ABCDE12345"),
                keyID: try KeyID("KEY1234567"),
                key: AppleDeveloperKey(privateKey: P256.Signing.PrivateKey())
            )
            let transport = AsyncHTTPClientTransport()
            let keys = AppleKeyCache(source: AppleKeysEndpoint(baseURL: base, transport: transport))
            let client = AppleAPIClient(
                configuration: configuration,
                transport: transport,
                verifier: IdentityTokenVerifier(configuration: configuration, keys: keys),
                clientSecrets: ClientSecretFactory(credentials: credentials, lifetime: 3600)
            )
            try await client.revoke(token: "r.token+/=", hint: .refreshToken, clientID: "com.example.app")
        }
        let form = try #require(received.forms.withLock { $0.first })
        #expect(form.hasPrefix("client_id=com.example.app&client_secret=ey"))
        #expect(form.hasSuffix("&token=r.token%2B%2F%3D&token_type_hint=refresh_token"))
    }

    @Test func slowAnswerTimesOut() async throws {
        try await withFakeApple(jwks: try TestAppleKeys().jwks()) { base in
            await #expect(throws: AppleSignInError.timeout) {
                try await get(base, "/slow", timeout: .milliseconds(300))
            }
        }
    }

    @Test func oversizedAnswerIsRefused() async throws {
        try await withFakeApple(jwks: try TestAppleKeys().jwks()) { base in
            try await withPatientTransport { transport in
                let request = HTTPRequest(method: .get, scheme: base.scheme, authority: base.authority, path: "/huge")
                await #expect(throws: AppleSignInError.unexpectedResponse) {
                    try await transport.send(request, body: nil, timeout: Self.hangBound)
                }
            }
        }
    }

    @Test func redirectsAreNotFollowed() async throws {
        try await withFakeApple(jwks: try TestAppleKeys().jwks()) { base in
            let request = HTTPRequest(method: .post, scheme: base.scheme, authority: base.authority, path: "/redirect")
            try await withPatientTransport { transport in
                let answer = try await transport.send(request, body: Array("secret=1".utf8), timeout: Self.hangBound)
                #expect(answer.response.status == .temporaryRedirect)
            }
        }
    }

    @Test func refusedConnectionIsATransportFailure() async throws {
        // Port 9 (discard) on loopback: nothing listens there in the test environment.
        let base = try AppleBaseURL("http://127.0.0.1:9")
        await #expect(throws: AppleSignInError.transportFailed) {
            try await get(base, "/auth/keys", timeout: .seconds(1))
        }
    }
}
