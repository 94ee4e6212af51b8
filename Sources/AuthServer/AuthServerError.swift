import AppleSignIn
public import HTTPTypes
public import Hummingbird
import NIOCore

/// An error answered as `{"error": code, "message": text}` with its HTTP status. The code is stable; the message
/// names what was wrong and never echoes a token.
public struct AuthServerError: Error, HTTPResponseError, CustomStringConvertible {
    public let status: HTTPResponse.Status
    public let code: String
    public let message: String
    public var headers: HTTPFields

    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var out: [UInt8] = Array("{\"error\":".utf8)
        JSONWriter.appendString(code, to: &out)
        out.append(contentsOf: ",\"message\":".utf8)
        JSONWriter.appendString(message, to: &out)
        out.append(UInt8(ascii: "}"))
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        fields[.cacheControl] = "no-store"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: out)))
    }

    static func badRequest(_ code: String, _ message: String) -> AuthServerError {
        AuthServerError(.badRequest, code, message)
    }

    static func unauthorized(_ code: String, _ message: String) -> AuthServerError {
        AuthServerError(.unauthorized, code, message, headers: [.wwwAuthenticate: "Bearer"])
    }
}
