public import HTTPTypes

/// How the verifier fetches siwa's discovery document and key set: one GET, the whole answer. The live one is
/// `AsyncHTTPClientKeyTransport` (product `SiwaTokenVerifierAsyncHTTPClient`); any HTTP client fits in a few lines.
public protocol SiwaKeyTransport: Sendable {
    /// Sends `request` and answers the response with its whole body, within `timeout`.
    func send(_ request: HTTPRequest, timeout: Duration) async throws -> (response: HTTPResponse, body: [UInt8])
}
