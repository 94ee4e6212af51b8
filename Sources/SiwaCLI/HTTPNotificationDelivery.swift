public import AppleIDEmulator
public import AppleSignInAsyncHTTPClient
public import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// Delivers the emulator's server-to-server notifications over HTTP with async-http-client.
public struct HTTPNotificationDelivery: NotificationDelivery {
    private let client: HTTPClient

    public init(client: HTTPClient = AsyncHTTPClientTransport.sharedClient) {
        self.client = client
    }

    public func post(json body: [UInt8], to url: String) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "user-agent", value: "siwa-emulator")
        request.body = .bytes(body)
        let response = try await client.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 64 * 1024)
        return Int(response.status.code)
    }
}
