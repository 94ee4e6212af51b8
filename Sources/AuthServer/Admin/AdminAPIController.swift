import AccountStore
import AppleSignIn
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The admin API under `/admin/api/` for scripts: the console's operations as JSON, for a bearer access token of an
/// account with the admin role (``AdminAccess``) or a service token (``ServiceTokens``: read for the GET routes,
/// write for the others). 401 without a token, 403 `admin_required` without the role, 403 `insufficient_scope` for a
/// read token that acts; errors as everywhere else (`{"error", "message"}`). Every answer the guard lets through names
/// the credential that acted in `Siwa-Acting-Credential` (`token <name>` or `admin <subject>`).
struct AdminAPIController: RouteProvider {
    let configuration: AuthServerConfiguration
    let access: AdminAccess
    let store: any AccountStore
    let actions: AdminActions
    let clock: any WallClock

    /// An admin's session as a bearer token only, or a service token of either scope: a session cookie does not
    /// count, so that a page of another site (or a sibling subdomain) cannot drive the API with the admin's browser.
    static let reading = RouteAccess(credential: .adminOrReadToken, presentations: [.bearer], required: true)
    /// As ``reading``, but a service token must have scope write: the routes that change accounts.
    static let acting = RouteAccess(credential: .adminOrWriteToken, presentations: [.bearer], required: true)

    func addRoutes(to routes: PolicedRoutes) {
        let api = routes.group("/admin/api")
        api.get("/users", access: Self.reading, use: users)
        api.get("/users/:id", access: Self.reading, use: user)
        api.get("/users/:id/sessions", access: Self.reading, use: userSessions)
        api.post("/users/:id/sessions/end", access: Self.acting, use: endSessions)
        api.post("/users/:id/disable", access: Self.acting, use: disable)
        api.post("/users/:id/enable", access: Self.acting, use: enable)
        api.delete("/users/:id", access: Self.acting, use: delete)
        api.get("/audit", access: Self.reading, use: audit)
        api.get("/events", access: Self.reading, use: events)
        api.get("/stats", access: Self.reading, use: stats)
        addWebhookRoutes(to: api)
    }

    // MARK: Reading

    struct UserSummary: ResponseCodable, Equatable {
        var id: String
        var appleUserID: String
        var email: String?
        var isPrivateEmail: Bool
        var displayName: String?
        var status: String
        var createdAt: Date
        var lastSignInAt: Date?

        init(_ user: UserRecord) {
            id = user.id.description
            appleUserID = user.appleUserID.rawValue
            email = user.email
            isPrivateEmail = user.isPrivateEmail
            displayName = user.displayName
            status = user.status.rawValue
            createdAt = user.createdAt
            lastSignInAt = user.lastSignInAt
        }
    }

    struct UsersPage: ResponseCodable {
        var users: [UserSummary]
        /// Pass as `after` for the next page; absent on the last.
        var next: String?
    }

    @Sendable func users(_ request: Request, context: SiwaRequestContext) async throws -> UsersPage {
        _ = try await access.caller(context)
        let query = request.uri.queryParameters["query"].map(String.init) ?? ""
        let limit = try RequestFields.limit(request)
        let cursor = try RequestFields.cursor(request)
        let page = try await RequestFields.refusingForeignCursors {
            try await store.searchUsers(query, limit: limit, after: cursor)
        }
        return UsersPage(users: page.items.map(UserSummary.init), next: page.next?.description)
    }

    struct UserDetail: ResponseCodable {
        var user: UserSummary
        var emailVerified: Bool
        var emailForwarding: Bool
        var givenName: String?
        var familyName: String?
        var clientID: String
        var disabledAt: Date?
        var appleConsentRevokedAt: Date?
        /// Whether an Apple refresh token is held (for revocation), and when Apple last confirmed it.
        var appleRefreshToken: AppleTokenSummary?
        var admin: Bool
    }

    struct AppleTokenSummary: Codable {
        var clientID: String
        var storedAt: Date
        var lastValidatedAt: Date?
    }

    @Sendable func user(_ request: Request, context: SiwaRequestContext) async throws -> UserDetail {
        _ = try await access.caller(context)
        let user = try await existingUser(context)
        let token = try await store.appleToken(userID: user.id)
        return UserDetail(
            user: UserSummary(user),
            emailVerified: user.emailVerified,
            emailForwarding: user.emailForwarding,
            givenName: user.givenName,
            familyName: user.familyName,
            clientID: user.clientID.rawValue,
            disabledAt: user.disabledAt,
            appleConsentRevokedAt: user.appleConsentRevokedAt,
            appleRefreshToken: token.map {
                AppleTokenSummary(
                    clientID: $0.clientID.rawValue,
                    storedAt: $0.storedAt,
                    lastValidatedAt: $0.lastValidatedAt
                )
            },
            admin: try await access.role(of: user) != nil
        )
    }

