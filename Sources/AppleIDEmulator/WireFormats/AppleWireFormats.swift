import Foundation

// Apple's wire formats, re-declared here from Apple's documentation on purpose: the emulator does not import
// AppleSignIn, so a field name wrong in one cannot be wrong in both and still pass every test.

/// The claims of an identity token, as Apple signs them.
struct IdentityTokenClaims: Encodable {
    var iss: String
    var aud: String
    var exp: Int
    var iat: Int
    var sub: String
    var nonce: String?
    var cHash: String?
    var email: String?
    var emailVerified: Bool?
    var isPrivateEmail: Bool?
    var authTime: Int
    var nonceSupported: Bool
    var realUserStatus: Int?
    var transferSub: String?

    enum CodingKeys: String, CodingKey {
        case iss, aud, exp, iat, sub, nonce, email
        case cHash = "c_hash"
        case emailVerified = "email_verified"
        case isPrivateEmail = "is_private_email"
        case authTime = "auth_time"
        case nonceSupported = "nonce_supported"
        case realUserStatus = "real_user_status"
        case transferSub = "transfer_sub"
    }
}

/// The claims of a server-to-server notification; `events` is a JSON *string*.
struct NotificationClaims: Encodable {
    var iss: String
    var aud: String
    var exp: Int
    var iat: Int
    var jti: String
    var events: String
}

/// The object inside `events`.
struct NotificationEvent: Codable {
    var type: String
    var sub: String
    var eventTime: Int64
    var email: String?
    var isPrivateEmail: String?

    enum CodingKeys: String, CodingKey {
        case type, sub, email
        case eventTime = "event_time"
        case isPrivateEmail = "is_private_email"
    }
}

/// The claims of a developer's client secret (ES256).
struct ClientSecretClaims: Decodable {
    var iss: String
    var iat: Int
    var exp: Int
    var aud: AudienceValue
    var sub: String

    /// `aud` as a string or an array of strings.
    enum AudienceValue: Decodable {
        case one(String)
        case many([String])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(String.self) {
                self = .one(one)
            } else {
                self = .many(try container.decode([String].self))
            }
        }

        var values: [String] {
            switch self {
            case .one(let value): return [value]
            case .many(let values): return values
            }
        }
    }
}

/// The header of a developer's client secret: Apple wants `alg` ES256 and `kid` the id of the team's key.
struct ClientSecretHeader: Decodable {
    var alg: String?
    var kid: String?
}

/// `POST /auth/token` form fields.
struct TokenForm: Decodable {
    var grant_type: String?
    var code: String?
    var refresh_token: String?
    var redirect_uri: String?
    var client_id: String?
    var client_secret: String?
    var scope: String?
}

/// `POST /auth/revoke` form fields.
struct RevokeForm: Decodable {
    var client_id: String?
    var client_secret: String?
    var token: String?
    var token_type_hint: String?
}

/// `POST /auth/usermigrationinfo` form fields.
struct MigrationForm: Decodable {
    var sub: String?
    var target: String?
    var transfer_sub: String?
    var client_id: String?
    var client_secret: String?
}

/// `GET /auth/authorize` query, and the consent form posted back to the emulator.
struct AuthorizeParameters: Decodable {
    var client_id: String?
    var redirect_uri: String?
    var response_type: String?
    var response_mode: String?
    var scope: String?
    var state: String?
    var nonce: String?
    // Consent form only.
    var action: String?
    var email: String?
    var given_name: String?
    var family_name: String?
    var hide_email: String?
}

/// The token endpoint's success body.
struct TokenResponse: Encodable {
    var access_token: String
    var token_type = "Bearer"
    var expires_in: Int
    var refresh_token: String?
    var id_token: String?
}

/// Apple's OAuth error, and a failure of any endpoint.
struct AppleOAuthError: Error {
    /// The HTTP status code.
    var httpCode: Int = 400
    var error: String
    var description: String?
    /// Why, for the emulator's log only: Apple's answer says no more than `error`.
    var reason: String?

    /// The outcome in the emulator's log: the code, and why when known.
    var outcome: String { reason.map { "\(error) (\($0))" } ?? error }

    static func invalidRequest(_ description: String) -> AppleOAuthError {
        AppleOAuthError(error: "invalid_request", description: description)
    }
    static func invalidClient(_ description: String) -> AppleOAuthError {
        AppleOAuthError(error: "invalid_client", description: description)
    }
    /// Client authentication failed: Apple answers a bare `{"error":"invalid_client"}`, whatever the cause.
    static func refusedClient(_ reason: String) -> AppleOAuthError {
        AppleOAuthError(error: "invalid_client", description: nil, reason: reason)
    }
    static func invalidGrant(_ description: String) -> AppleOAuthError {
        AppleOAuthError(error: "invalid_grant", description: description)
    }
}
