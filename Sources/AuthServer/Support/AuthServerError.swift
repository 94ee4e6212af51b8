import AccountStore
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

    /// The stable `error` codes that more than one route answers.
    enum Code {
        static let invalidToken = "invalid_token"
        static let missingToken = "missing_token"
        static let invalidRefreshToken = "invalid_refresh_token"
        static let refreshTokenReused = "refresh_token_reused"
        static let refreshTokenRevoked = "refresh_token_revoked"
        static let refreshTokenExpired = "refresh_token_expired"
        static let appleConsentRevoked = "apple_consent_revoked"
        static let unknownUser = "unknown_user"
        static let missingField = "missing_field"
        static let bodyTooLarge = "body_too_large"
        static let unsupportedMediaType = "unsupported_media_type"
        static let invalidJSON = "invalid_json"
        static let accountDeleted = "account_deleted"
        static let accountDisabled = "account_disabled"
        static let adminRequired = "admin_required"
        static let adminProtected = "admin_protected"
        /// An admin route called from outside ``AuthServerConfiguration/adminNetworks``.
        static let adminNetworkRefused = "admin_network_refused"
        /// An access token siwa's OpenID provider issued to another app, presented on siwa's own routes.
        static let relyingPartyToken = "relying_party_token"
        static let appleError = "apple_error"
        static let appleUnavailable = "apple_unavailable"
        static let csrfCheckFailed = "csrf_check_failed"
        static let databaseUnavailable = "database_unavailable"
        static let duplicateField = "duplicate_field"
        static let emailInUse = "email_in_use"
        static let flowNotStartedHere = "flow_not_started_here"
        static let identityTokenReplayed = "identity_token_replayed"
        static let internalError = "internal_error"
        static let invalidBody = "invalid_body"
        static let invalidCallback = "invalid_callback"
        static let invalidField = "invalid_field"
        static let unknownField = "unknown_field"
        static let invalidReturnURL = "invalid_return_url"
        static let notFound = "not_found"
        static let rateLimited = "rate_limited"
        static let serverMisconfigured = "server_misconfigured"
        static let sessionRevoked = "session_revoked"
        static let stateAlreadyUsed = "state_already_used"
        static let stateExpired = "state_expired"
        static let stateNotFound = "state_not_found"
        static let webSigninDisabled = "web_signin_disabled"
        static let serviceTokenExpired = "service_token_expired"
        static let serviceTokenRevoked = "service_token_revoked"
        static let serviceTokenNotAccepted = "service_token_not_accepted"
        static let insufficientScope = "insufficient_scope"
    }

    static let invalidRefreshToken = unauthorized(Code.invalidRefreshToken, "the refresh token is not valid")
    static let refreshTokenRevoked = unauthorized(Code.refreshTokenRevoked, "the session has ended; sign in again")
    /// 401: an access token siwa's OpenID provider gave a relying party, presented where a session is needed.
    static let relyingPartyToken = unauthorized(
        Code.relyingPartyToken,
        "a relying party's access token is accepted only at /oauth/userinfo and by the team's services"
    )
    /// 401: no access token came with a request whose route needs one.
    static let missingToken = unauthorized(
        Code.missingToken,
        "send 'Authorization: Bearer <access token>' or the session cookie"
    )
    static let refreshTokenExpired = unauthorized(
        Code.refreshTokenExpired,
        "the refresh token has expired; sign in again"
    )
    /// 403: an operator disabled the account (`siwa users disable`); signing in again does not help.
    static let accountDisabled = AuthServerError(
        .forbidden,
        Code.accountDisabled,
        "this account has been disabled; contact the service's support"
    )
    /// 403: an admin route called from a client address outside ``AuthServerConfiguration/adminNetworks``.
    static let adminNetworkRefused = AuthServerError(
        .forbidden,
        Code.adminNetworkRefused,
        "the admin routes answer only the operators' networks (SIWA_ADMIN_ALLOWED_NETWORKS)"
    )
    /// 401: a service token of the admin API presented on a route that is not the admin API's.
    static let serviceTokenNotAccepted = unauthorized(
        Code.serviceTokenNotAccepted,
        "a service token is accepted only by the admin API (/admin/api/)"
    )
    static let appleConsentRevoked = unauthorized(
        Code.appleConsentRevoked,
        "the user stopped using Sign in with Apple with this app; sign in with Apple again"
    )
}

extension AuthServerError {
    /// A refused identity token: 401 naming the failed check; Apple unreachable: 503.
    static func refusedIdentityToken(_ error: AppleSignInError) -> AuthServerError {
        mapping(error) { check, reason in AuthServerError.unauthorized("identity_token_\(check)", reason) }
    }

    /// The HTTP error for an ``AppleSignInError``: Apple unreachable is 503; siwa's own settings wrong, 500; otherwise
    /// `refused` with the failed check in snake_case and the reason.
    static func mapping(
        _ error: AppleSignInError,
        refused: (_ check: String, _ reason: String) -> AuthServerError
    ) -> AuthServerError {
        switch error.code.category {
        case .appleUnavailable:
            return AuthServerError(.serviceUnavailable, Code.appleUnavailable, error.reason)
        case .configuration:
            return AuthServerError(
                .internalServerError,
                Code.serverMisconfigured,
                "the server's Sign in with Apple settings are wrong"
            )
        default:
            return refused(snakeCase(error.code.description), error.reason)
        }
    }

    static func snakeCase(_ camel: String) -> String {
        var out = ""
        for character in camel {
            if character.isUppercase {
                out += "_" + character.lowercased()
            } else {
                out.append(character)
            }
        }
        return out
    }
}

extension AuthServerError {
    /// Seconds a client is told to wait when the database cannot be reached (a restart or a fail-over takes seconds).
    static let databaseRetryAfter = "2"

    /// The answer for an error no route turned into an ``AuthServerError``: the database unreachable (a restart, a
    /// fail-over, a full pool) is 503 `database_unavailable` with `Retry-After`, so that clients retry instead of
    /// signing the user out; anything else is 500 `internal_error`, its detail only in the log.
    static func unexpected(_ error: any Error) -> AuthServerError {
        if let error = error as? AuthServerError { return error }
        if let error = error as? StoreError, error.code == .unavailable {
            return AuthServerError(
                .serviceUnavailable,
                Code.databaseUnavailable,
                "the database cannot be reached; try again in a moment",
                headers: [.retryAfter: databaseRetryAfter]
            )
        }
        return AuthServerError(.internalServerError, Code.internalError, "the request could not be completed")
    }
}