    struct SessionSummary: Codable, Equatable {
        var id: String
        var createdAt: Date
        var lastUsedAt: Date?
        var expiresAt: Date?
        var endedAt: Date?
        var active: Bool
        var channel: String?
        var userAgent: String?
        var clientAddress: String?
    }

    struct SessionsList: ResponseCodable {
        var sessions: [SessionSummary]
    }

    @Sendable func userSessions(_ request: Request, context: SiwaRequestContext) async throws -> SessionsList {
        _ = try await access.caller(context)
        let user = try await existingUser(context)
        let now = clock.now
        let records = try await store.sessions(userID: user.id, now: now, limit: RequestFields.maximumLimit)
        return SessionsList(
            sessions: records.map { record in
                SessionSummary(
                    id: record.id.description,
                    createdAt: record.createdAt,
                    lastUsedAt: record.lastUsedAt,
                    expiresAt: record.expiresAt,
                    endedAt: record.revokedAt,
                    active: record.isActive(at: now),
                    channel: record.metadata.channel?.rawValue,
                    userAgent: record.metadata.userAgent,
                    clientAddress: record.metadata.clientAddress
                )
            }
        )
    }

    struct AuditEntry: Codable, Equatable {
        var id: String
        var time: Date
        var type: String
        var userID: String?
        var actor: String
        var actorSubject: String?
        var channel: String?
        var clientID: String?
        var reason: String?
        var sessionID: String?
        var details: [String: String]

        init(_ event: AuditEvent) {
            id = AuditLogPosition.text(event.id)
            time = event.time
            type = event.type.rawValue
            userID = event.userID?.description
            actor = event.actor.kind
            actorSubject = event.actor.storedSubject
            channel = event.channel?.rawValue
            clientID = event.clientID?.rawValue
            reason = event.reason
            sessionID = event.sessionID?.description
            details = event.details
        }
    }

    struct AuditPage: ResponseCodable {
        var events: [AuditEntry]
        var next: String?
    }

    /// The audit filter of `/admin/api/audit` and the console's audit page: `user` (a siwa user id), `type` (event
    /// types, comma-separated), `since` and `until` (ISO 8601 dates or times). Anything it cannot read is a 400 naming
    /// the parameter, never a filter quietly left out.
    static func auditFilter(_ parameters: FlatDictionary<Substring, Substring>) throws -> AuditEventFilter {
        try auditFilter { parameters[Substring($0)].map(String.init) }
    }

    /// The audit filter of the parameters `parameter` answers (`user`, `type`, `since`, `until`).
    /// - Throws: 400 naming the parameter that cannot be read.
    static func auditFilter(_ parameter: (String) -> String?) throws -> AuditEventFilter {
        var filter = AuditEventFilter()
        if let user = parameter("user"), !user.isEmpty {
            guard let id = UserID(user) else { throw RequestFields.invalid("user", "is not a siwa user id") }
            filter.userID = id
        }
        if let types = parameter("type"), !types.isEmpty {
            var chosen = Set<AuditEventType>()
            for name in types.split(separator: ",") {
                guard let type = AuditEventType(rawValue: String(name)) else {
                    let known = AuditEventType.allCases.map(\.rawValue).joined(separator: ", ")
                    throw RequestFields.invalid(
                        "type",
                        "names an unknown event type \(LoggedText.quoted(name, limit: 64)) (known: \(known))"
                    )
                }
                chosen.insert(type)
            }
            filter.types = chosen
        }
        filter.since = try RequestFields.date(parameter("since"), "since")
        filter.until = try RequestFields.date(parameter("until"), "until")
        return filter
    }

    @Sendable func audit(_ request: Request, context: SiwaRequestContext) async throws -> AuditPage {
        _ = try await access.caller(context)
        let filter = try Self.auditFilter(request.uri.queryParameters)
        let limit = try RequestFields.limit(request)
        let cursor = try RequestFields.cursor(request)
        let page = try await RequestFields.refusingForeignCursors {
            try await store.auditEvents(filter, limit: limit, after: cursor)
        }
        return AuditPage(events: page.items.map(AuditEntry.init), next: page.next?.description)
    }

