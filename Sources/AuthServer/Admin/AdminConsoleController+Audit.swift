import AccountStore
import AppleSignIn
import Foundation
import Hummingbird

/// The console's audit log: events in words, naming people (the account's and the admin's name or email, linked)
/// rather than ids, with the session an event started or ended and where a sign-in came from.
extension AdminConsoleController {
    /// The periods the audit page offers, as `period` values and their labels.
    static let auditPeriods: [(value: String, label: String, seconds: TimeInterval)] = [
        ("1h", "Last hour", 3_600), ("24h", "Last 24 hours", 86_400), ("7d", "Last 7 days", 7 * 86_400),
        ("30d", "Last 30 days", 30 * 86_400),
    ]

    @Sendable func audit(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        let gate = try await gate(request, context)
        guard case .admin(let admin) = gate else { return gate.answer }
        let parameters = request.uri.queryParameters
        func parameter(_ name: String) -> String { parameters[Substring(name)].map(String.init) ?? "" }
        let userText = parameter("user").trimmingCharacters(in: .whitespaces)
        let typeText = parameter("type")
        let periodText = parameter("period")
        var notice = ""
        let page: Page<AuditEvent>
        do {
            var filter = try AdminAPIController.auditFilter { name in
                // An account may be named by its email here; the API takes ids only.
                name == "user" && userText.contains("@") ? nil : parameters[Substring(name)].map(String.init)
            }
            if !periodText.isEmpty {
                guard let period = Self.auditPeriods.first(where: { $0.value == periodText }) else {
                    let known = Self.auditPeriods.map(\.value).joined(separator: ", ")
                    throw RequestFields.invalid("period", "must be one of \(known)")
                }
                filter.since = max(filter.since ?? .distantPast, clock.now.addingTimeInterval(-period.seconds))
            }
            if userText.contains("@") {
                let matches = try await store.users(email: userText)
                guard let first = matches.first else {
                    return self.page(
                        "Audit log",
                        .audit,
                        admin,
                        auditFilterForm(
                            userText,
                            typeText,
                            periodText,
                            since: parameter("since"),
                            until: parameter("until")
                        )
                            + "<p class=\"notice\">No account has the email \(HTMLPage.escape(userText)).</p>"
                    )
                }
                filter.userID = first.id
                if matches.count > 1 {
                    notice =
                        "<p class=\"notice\">\(matches.count) accounts have this email; these are the events of "
                        + "\(accountLink(first)). Find the others under <a href=\"/admin/users?q="
                        + "\(Self.queryValue(userText))\">Users</a>.</p>"
                }
            }
            let cursor = try RequestFields.cursor(request)
            page = try await RequestFields.refusingForeignCursors {
                try await store.auditEvents(filter, limit: RequestFields.pageLimit, after: cursor)
            }
        } catch let error as AuthServerError {
            return Self.refusal(error, admin: admin)
        }
        let people = try await people(in: page.items)
        let rows = page.items.map { auditRow($0, people) }.joined()
        var nextQuery = "user=\(Self.queryValue(userText))&amp;type=\(Self.queryValue(typeText))"
        nextQuery += "&amp;period=\(Self.queryValue(periodText))"
        nextQuery += "&amp;since=\(Self.queryValue(parameter("since")))"
        nextQuery += "&amp;until=\(Self.queryValue(parameter("until")))"
        let next =
            page.next.map {
                "<div class=\"pager\"><a href=\"/admin/audit?\(nextQuery)&amp;after=\($0)\">Older events</a></div>"
            } ?? ""
        let main = """
            \(auditFilterForm(userText, typeText, periodText, since: parameter("since"), until: parameter("until")))\(notice)
            <div class="panel scroll"><table><thead><tr><th>Time (UTC)</th><th>Event</th><th>Account</th><th>By</th>\
            <th>Details</th></tr></thead><tbody>\(rows.isEmpty ? "<tr><td colspan=\"5\">No events.</td></tr>" : rows)</tbody></table></div>\(next)
            """
        return self.page("Audit log", .audit, admin, main)
    }

    private func auditFilterForm(
        _ userText: String,
        _ typeText: String,
        _ periodText: String,
        since: String,
        until: String
    ) -> String {
        let types = [("", "All events")] + AuditEventType.allCases.map { ($0.rawValue, Self.words($0)) }
        let typeOptions = types.map { value, label in
            "<option value=\"\(value)\"\(value == typeText ? " selected" : "")>\(HTMLPage.escape(label))</option>"
        }.joined()
        let periods = [("", "Any time")] + Self.auditPeriods.map { ($0.value, $0.label) }
        let periodOptions = periods.map { value, label in
            "<option value=\"\(value)\"\(value == periodText ? " selected" : "")>\(label)</option>"
        }.joined()
        return """
            <form class="search" method="get" action="/admin/audit">\
            <label>Account<input type="text" name="user" value="\(HTMLPage.escape(userText))" \
            placeholder="email or siwa id"></label>\
            <label>Event<select name="type">\(typeOptions)</select></label>\
            <label>Period<select name="period">\(periodOptions)</select></label>\
            <label>From<input type="date" name="since" value="\(HTMLPage.escape(since))"></label>\
            <label>Until<input type="date" name="until" value="\(HTMLPage.escape(until))"></label>\
            <button type="submit">Filter</button></form>
            """
    }

    // MARK: People

    /// The accounts, admins and sessions a page of events names, each looked up once.
    struct AuditPeople: Sendable {
        var accounts: [UserID: UserRecord] = [:]
        var admins: [AdminSubject: UserRecord] = [:]
        /// The sessions sign-ins started, for where they came from (kept while the session's rows are).
        var sessions: [SessionID: SessionRecord] = [:]
    }

