public import AccountStore
public import Hummingbird

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The `user` object of every answer.
public struct UserResponse: ResponseCodable, Equatable {
    public var id: String
    public var email: String?
    public var emailVerified: Bool
    public var isPrivateEmail: Bool
    public var emailForwarding: Bool
    public var givenName: String?
    public var familyName: String?
    public var displayName: String?
    public var createdAt: Date

    public init(_ user: UserRecord) {
        self.id = user.id.description
        self.email = user.email
        self.emailVerified = user.emailVerified
        self.isPrivateEmail = user.isPrivateEmail
        self.emailForwarding = user.emailForwarding
        self.givenName = user.givenName
        self.familyName = user.familyName
        let name = [user.givenName, user.familyName].compactMap { $0 }.joined(separator: " ")
        self.displayName = name.isEmpty ? user.email : name
        self.createdAt = user.createdAt
    }
}

/// The answer of a sign-in or a refresh.
public struct SessionResponse: ResponseCodable {
    public var accessToken: String
    public var tokenType = "Bearer"
    public var expiresIn: Int
    public var refreshToken: String
    public var isNewUser: Bool?
    public var user: UserResponse?
}
