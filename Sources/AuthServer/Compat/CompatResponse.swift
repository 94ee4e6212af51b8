import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The one way the client contracts answer: JSON bodies (ISO 8601 dates, `no-store`), and errors in each contract's
/// own envelope, built from the same ``AuthServerError`` (its status and headers, such as `Retry-After`, kept).
enum CompatResponse {
    /// A JSON answer.
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        json(bytes: try JSONAnswer.bytes(value), status: status)
    }

    /// A JSON answer already written (the hot routes write theirs directly).
    static func json(bytes: some Sequence<UInt8>, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }

    /// Runs a route and answers any error in the contract's envelope, made by `envelope` from the error's code and
    /// message; any other error is ``AuthServerError/unexpected(_:)`` (503 while the database is unreachable, else 500).
    static func answering(
        envelope: (_ code: String, _ message: String) -> any Encodable,
        _ body: () async throws -> Response
    ) async -> Response {
        let error: AuthServerError
        do {
            return try await body()
        } catch let refused as AuthServerError {
            error = refused
        } catch {
            return errorResponse(AuthServerError.unexpected(error), envelope: envelope)
        }
        return errorResponse(error, envelope: envelope)
    }

    /// An error in a contract's envelope.
    static func errorResponse(
        _ error: AuthServerError,
        envelope: (_ code: String, _ message: String) -> any Encodable
    ) -> Response {
        let data = (try? JSONAnswer.bytes(envelope(error.code, error.message))) ?? Array("{}".utf8)
        var headers = error.headers
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(status: error.status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
