public import Foundation

/// A siwa account, as `GET /api/me` and every sign-in answer describe it.
public struct User: Codable, Sendable, Equatable, Identifiable {
    /// A siwa user id (not Apple's `sub`): a distinct type so that it cannot be passed where another string belongs.
    public struct ID: Codable, Sendable, Hashable, CustomStringConvertible {
        /// The id as the server writes it.
        public let rawValue: String

        /// Wraps an id the server gave.
        public init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        public init(from decoder: any Decoder) throws {
            self.rawValue = try decoder.singleValueContainer().decode(String.self)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }

        public var description: String { rawValue }
    }

    /// The account's id.
    public var id: ID
    /// The email Apple shared: the real one or a private relay address; nil when the user shared none.
    public var email: String?
    /// Whether Apple verified the email.
    public var emailVerified: Bool
    /// Whether `email` is a private relay address (`…@privaterelay.appleid.com`).
    public var isPrivateEmail: Bool
    /// Whether mail to the private relay address is forwarded (false after the user turned forwarding off).
    public var emailForwarding: Bool
    /// Given name from the first sign-in, if the user shared it.
    public var givenName: String?
    /// Family name from the first sign-in, if the user shared it.
    public var familyName: String?
    /// The name to show: the full name, else the email.
    public var displayName: String?
    /// When the account was created.
    public var createdAt: Date

    /// Creates a user value (the client decodes them from the server; this is for previews and tests).
    public init(
        id: ID,
        email: String? = nil,
        emailVerified: Bool = false,
        isPrivateEmail: Bool = false,
        emailForwarding: Bool = true,
        givenName: String? = nil,
        familyName: String? = nil,
        displayName: String? = nil,
        createdAt: Date
    ) {
        self.id = id
        self.email = email
        self.emailVerified = emailVerified
        self.isPrivateEmail = isPrivateEmail
        self.emailForwarding = emailForwarding
        self.givenName = givenName
        self.familyName = familyName
        self.displayName = displayName
        self.createdAt = createdAt
    }
}
