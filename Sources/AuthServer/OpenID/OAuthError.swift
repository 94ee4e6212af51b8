import AppleSignIn
import HTTPTypes
import Hummingbird
import NIOCore

/// An error of the OpenID provider in the shape of RFC 6749 §5.2: `{"error", "error_description"}` with the status
/// the spec gives (400, or 401 for `invalid_client`, with `WWW-Authenticate` when the client used HTTP Basic).
/// The description names what was wrong and never echoes a token, code or secret.
struct OAuthError: Error, HTTPResponseError, CustomStringConvertible {
    let status: HTTPResponse.Status
    let error: String
    let errorDescription: String
    var headers: HTTPFields = [:]

    var description: String { "\(status.code) \(error): \(errorDescription)" }

    static func invalidRequest(_ description: String) -> OAuthError {
        OAuthError(status: .badRequest, error: "invalid_request", errorDescription: description)
    }

    static func invalidGrant(_ description: String) -> OAuthError {
        OAuthError(status: .badRequest, error: "invalid_grant", errorDescription: description)
    }

    /// `invalid_client`: 401, with `WWW-Authenticate: Basic` when the client authenticated with HTTP Basic.
    static func invalidClient(_ description: String, usedBasic: Bool) -> OAuthError {
        OAuthError(
            status: .unauthorized,
            error: "invalid_client",
            errorDescription: description,
            headers: usedBasic ? [.wwwAuthenticate: #"Basic realm="siwa", charset="UTF-8""#] : [:]
        )
    }

    static func unsupportedGrantType(_ description: String) -> OAuthError {
        OAuthError(status: .badRequest, error: "unsupported_grant_type", errorDescription: description)
    }

    /// `temporarily_unavailable`, 503: Apple or the database cannot be reached now.
    static func temporarilyUnavailable(_ description: String) -> OAuthError {
        OAuthError(status: .serviceUnavailable, error: "temporarily_unavailable", errorDescription: description)
    }

    /// RFC 6750 §3.1: a bearer token refused at the userinfo endpoint.
    static func invalidToken(_ description: String) -> OAuthError {
        OAuthError(
            status: .unauthorized,
            error: "invalid_token",
            errorDescription: description,
            headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#]
        )
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = JSONWriter.object(["error": .string(error), "error_description": .string(errorDescription)])
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        fields[.cacheControl] = "no-store"
        fields[HTTPField.Name("Pragma")!] = "no-cache"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}

extension RouteAccess.Refusal {
    /// RFC 6750 §3.1: 401 with `WWW-Authenticate: Bearer`, `invalid_request` without a token, else `invalid_token`;
    /// a request whose body cannot be read is `invalid_request` with its own status.
    static let bearerToken = RouteAccess.Refusal(name: "OAuth (RFC 6750)") { error, _ in
        guard error.code != AuthServerError.Code.missingToken else {
            throw OAuthError(
                status: .unauthorized,
                error: "invalid_request",
                errorDescription: "send the access token as 'Authorization: Bearer <token>' or the form's access_token",
                headers: [.wwwAuthenticate: "Bearer"]
            )
        }
        guard error.status == .unauthorized else {
            throw OAuthError(status: error.status, error: "invalid_request", errorDescription: error.message)
        }
        throw OAuthError.invalidToken(error.message)
    }
}
