public import AccountStore
import AppleSignIn
public import Hummingbird
public import NIOCore

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
        self.displayName = user.displayName
        self.createdAt = user.createdAt
    }
}

extension UserResponse {
    /// The object as JSON, written directly (the same document `JSONEncoder` with ISO 8601 dates writes, without its
    /// cost): `GET /api/me` answers these bytes, kept with the account in the user cache.
    public var jsonBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.append(UInt8(ascii: "{"))
        func key(_ name: String) {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            JSONWriter.appendString(name, to: &out)
            out.append(UInt8(ascii: ":"))
        }
        func string(_ name: String, _ value: String?) {
            guard let value else { return }
            key(name)
            JSONWriter.appendString(value, to: &out)
        }
        func bool(_ name: String, _ value: Bool) {
            key(name)
            out.append(contentsOf: (value ? "true" : "false").utf8)
        }
        string("id", id)
        string("email", email)
        bool("emailVerified", emailVerified)
        bool("isPrivateEmail", isPrivateEmail)
        bool("emailForwarding", emailForwarding)
        string("givenName", givenName)
        string("familyName", familyName)
        string("displayName", displayName)
        key("createdAt")
        out.append(UInt8(ascii: "\""))
        ISO8601Time.append(seconds: Self.wholeSeconds(createdAt), to: &out)
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// `2026-11-21T23:39:59Z`, as `JSONEncoder.DateEncodingStrategy.iso8601` writes it (whole seconds, UTC).
    static func iso8601(_ date: Date) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(20)
        ISO8601Time.append(seconds: wholeSeconds(date), to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The whole seconds since 1970 that `JSONEncoder`'s ISO 8601 dates show (rounded down, also before 1970).
    private static func wholeSeconds(_ date: Date) -> Int64 {
        Int64(date.timeIntervalSince1970.rounded(.down))
    }
}

/// The answer of a sign-in or a refresh.
public struct SessionResponse: ResponseGenerator {
    public var accessToken: String
    public var tokenType = "Bearer"
    public var expiresIn: Int
    public var refreshToken: String
    public var isNewUser: Bool?
    /// The account's `user` object, already encoded: the user cache's bytes (``UserCache/Entry/json``), the object
    /// `GET /api/me` answers. `nil` in a refresh's answer.
    public var userJSON: ByteBuffer?

    public init(
        accessToken: String,
        expiresIn: Int,
        refreshToken: String,
        isNewUser: Bool? = nil,
        userJSON: ByteBuffer? = nil
    ) {
        self.accessToken = accessToken
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.isNewUser = isNewUser
        self.userJSON = userJSON
    }
}

extension SessionResponse {
    /// The document, written directly (the one `JSONEncoder` would write, without its cost on every sign-in and
    /// refresh).
    public var jsonBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(768)
        out.append(contentsOf: #"{"accessToken":"#.utf8)
        JSONWriter.appendString(accessToken, to: &out)
        out.append(contentsOf: #","tokenType":"#.utf8)
        JSONWriter.appendString(tokenType, to: &out)
        out.append(contentsOf: #","expiresIn":"#.utf8)
        out.append(contentsOf: String(expiresIn).utf8)
        out.append(contentsOf: #","refreshToken":"#.utf8)
        JSONWriter.appendString(refreshToken, to: &out)
        if let isNewUser { out.append(contentsOf: (isNewUser ? #","isNewUser":true"# : #","isNewUser":false"#).utf8) }
        if let userJSON {
            out.append(contentsOf: #","user":"#.utf8)
            out.append(contentsOf: userJSON.readableBytesView)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response { response }

    /// The answer: ``jsonBytes``, not to be stored.
    var response: Response {
        Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: jsonBytes))
        )
    }
}

extension UserRecord {
    /// Given and family name, or `nil` when neither is known.
    var fullName: String? {
        let name = [givenName, familyName].compactMap { $0 }.joined(separator: " ")
        return name.isEmpty ? nil : name
    }

    /// The name to show: the full name, else the email (the one rule for every route and contract).
    var displayName: String? { fullName ?? email }
}
