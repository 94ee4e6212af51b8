import Crypto
import Foundation

/// The emulator console's HTML: the overview at `/`, the pages its forms answer with, and the log table. Plain forms,
/// no script at all; every value from outside (emails, names, client ids) is escaped.
enum ConsolePage {
    /// What the overview shows.
    struct Model {
        var teams: [EmulatorConfiguration.Team]
        var appleIDs: [AppleIDRecord]
        /// Kept notifications, oldest first.
        var notifications: [SentNotificationRecord]
        var faults: [String: EmulatorFault]
        var currentKeyID: String
    }

    /// The notification types the emulator signs.
    static let notificationTypes = ["email-disabled", "email-enabled", "consent-revoked", "account-delete"]

    // MARK: Overview

    /// `GET /`.
    static func home(_ model: Model) -> String {
        page(
            title: "Apple ID emulator console",
            body: """
                <h1>Emulator console</h1>
                <nav class="toc"><a href="#sign-in">Sign in</a> <a href="#apple-ids">Apple IDs</a> \
                <a href="#notifications">Notifications</a> <a href="#keys">Keys and faults</a> \
                <a href="#teams">Teams</a> <a href="/emulator/log" id="log-link">Log</a></nav>
                \(signInSection(model.teams))
                \(appleIDSection(model))
                \(notificationSection(model.notifications))
                \(keySection(model))
                \(teamSection(model.teams))
                """
        )
    }

