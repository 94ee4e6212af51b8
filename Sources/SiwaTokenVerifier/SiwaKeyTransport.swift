public import HTTPTypes

/// How the verifier fetches siwa's discovery document and key set: one GET, the whole answer. The live one is
/// `AsyncHTTPClientKeyTransport` (product `SiwaTokenVerifierAsyncHTTPClient`); any HTTP client fits in a few lines.
public protocol SiwaKeyTransport: Sendable {
    /// Sends `request` and answers the response with its whole body, within `timeout`.
    /// - Parameters:
    ///   - request: a GET of the discovery document or the key set, with `Accept: application/json`.
    ///   - timeout: the most the whole exchange, body included, may take.
    /// - Returns: the response head and its whole body; any status (the verifier refuses all but 200 itself).
    /// - Throws: any error when no complete answer arrives in time; the verifier reports it as
    ///   ``SiwaTokenError/Code/keysUnavailable``.
    func send(_ request: HTTPRequest, timeout: Duration) async throws -> (response: HTTPResponse, body: [UInt8])
}
