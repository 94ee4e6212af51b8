import Fluent
import FluentSQLiteDriver
import JWT
import SQLKit
import Vapor

// The server of the Vapor 4 "Sign in with Apple" tutorial (its `SIWAAPIController` and `UserController`), as its
// readers write it: vapor/jwt verifies the identity token against Apple's key set, Fluent on SQLite finds or creates
// the user by Apple's user identifier and stores a random bearer token, `GET /api/users/me` looks the token up in the
// database. Only what the benchmark needs differs: the key set's URL (the emulator's, since Apple is not reachable
// here), the port, the database file, and optionally WAL with `synchronous=NORMAL` (PEER_SQLITE_WAL=1), the tuning
// a reader might add.
//
//   PEER_PORT=18081 PEER_DATABASE=/tmp/peer.sqlite PEER_APPLE_KEYS_URL=http://127.0.0.1:19090/auth/keys \
//   PEER_BUNDLE_ID=com.example.siwa.demo swift run -c release --package-path Benchmarks/peer-vapor

struct SIWAAPIController: RouteCollection {
    let applicationIdentifier: String

    struct SIWARequestBody: Content {
        let firstName: String?
        let lastName: String?
        let appleIdentityToken: String
    }

    struct UserResponse: Content {
        let accessToken: String
        let user: User.Public
    }

    func boot(routes: RoutesBuilder) throws {
        routes.grouped("api", "auth").post("siwa", use: authHandler)
    }

    func authHandler(req: Request) async throws -> UserResponse {
        let userBody = try req.content.decode(SIWARequestBody.self)
        let appleIdentityToken = try await req.jwt.apple.verify(
            userBody.appleIdentityToken,
            applicationIdentifier: applicationIdentifier
        )
        if let user = try await User.findByAppleIdentifier(appleIdentityToken.subject.value, req: req) {
            return try await Self.signIn(user: user, req: req)
        }
        return try await Self.signUp(
            appleIdentityToken: appleIdentityToken,
            firstName: userBody.firstName,
            lastName: userBody.lastName,
            req: req
        )
    }

    static func signUp(
        appleIdentityToken: AppleIdentityToken,
        firstName: String?,
        lastName: String?,
        req: Request
    ) async throws -> UserResponse {
        let user = User(
            email: appleIdentityToken.email,
            firstName: firstName,
            lastName: lastName,
            appleUserIdentifier: appleIdentityToken.subject.value
        )
        try await user.save(on: req.db)
        return try await signIn(user: user, req: req)
    }

    static func signIn(user: User, req: Request) async throws -> UserResponse {
        let token = try user.createAccessToken(req: req)
        try await token.save(on: req.db)
        return UserResponse(accessToken: token.value, user: user.asPublic())
    }
}

struct UserController: RouteCollection {
    func boot(routes: RoutesBuilder) throws {
        let protected = routes.grouped("api", "users").grouped(Token.authenticator(), User.guardMiddleware())
        protected.get("me") { req -> User.Public in try req.auth.require(User.self).asPublic() }
    }
}

let environment = ProcessInfo.processInfo.environment
var env = try Environment.detect()
try LoggingSystem.bootstrap(from: &env)
let app = try await Application.make(env)
app.http.server.configuration.hostname = "127.0.0.1"
app.http.server.configuration.port = Int(environment["PEER_PORT"] ?? "") ?? 18081
app.databases.use(.sqlite(.file(environment["PEER_DATABASE"] ?? "peer.sqlite")), as: .sqlite)
app.migrations.add(CreateUser())
app.migrations.add(CreateToken())
app.jwt.apple.jwksEndpoint = URI(string: environment["PEER_APPLE_KEYS_URL"] ?? "https://appleid.apple.com/auth/keys")
let bundleID = environment["PEER_BUNDLE_ID"] ?? "com.example.siwa.demo"
try app.register(collection: SIWAAPIController(applicationIdentifier: bundleID))
try app.register(collection: UserController())
try await app.autoMigrate()
if environment["PEER_SQLITE_WAL"] == "1" {
    // One connection per event loop: set the per-connection pragma on each.
    for loop in app.eventLoopGroup.makeIterator() {
        let database = app.databases.database(.sqlite, logger: app.logger, on: loop)
        guard let sql = database as? SQLDatabase else { continue }
        try await sql.raw("PRAGMA journal_mode=WAL").run()
        try await sql.raw("PRAGMA synchronous=NORMAL").run()
    }
}
do {
    try await app.execute()
} catch {
    app.logger.report(error: error)
    try? await app.asyncShutdown()
    throw error
}
try await app.asyncShutdown()