    private static func signInSection(_ teams: [EmulatorConfiguration.Team]) -> String {
        let clientIDs = teams.flatMap { $0.clients.map(\.clientID) }
        let options = clientIDs.map { #"<option value="\#(escape($0))">"# }.joined()
        return """
            <section id="sign-in">
            <h2>Sign in natively</h2>
            <p class="hint">What an app receives in <code>ASAuthorizationAppleIDCredential</code>. A client id that no \
            team registers still gets a token, signed by the emulator with <code>aud</code> set to that id, so that you \
            can check that your server refuses another app's token.</p>
            <form method="post" action="/console/native-sign-in" id="native-sign-in" class="grid">
            <label>Client id <input type="text" name="clientId" id="sign-in-client" list="client-ids" required \
            value="\(escape(clientIDs.first ?? ""))" autocomplete="off"></label>
            <datalist id="client-ids">\(options)</datalist>
            <label>Apple ID email <input type="email" name="email" id="sign-in-email" required \
            value="jane@example.com" autocomplete="off"></label>
            <label>First name <input type="text" name="givenName" autocomplete="off"></label>
            <label>Last name <input type="text" name="familyName" autocomplete="off"></label>
            <label>Nonce <input type="text" name="nonce" autocomplete="off"></label>
            <label class="check"><input type="checkbox" name="hideEmail" value="true"> Hide My Email</label>
            <button type="submit" class="primary">Sign in</button>
            </form>
            </section>
            """
    }

    private static func appleIDSection(_ model: Model) -> String {
        let cards =
            model.appleIDs.isEmpty
            ? #"<p class="hint">No Apple ID yet: sign in natively above, or through a web sign-in.</p>"#
            : model.appleIDs.map { appleIDCard($0, teams: model.teams) }.joined(separator: "\n")
        return """
            <section id="apple-ids">
            <h2>Apple IDs</h2>
            <p class="hint">Consent is per team, as at Apple: every app of a team shares it.</p>
            \(cards)
            </section>
            """
    }

    private static func appleIDCard(_ record: AppleIDRecord, teams: [EmulatorConfiguration.Team]) -> String {
        let name = [record.givenName, record.familyName].compactMap { $0 }.joined(separator: " ")
        var rows: [String] = []
        for (teamID, link) in record.teams.sorted(by: { $0.key < $1.key }) {
            let clients = teams.first { $0.teamID == teamID }?.clients.map(\.clientID) ?? []
            for clientID in clients {
                rows.append(appleIDRow(email: record.email, teamID: teamID, clientID: clientID, link: link))
            }
        }
        return """
            <article class="card apple-id" data-email="\(escape(record.email))">
            <h3>\(escape(record.email))</h3>
            \(name.isEmpty ? "" : #"<p class="hint">\#(escape(name))</p>"#)
            <table class="stack">
            <thead><tr><th>Client id</th><th>Team</th><th>sub</th><th>Relay address</th><th>Email</th>\
            <th>Consent</th><th>Actions</th></tr></thead>
            <tbody>
            \(rows.joined(separator: "\n"))
            </tbody>
            </table>
            <form method="post" action="/console/delete-apple-id" class="inline delete">\(hidden("email", record.email))\
            <button type="submit" class="danger">Delete this Apple ID</button></form>
            <span class="hint">(forgets it here and kills its tokens; notifies no one: send <code>account-delete</code> \
            for that)</span>
            </article>
            """
    }

    private static func appleIDRow(email: String, teamID: String, clientID: String, link: TeamLink) -> String {
        let consent =
            link.consented
            ? #"<span class="granted">granted</span>"#
            : link.consentRevokedAt != nil
                ? #"<span class="revoked">revoked</span>"# : #"<span class="hint">not granted</span>"#
        let shared =
            (link.hideEmail ? "Hide My Email" : "Share My Email") + (link.emailForwarding ? "" : ", forwarding off")
        let target = hidden("clientId", clientID) + hidden("email", email)
        let types = notificationTypes.map { "<option>\($0)</option>" }.joined()
        return """
            <tr data-client="\(escape(clientID))">\
            <td data-label="Client id"><code>\(escape(clientID))</code></td>\
            <td data-label="Team">\(escape(teamID))</td>\
            <td data-label="sub"><code>\(escape(link.sub))</code></td>\
            <td data-label="Relay address">\(escape(link.relayEmail))</td>\
            <td data-label="Email">\(shared)</td>\
            <td data-label="Consent" class="consent">\(consent)</td>\
            <td class="actions">\
            <form method="post" action="/console/native-sign-in" class="inline sign-in">\(target)\
            <button type="submit">Sign in</button></form>\
            <form method="post" action="/console/revoke-consent" class="inline revoke">\(target)\
            <button type="submit">Revoke consent</button></form>\
            <form method="post" action="/console/notifications" class="inline notify">\(target)\
            <select name="type" aria-label="Notification type">\(types)</select>\
            <button type="submit">Send</button></form>\
            </td></tr>
            """
    }

    private static func notificationSection(_ notifications: [SentNotificationRecord]) -> String {
        guard let last = notifications.last else {
            return """
                <section id="notifications">
                <h2>Sent notifications</h2>
                <p class="hint">None yet: send one from an Apple ID above.</p>
                </section>
                """
        }
        let rows = notifications.reversed().map { sent in
            """
            <tr data-notification="\(escape(sent.id))">\
            <td data-label="Sent">\(time(sent.sentAt))</td>\
            <td data-label="Type">\(escape(sent.type))</td>\
            <td data-label="Client id"><code>\(escape(sent.clientID))</code></td>\
            <td data-label="sub"><code>\(escape(sent.sub))</code></td>\
            <td data-label="To">\(sent.url.map { escape($0) } ?? "no notification URL")</td>\
            <td class="actions"><form method="post" action="/console/notifications/redeliver" class="inline">\
            \(hidden("id", sent.id))<button type="submit">Redeliver</button></form></td></tr>
            """
        }
        return """
            <section id="notifications">
            <h2>Sent notifications</h2>
            <p class="hint">The last \(EmulatorState.keptNotifications) are kept byte for byte, also after an \
            <code>account-delete</code>: redelivery POSTs exactly the same body to the same URL again.</p>
            <form method="post" action="/console/notifications/redeliver" id="resend-last" class="inline">\
            \(hidden("id", last.id))<button type="submit">Re-send the last one (\(escape(last.type)) to \
            \(escape(last.clientID)))</button></form>
            <table class="stack">
            <thead><tr><th>Sent</th><th>Type</th><th>Client id</th><th>sub</th><th>To</th><th></th></tr></thead>
            <tbody>
            \(rows.joined(separator: "\n"))
            </tbody>
            </table>
            </section>
            """
    }

    private static let invalidClientButton =
        "<button type=\"submit\" name=\"mode\" value=\"invalid_client\">invalid_client</button>"

    private static func keySection(_ model: Model) -> String {
        let rows = EmulatorFault.endpoints.map { endpoint in
            let state: String
            switch model.faults[endpoint] {
            case nil: state = "off"
            case let fault?:
                let calls = fault.remaining.map { "the next \($0) call\($0 == 1 ? "" : "s")" } ?? "every call"
                let mode =
                    switch fault.mode {
                    case .timeout: "timeout"
                    case .ignore: "200, revoking nothing"
                    case .invalidClient: "invalid_client"
                    case .error, .off: "error (500)"
                    }
                state = "\(mode) on \(calls)"
            }
            return """
                <tr id="fault-\(endpoint)"><td data-label="Endpoint"><code>/auth/\(endpoint)</code></td>\
                <td data-label="Fault" class="fault-state">\(state)</td>\
                <td class="actions"><form method="post" action="/console/faults" class="inline">\
                \(hidden("endpoint", endpoint))\
                <label class="count">Count <input type="number" name="count" min="1" placeholder="all"></label>\
                <button type="submit" name="mode" value="error">Error</button>\
                <button type="submit" name="mode" value="timeout">Timeout</button>\
                \(EmulatorFault.endpoints(for: .invalidClient).contains(endpoint) ? Self.invalidClientButton : "")\
                \(endpoint == "revoke" ? "<button type=\"submit\" name=\"mode\" value=\"ignore\">Ignore</button>" : "")\
                <button type="submit" name="mode" value="off">Off</button></form></td></tr>
                """
        }
        return """
            <section id="keys">
            <h2>Keys</h2>
            <p>Tokens are signed with <code id="current-kid">\(escape(model.currentKeyID))</code> \
            (<a href="/auth/keys">/auth/keys</a>); a rotated-out key stays published for the grace period.</p>
            <form method="post" action="/console/rotate-keys" id="rotate-keys" class="inline">\
            <button type="submit">Rotate keys</button></form>
            <h2>Faults</h2>
            <p class="hint">Error answers 500; timeout holds the request past any sensible client timeout; \
            invalid_client answers as Apple does once the team's key is revoked; ignore (revoke only) answers 200 and \
            revokes nothing, as Apple can. A count limits the fault to that many calls.</p>
            <table class="stack">
            <thead><tr><th>Endpoint</th><th>Fault</th><th>Switch</th></tr></thead>
            <tbody>
            \(rows.joined(separator: "\n"))
            </tbody>
            </table>
            </section>
            """
    }

    private static func teamSection(_ teams: [EmulatorConfiguration.Team]) -> String {
        let rows = teams.flatMap { team in
            team.clients.map { client in
                """
                <tr><td data-label="Team">\(escape(team.teamID)) (key \(escape(team.keyID)))</td>\
                <td data-label="Client id"><code>\(escape(client.clientID))</code></td>\
                <td data-label="Redirect URIs">\(client.redirectURIs.map { escape($0) }.joined(separator: "<br>"))</td>\
                <td data-label="Notifications">\(client.notificationURL.map { escape($0) } ?? "none")</td></tr>
                """
            }
        }
        return """
            <section id="teams">
            <h2>Teams</h2>
            <table class="stack">
            <thead><tr><th>Team</th><th>Client id</th><th>Redirect URIs</th><th>Notifications</th></tr></thead>
            <tbody>
            \(rows.joined(separator: "\n"))
            </tbody>
            </table>
            </section>
            """
    }

    // MARK: Answers to the forms

    /// The answer to the sign-in form: the credential, ready to copy.
    static func signedIn(clientID: String, registered: Bool, credential: NativeCredential) -> String {
        let note =
            registered
            ? "a registered client id"
            : "<strong>no team registers this client id</strong>: a server that checks <code>aud</code> refuses it"
        let name = [credential.fullName?.givenName, credential.fullName?.familyName].compactMap { $0 }
            .joined(separator: " ")
        return page(
            title: "Signed in natively",
            body: """
                <h1>Signed in natively to <code>\(escape(clientID))</code></h1>
                <p>\(note).</p>
                <dl class="facts">
                <dt>user (sub)</dt><dd><code id="user">\(escape(credential.user))</code></dd>
                <dt>email</dt><dd>\(credential.email.map { escape($0) } ?? "not sent (not a first authorization)")</dd>
                <dt>fullName</dt><dd>\(name.isEmpty ? "not sent" : escape(name))</dd>
                </dl>
                <label for="identity-token">Identity token</label>
                <textarea id="identity-token" readonly rows="9">\(escape(credential.identityToken))</textarea>
                <label for="authorization-code">Authorization code (valid 5 minutes, once)</label>
                <textarea id="authorization-code" readonly rows="2">\(escape(credential.authorizationCode))</textarea>
                <h2>Identity token claims</h2>
                <pre id="claims">\(escape(claims(of: credential.identityToken)))</pre>
                \(backLink)
                """
        )
    }

    /// The answer to the notification forms.
    static func notificationSent(_ outcome: NotificationOutcome, clientID: String, again: Bool) -> String {
        let result =
            outcome.delivered
            ? "the receiver answered <strong id=\"receiver-status\">\(outcome.receiverStatus ?? 0)</strong>"
            : "not delivered: the client has no notification URL"
        return page(
            title: "Notification \(again ? "redelivered" : "sent")",
            body: """
                <h1><code>\(escape(outcome.type))</code> \(again ? "redelivered" : "sent") to \
                <code>\(escape(clientID))</code></h1>
                <p>Notification <code>\(escape(outcome.id))</code>: \(result).</p>
                \(backLink)
                """
        )
    }

    /// A form the emulator refused, with Apple's error code and why.
    static func failure(_ error: AppleOAuthError) -> String {
        page(
            title: "Emulator console: error",
            body: """
                <h1>That did not work</h1>
                <p><code>\(escape(error.error))</code>: \(escape(error.description ?? ""))</p>
                \(backLink)
                """
        )
    }

    /// The answer to a post from another site.
    static func forbidden() -> String {
        page(
            title: "Emulator console: refused",
            body: """
                <h1>Refused</h1>
                <p>The console only takes forms posted from its own pages.</p>
                \(backLink)
                """
        )
    }

    /// The answer to a request for a host name that is not the emulator's own; no link, as none would be answered.
    static func misdirected() -> String {
        page(
            title: "Emulator console: not this host name",
            body: """
                <h1>Not this host name</h1>
                <p>The emulator answers only to loopback names (<code>localhost</code>, <code>127.0.0.1</code>, \
                <code>[::1]</code>) and the host names it is given (<code>siwa emulator --allowed-host NAME</code>, or \
                <code>hostNames</code> in <code>--config</code>): another name may be a site's pointed at this machine.</p>
                """
        )
    }

    // MARK: Log

    /// The log table, newest first, filtered by event kind and client id.
    /// - Parameters:
    ///   - entries: the whole log, oldest first.
    ///   - filter: the chosen event kind and client id (empty: all).
    static func log(_ entries: [EmulatorLogEntry], filter: LogFilter) -> String {
        let shown = entries.filter(filter.matches)
        let rows = shown.suffix(maximumLogRows).reversed().map { entry in
            """
            <tr><td>\(time(entry.time))</td><td>\(escape(entry.endpoint))</td>\
            <td>\(escape(entry.grantType ?? ""))</td><td><code>\(escape(entry.clientID ?? ""))</code></td>\
            <td>\(escape(entry.outcome))</td></tr>
            """
        }
        let endpoints = Set(entries.map(\.endpoint)).sorted()
        let clientIDs = Set(entries.compactMap(\.clientID)).sorted()
        let capped = shown.count > maximumLogRows ? " (the newest \(maximumLogRows) shown)" : ""
        return page(
            title: "Apple ID emulator log",
            body: """
                <h1>Emulator log</h1>
                <p><a href="/">Back to the console</a> · <a href="/emulator/log">all calls</a></p>
                <form method="get" action="/emulator/log" id="log-filter" class="inline">
                <label>Event \(select("endpoint", endpoints, chosen: filter.endpoint))</label>
                <label>Client id \(select("clientId", clientIDs, chosen: filter.clientId))</label>
                <button type="submit">Filter</button>
                </form>
                <p class="hint">\(shown.count) of \(entries.count) calls\(capped), newest first. Scripts get this log as \
                JSON (any <code>Accept</code> but <code>text/html</code>).</p>
                <div class="scroll">
                <table id="log">
                <thead><tr><th>Time</th><th>Event</th><th>Grant type</th><th>Client id</th><th>Outcome</th></tr></thead>
                <tbody>
                \(rows.joined(separator: "\n"))
                </tbody>
                </table>
                </div>
                """
        )
    }

    /// The most rows the log page shows.
    static let maximumLogRows = 1000

    private static func select(_ name: String, _ values: [String], chosen: String?) -> String {
        let options = values.map { value in
            let selected = value == chosen ? " selected" : ""
            return #"<option value="\#(escape(value))"\#(selected)>\#(escape(value))</option>"#
        }
        return #"<select name="\#(name)"><option value="">all</option>\#(options.joined())</select>"#
    }

    // MARK: Page

    /// No script at all; the one inline stylesheet by hash; forms only to the emulator; never framed.
    static let contentSecurityPolicy =
        "default-src 'none'; style-src '\(styleHash)'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    private static let styleHash =
        "sha256-" + Data(SHA256.hash(data: Array(stylesheet.utf8))).base64EncodedString()

    /// Apple's page look, widened for tables; on a phone, table rows become stacked cards.
    static let stylesheet =
        EmulatorPages.stylesheet + "\n" + """
            main { max-width: 72rem; margin: 1rem auto; padding: 1.25rem 1.5rem; }
            section { margin-top: 2rem; }
            h2 { font-size: 1.15rem; margin: 0 0 .5rem; }
            h3 { font-size: 1rem; margin: 0 0 .3rem; overflow-wrap: anywhere; }
            nav.toc { display: flex; flex-wrap: wrap; gap: .3rem 1rem; }
            a { color: #0066cc; }
            .hint { color: #6e6e73; font-size: .9rem; }
            .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(13rem, 1fr)); gap: 0 1rem;
                    align-items: end; }
            .grid button { margin-top: .8rem; }
            .card { border: 1px solid #d2d2d7; border-radius: 12px; padding: 1rem; margin: 1rem 0; }
            .scroll { overflow-x: auto; }
            table { border-collapse: collapse; width: 100%; font-size: .9rem; margin: .5rem 0; }
            th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid #e5e5ea; vertical-align: top; }
            td code, dd code { overflow-wrap: anywhere; }
            form.inline { max-width: 100%; display: inline-flex; flex-wrap: wrap; gap: .3rem; align-items: center;
                    margin: .15rem 0; }
            form.inline label { display: inline; margin: 0 .3rem 0 0; font-weight: normal; }
            form.inline button { flex: 0 1 auto; max-width: 100%; padding: .35rem .7rem; font-size: .9rem; }
            select, input[type=number] { padding: .35rem; border: 1px solid #d2d2d7; border-radius: 8px;
                    font-size: .9rem; background: #fff; }
            select { max-width: 100%; }
            h1 { overflow-wrap: anywhere; }
            input[type=number] { width: 5rem; }
            button.danger { border-color: #b3261e; color: #b3261e; }
            .granted { color: #1b7f3b; font-weight: 600; }
            .revoked { color: #b3261e; font-weight: 600; }
            label.check { display: flex; gap: .4rem; align-items: center; font-weight: normal; }
            textarea { width: 100%; box-sizing: border-box; font: .85rem ui-monospace, monospace; padding: .5rem;
                    border: 1px solid #d2d2d7; border-radius: 8px; word-break: break-all; }
            pre { background: #f5f5f7; padding: .75rem; border-radius: 8px; overflow-x: auto; font-size: .85rem; }
            dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; }
            dl.facts dd { margin: 0; overflow-wrap: anywhere; }
            @media (max-width: 40rem) {
                main { margin: 0; border-radius: 0; padding: 1rem; }
                table.stack thead { display: none; }
                table.stack tr { display: block; border-bottom: 1px solid #d2d2d7; padding: .4rem 0; }
                table.stack td { display: block; border: 0; padding: .15rem 0; }
                table.stack td[data-label]::before { content: attr(data-label) ": "; font-weight: 600; }
                dl.facts { grid-template-columns: 1fr; }
            }
            """

    private static func page(title: String, body: String) -> String {
        EmulatorPages.page(title: title, body: body, stylesheet: stylesheet)
    }

    private static let backLink = #"<p><a href="/" id="back">Back to the console</a></p>"#

    private static func escape(_ text: String) -> String { EmulatorPages.escape(text) }

    private static func hidden(_ name: String, _ value: String) -> String {
        #"<input type="hidden" name="\#(name)" value="\#(escape(value))">"#
    }

    private static func time(_ date: Date) -> String { date.formatted(.iso8601) }

    /// The payload of a JWT, pretty-printed (the emulator signed it: it is always readable JSON).
    private static func claims(of token: String) -> String {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return "" }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let object = try? JSONSerialization.jsonObject(with: data),
            let pretty = try? JSONSerialization.data(
                withJSONObject: object,
                options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            )
        else { return "" }
        return String(decoding: pretty, as: UTF8.self)
    }
}
