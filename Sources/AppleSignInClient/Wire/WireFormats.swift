import Foundation

/// `POST /auth/apple/native`.
struct NativeSignInBody: Encodable {
    var identityToken: String
    var authorizationCode: String?
    var nonce: String?
    var givenName: String?
    var familyName: String?
}

/// `POST /auth/refresh` and `POST /auth/logout` without a bearer token.
struct RefreshTokenBody: Encodable {
    var refreshToken: String
}

/// The answer of a sign-in or a refresh; `isNewUser` and `user` come with sign-ins only.
struct TokenAnswer: Decodable {
    var accessToken: String
    var tokenType: String?
    var expiresIn: Int?
    var refreshToken: String
    var isNewUser: Bool?
    var user: User?
}

/// Every error answer: `{"error": code, "message": text}`.
struct ErrorAnswer: Decodable {
    var error: String
    var message: String?
}
