public import HTTPTypes

/// The one thing `AppleSignIn` needs from an HTTP client: send a request, get the whole answer.
///
/// `AppleSignInAsyncHTTPClient` has the live implementation; tests use recording doubles. Implementations cap the
/// response size, honour `timeout`, and throw ``AppleSignInError`` with code ``AppleSignInError/Code/timeout`` or
/// ``AppleSignInError/Code/transportFailed`` when no answer arrives.
public protocol HTTPTransport: Sendable {
    /// Sends `request` with `body` and returns the response with its whole body.
    /// - Parameters:
    ///   - request: method, scheme, authority, path and headers.
    ///   - body: the request body, if any.
    ///   - timeout: the most the whole exchange may take.
    /// - Returns: the response and its whole body, whatever the status (callers judge it).
    /// - Throws: ``AppleSignInError`` with code ``AppleSignInError/Code/timeout`` or
    ///   ``AppleSignInError/Code/transportFailed`` when no answer arrives; any other error counts as a transport
    ///   failure.
    func send(_ request: HTTPRequest, body: [UInt8]?, timeout: Duration) async throws -> HTTPTransportResponse
}

/// A complete HTTP answer.
public struct HTTPTransportResponse: Sendable {
    public var response: HTTPResponse
    public var body: [UInt8]

    /// Pairs a response head with its body.
    /// - Parameters:
    ///   - response: the status and header fields.
    ///   - body: the whole body.
    public init(response: HTTPResponse, body: [UInt8]) {
        self.response = response
        self.body = body
    }

    /// Makes an answer from a status, header fields and a body (test doubles answer this way).
    /// - Parameters:
    ///   - status: the status.
    ///   - headerFields: the header fields, none by default.
    ///   - body: the whole body.
    public init(status: HTTPResponse.Status, headerFields: HTTPFields = [:], body: [UInt8]) {
        self.response = HTTPResponse(status: status, headerFields: headerFields)
        self.body = body
    }
}
