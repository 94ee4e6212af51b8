public import AppleSignIn
public import HTTPTypes
import Synchronization

/// An ``HTTPTransport`` double: answers from handlers registered by path, records every request, and fails loudly
/// (``UnexpectedRequest``) on a path no handler covers.
public final class StubTransport: HTTPTransport {
    /// A request as received.
    public struct Recorded: Sendable {
        public let request: HTTPRequest
        public let body: [UInt8]?
        public let timeout: Duration

        /// The form fields of a form-encoded body.
        public var formFields: [String: String] {
            guard let body, let text = String(validating: body, as: UTF8.self) else { return [:] }
            var fields: [String: String] = [:]
            for pair in text.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncodingForTests }
                fields[parts[0]] = parts.count > 1 ? parts[1] : ""
            }
            return fields
        }
    }

    /// Thrown for a request no handler covers.
    public struct UnexpectedRequest: Error, CustomStringConvertible {
        public let path: String
        public var description: String { "unexpected request to \(path)" }
    }

    public typealias Handler = @Sendable (Recorded) async throws -> HTTPTransportResponse

    private let handlers: Mutex<[String: Handler]>
    private let recorded = Mutex<[Recorded]>([])

    public init(_ handlers: [String: Handler] = [:]) {
        self.handlers = Mutex(handlers)
    }

    /// Sets the handler for `path` (the path without the base URL's prefix, e.g. `/auth/keys`).
    public func on(_ path: String, _ handler: @escaping Handler) {
        handlers.withLock { $0[path] = handler }
    }

    /// Every request so far.
    public var requests: [Recorded] { recorded.withLock { $0 } }

    /// The requests to `path`.
    public func requests(to path: String) -> [Recorded] { requests.filter { $0.request.path == path } }

    public func send(_ request: HTTPRequest, body: [UInt8]?, timeout: Duration) async throws -> HTTPTransportResponse {
        let entry = Recorded(request: request, body: body, timeout: timeout)
        recorded.withLock { $0.append(entry) }
        let path = request.path ?? ""
        guard let handler = handlers.withLock({ $0[path] }) else { throw UnexpectedRequest(path: path) }
        return try await handler(entry)
    }

    /// A JSON answer.
    public static func json(
        _ status: HTTPResponse.Status,
        _ text: String,
        headers: HTTPFields = [:]
    ) -> HTTPTransportResponse {
        var fields = headers
        fields[.contentType] = "application/json"
        return HTTPTransportResponse(status: status, headerFields: fields, body: Array(text.utf8))
    }
}

extension String {
    /// Minimal percent-decoding for inspecting recorded form bodies in tests.
    fileprivate var removingPercentEncodingForTests: String {
        var bytes: [UInt8] = []
        var iterator = self.replacing("+", with: " ").utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