    /// The events feed: the lifecycle events after `after` (a previous page's `next`; none: from the oldest kept), in
    /// commit order, at most `limit`. A backend that stores `next` with what it did and asks again misses no event,
    /// also after an outage shorter than the retention (`SIWA_EVENT_RETENTION_DAYS`).
    @Sendable func events(_ request: Request, context: SiwaRequestContext) async throws -> LifecycleEventPage {
        _ = try await access.caller(context)
        let limit = try RequestFields.limit(request)
        let after = try RequestFields.integer(
            request.uri.queryParameters["after"].map(String.init),
            "after",
            0...Int.max
        ).map(Int64.init)
        let events = try await store.lifecycleEvents(after: after, limit: limit)
        return LifecycleEventPage(
            events: events.map(LifecycleEventMessage.init),
            next: String(events.last?.sequence ?? after ?? 0),
            hasMore: events.count == limit
        )
    }

    // MARK: Acting

    /// `POST /users/{id}/sessions/end`'s body: one session by its id, or (an empty body or `{}`) every session.
    struct EndSessionsRequest: Decodable {
        var sessionId: String?
        static let members: Set<String> = ["sessionId"]
    }

    /// The body of a route that takes none: empty, or `{}`.
    struct NoBody: Decodable {}

    /// The route's JSON body, `nil` when empty. Strict: a member the route does not know is 400 `unknown_field` naming
    /// it, so that a misspelt `sessionID` cannot widen "end this session" to "end every session".
    private func body<Body: Decodable>(
        _ request: Request,
        _ type: Body.Type,
        members: Set<String>
    ) async throws -> Body? {
        var request = request
        let bytes = try await request.collectBody(limit: configuration.maximumBodySize)
        guard bytes.readableBytes > 0 else { return nil }
        return try request.decodeJSON(Body.self, from: bytes, members: members)
    }

    struct Ended: ResponseCodable {
        var endedSessions: [String]
    }

    @Sendable func endSessions(_ request: Request, context: SiwaRequestContext) async throws -> Ended {
        let caller = try await access.caller(context)
        let user = try await existingUser(context)
        let wanted = try await body(request, EndSessionsRequest.self, members: EndSessionsRequest.members)?.sessionId
        let sessionID = try wanted.map { text in
            guard let id = SessionID(text) else { throw RequestFields.invalid("sessionId", "is not a session id") }
            return id
        }
        let ended = try await actions.endSessions(of: user, only: sessionID, by: caller)
        return Ended(endedSessions: ended.map(\.description))
    }

    @Sendable func disable(_ request: Request, context: SiwaRequestContext) async throws -> UserSummary {
        let caller = try await access.caller(context)
        _ = try await body(request, NoBody.self, members: [])
        return UserSummary(try await actions.disable(try await existingUser(context), by: caller))
    }

    @Sendable func enable(_ request: Request, context: SiwaRequestContext) async throws -> UserSummary {
        let caller = try await access.caller(context)
        _ = try await body(request, NoBody.self, members: [])
        return UserSummary(try await actions.enable(try await existingUser(context), by: caller))
    }

    struct Deleted: ResponseCodable {
        var user: String
        var mode: String
        var endedSessions: Int
        var appleRevocation: String
    }

    @Sendable func delete(_ request: Request, context: SiwaRequestContext) async throws -> Deleted {
        let caller = try await access.caller(context)
        _ = try await body(request, NoBody.self, members: [])
        let user = try await existingUser(context)
        let deletion = try await actions.delete(user, by: caller)
        return Deleted(
            user: user.id.description,
            mode: deletion.mode.rawValue,
            endedSessions: deletion.endedSessions.count,
            appleRevocation: deletion.appleRevocation.summary
        )
    }

    // MARK: Statistics

    struct Stats: ResponseCodable {
        struct Accounts: Codable {
            var total: Int
            var newLast24Hours: Int
            var newLast7Days: Int
        }

        /// The UTC days, oldest first; every series below has one number per day, in this order.
        var days: [String]
        var accounts: Accounts
        var signInsByChannel: [String: [Int]]
        var newAccounts: [Int]
        var refreshTokenReuse: [Int]
        var refusedSignInsByReason: [String: [Int]]
    }

    @Sendable func stats(_ request: Request, context: SiwaRequestContext) async throws -> Stats {
        _ = try await access.caller(context)
        let count =
            try RequestFields.integer(request.uri.queryParameters["days"].map(String.init), "days", 1...366) ?? 30
        return try await AdminStatistics(store: store, now: clock.now).stats(days: count)
    }

    // MARK: Reading the request

    private func existingUser(_ context: SiwaRequestContext) async throws -> UserRecord {
        let text = context.parameters.get("id") ?? ""
        guard let id = UserID(text) else { throw RequestFields.invalid("id", "is not a siwa user id") }
        guard let user = try await store.user(id: id) else { throw Self.noSuchUser }
        return user
    }

    static let noSuchUser = AuthServerError(
        .notFound,
        AuthServerError.Code.notFound,
        "there is no account with that id"
    )
}