    func people(in events: [AuditEvent]) async throws -> AuditPeople {
        var people = AuditPeople()
        for id in Set(events.compactMap(\.userID)) {
            people.accounts[id] = try await store.user(id: id)
        }
        for subject in Set(events.compactMap(\.actor.subject)) {
            if let id = UserID(subject.rawValue) {
                if let known = people.accounts[id] {
                    people.admins[subject] = known
                } else {
                    people.admins[subject] = try await store.user(id: id)
                }
            } else {
                people.admins[subject] = try await store.user(appleUserID: AppleUserID(subject.rawValue))
            }
        }
        let started = Set(events.filter { $0.type == .signIn }.compactMap(\.sessionID))
        if !started.isEmpty {
            let owners = Set(events.filter { $0.type == .signIn && $0.sessionID != nil }.compactMap(\.userID))
            for owner in owners {
                for session in try await store.sessions(
                    userID: owner,
                    now: clock.now,
                    limit: RequestFields.maximumLimit
                ) where started.contains(session.id) {
                    people.sessions[session.id] = session
                }
            }
        }
        return people
    }

    /// One event as a row of the audit table.
    func auditRow(_ event: AuditEvent, _ people: AuditPeople) -> String {
        let account: String
        if let id = event.userID {
            account = people.accounts[id].map(accountLink) ?? "a deleted account <code>\(Self.shortID(id))</code>"
        } else {
            account = "–"
        }
        var details: [String] = []
        if let session = event.sessionID {
            let verb =
                switch event.type {
                case .signIn: "started"
                case .sessionEnded, .refreshTokenReuse: "ended"
                default: "session"
                }
            details.append("\(verb == "session" ? "session" : "session \(verb)") <code>\(Self.shortID(session))</code>")
            if let metadata = people.sessions[session]?.metadata {
                if let address = metadata.clientAddress { details.append("from \(HTMLPage.escape(address))") }
                if let agent = metadata.userAgent {
                    details.append("<span class=\"muted\">\(HTMLPage.escape(agent))</span>")
                }
            }
        }
        if let channel = event.channel { details.append("via \(HTMLPage.escape(channel.rawValue))") }
        if let client = event.clientID { details.append("client \(HTMLPage.escape(client.rawValue))") }
        if let reason = event.reason { details.append("reason <code>\(HTMLPage.escape(reason))</code>") }
        details += event.details.sorted { $0.key < $1.key }.map {
            "\(HTMLPage.escape($0.key)) \(HTMLPage.escape($0.value))"
        }
        return """
            <tr><td>\(Self.time(event.time))</td><td>\(HTMLPage.escape(Self.words(event.type)))</td>\
            <td>\(account)</td><td>\(actor(event, people))</td><td>\(details.joined(separator: ", "))</td></tr>
            """
    }

    /// Who acted, in words: the account's own user, an admin by name (linked), Apple, siwa, an operator, or a service token.
    private func actor(_ event: AuditEvent, _ people: AuditPeople) -> String {
        switch event.actor {
        case .user: "the user"
        case .admin(let subject):
            people.admins[subject].map { "admin " + accountLink($0) }
                ?? "admin <code>\(HTMLPage.escape(subject.rawValue))</code>"
        case .apple: "Apple"
        case .system: "siwa"
        case .operator: "an operator (command line)"
        case .serviceToken(let name): "service token <code>\(HTMLPage.escape(name))</code>"
        }
    }

    /// An account's name (or email, or id) linked to its page, with its email beside a name.
    func accountLink(_ user: UserRecord) -> String {
        let label = HTMLPage.escape(user.displayName ?? user.email ?? Self.shortID(user.id))
        let email =
            user.displayName != nil && user.email != nil
            ? " <span class=\"muted\">\(HTMLPage.escape(user.email ?? ""))</span>" : ""
        return "<a href=\"/admin/users/\(user.id)\">\(label)</a>\(email)"
    }

    /// The last eight characters of an id: enough to tell events apart on a page (the first ones of a time-ordered id
    /// are its time, alike for a minute); the full id is a link away.
    static func shortID(_ id: some CustomStringConvertible) -> String {
        String(id.description.suffix(8))
    }

    /// An event type in words, as the console shows it.
    static func words(_ type: AuditEventType) -> String {
        switch type {
        case .signIn: "Signed in"
        case .signInRefused: "Sign-in refused"
        case .refreshTokenReuse: "Refresh token reused"
        case .sessionEnded: "Session ended"
        case .accountCreated: "Account created"
        case .accountDisabled: "Account disabled"
        case .accountEnabled: "Account enabled"
        case .accountDeleted: "Account deleted"
        case .appleNotificationApplied: "Apple notification applied"
        case .appleNotificationIgnored: "Apple notification ignored"
        case .appleRevocationDone: "Apple token revoked"
        case .appleRevocationConfirmed: "Apple token revoked (confirmed)"
        case .appleRevocationQueued: "Apple revocation queued"
        case .adminGranted: "Admin role granted"
        case .adminRevoked: "Admin role revoked"
        case .transferExported: "Team transfer: exported"
        case .transferCompleted: "Team transfer: completed"
        case .clientConsentGranted: "App allowed (OpenID consent)"
        case .adminTokenCreated: "Service token created"
        case .adminTokenRevoked: "Service token revoked"
        case .webhookEndpointDisabled: "Webhook endpoint disabled"
        case .webhookEndpointEnabled: "Webhook endpoint enabled"
        case .webhookRedelivered: "Webhook redelivered"
        }
    }
}
