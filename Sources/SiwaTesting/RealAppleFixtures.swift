#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The real Apple-signed data of `../shared/fixtures/apple-real/`, copied into the tests' resources.
public struct RealAppleFixtures: Sendable {
    /// One real identity token.
    public struct Token: Sendable {
        public let token: String
        public let kid: String
        public let aud: String
        public let sub: String
        public let iat: TimeInterval
        public let exp: TimeInterval
        /// The decoded claims as Apple sent them.
        public let claims: [String: JSONAny]
    }

    /// One real server-to-server notification.
    public struct Notification: Sendable {
        public let body: [UInt8]
        public let aud: String
        public let iat: TimeInterval
        public let exp: TimeInterval
        public let type: String
        public let sub: String
        public let eventTimeMilliseconds: Int64
    }

    public let jwks: [UInt8]
    public let tokens: [Token]
    public let notifications: [Notification]

    /// Loads the three files from `directory`.
    public init(directory: URL) throws {
        self.jwks = Array(try Data(contentsOf: directory.appendingPathComponent("apple-jwks.json")))
        let tokenList = try JSONDecoder().decode(
            [TokenEntry].self,
            from: Data(contentsOf: directory.appendingPathComponent("identity-tokens.json"))
        )
        self.tokens = tokenList.map {
            Token(
                token: $0.token,
                kid: $0.kid,
                aud: $0.claims["aud"]?.string ?? "",
                sub: $0.claims["sub"]?.string ?? "",
                iat: $0.claims["iat"]?.number ?? 0,
                exp: $0.claims["exp"]?.number ?? 0,
                claims: $0.claims
            )
        }
        let notificationList = try JSONDecoder().decode(
            [NotificationEntry].self,
            from: Data(contentsOf: directory.appendingPathComponent("notifications.json"))
        )
        self.notifications = try notificationList.map {
            Notification(
                body: Array(try JSONEncoder().encode($0.body)),
                aud: $0.claims["aud"]?.string ?? "",
                iat: $0.claims["iat"]?.number ?? 0,
                exp: $0.claims["exp"]?.number ?? 0,
                type: $0.events["type"]?.string ?? "",
                sub: $0.events["sub"]?.string ?? "",
                eventTimeMilliseconds: Int64($0.events["event_time"]?.number ?? 0)
            )
        }
    }

    private struct TokenEntry: Decodable {
        let token: String
        let kid: String
        let claims: [String: JSONAny]
    }

    private struct NotificationEntry: Decodable {
        let body: [String: String]
        let claims: [String: JSONAny]
        let events: [String: JSONAny]
    }
}

/// A JSON scalar as the fixtures hold it.
public enum JSONAny: Decodable, Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case other

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else {
            self = .other
        }
    }

    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var number: Double? {
        if case .number(let value) = self { return value }
        return nil
    }
}
