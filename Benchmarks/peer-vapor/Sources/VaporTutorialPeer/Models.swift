import Fluent
import Vapor

// The tutorial's models: a user found by Apple's user identifier, and opaque bearer tokens kept in the database.

final class User: Model, Content, @unchecked Sendable {
    static let schema = "users"

    @ID(key: .id) var id: UUID?
    @Field(key: "email") var email: String?
    @Field(key: "first_name") var firstName: String?
    @Field(key: "last_name") var lastName: String?
    @Field(key: "apple_user_identifier") var appleUserIdentifier: String?
    @Children(for: \.$user) var tokens: [Token]

    init() {}

    init(id: UUID? = nil, email: String?, firstName: String?, lastName: String?, appleUserIdentifier: String?) {
        self.id = id
        self.email = email
        self.firstName = firstName
        self.lastName = lastName
        self.appleUserIdentifier = appleUserIdentifier
    }

    struct Public: Content {
        let id: UUID?
        let email: String?
        let firstName: String?
        let lastName: String?
    }

    func asPublic() -> Public { Public(id: id, email: email, firstName: firstName, lastName: lastName) }

    func createAccessToken(req: Request) throws -> Token {
        let expiryDate = Date() + 60 * 60 * 24 * 30
        return try Token(value: [UInt8].random(count: 32).base64, expiresAt: expiryDate, userID: requireID())
    }

    static func findByAppleIdentifier(_ identifier: String, req: Request) async throws -> User? {
        try await User.query(on: req.db).filter(\.$appleUserIdentifier == identifier).first()
    }
}

final class Token: Model, Content, @unchecked Sendable {
    static let schema = "tokens"

    @ID(key: .id) var id: UUID?
    @Field(key: "value") var value: String
    @Field(key: "expires_at") var expiresAt: Date?
    @Timestamp(key: "created_at", on: .create) var createdAt: Date?
    @Parent(key: "user_id") var user: User

    init() {}

    init(id: UUID? = nil, value: String, expiresAt: Date?, userID: User.IDValue) {
        self.id = id
        self.value = value
        self.expiresAt = expiresAt
        self.$user.id = userID
    }
}

extension Token: ModelTokenAuthenticatable {
    static var valueKey: KeyPath<Token, Field<String>> { \Token.$value }
    static var userKey: KeyPath<Token, Parent<User>> { \Token.$user }

    var isValid: Bool {
        guard let expiresAt else { return true }
        return expiresAt > Date()
    }
}

struct CreateUser: AsyncMigration {
    func prepare(on database: Database) async throws {
        try await database.schema(User.schema)
            .id()
            .field("email", .string)
            .field("first_name", .string)
            .field("last_name", .string)
            .field("apple_user_identifier", .string)
            .unique(on: "apple_user_identifier")
            .create()
    }

    func revert(on database: Database) async throws { try await database.schema(User.schema).delete() }
}

struct CreateToken: AsyncMigration {
    func prepare(on database: Database) async throws {
        try await database.schema(Token.schema)
            .id()
            .field("value", .string, .required)
            .field("expires_at", .datetime)
            .field("created_at", .datetime)
            .field("user_id", .uuid, .required, .references(User.schema, .id, onDelete: .cascade))
            .unique(on: "value")
            .create()
    }

    func revert(on database: Database) async throws { try await database.schema(Token.schema).delete() }
}

extension User: Authenticatable {}
