import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension AppleIDEmulator {
    /// The console for developers in a browser: the overview at `GET /` and its forms under `POST /console/…`
    /// (`application/x-www-form-urlencoded`). The forms do what the control API does, through the same functions;
    /// they answer a page to read (a credential, a delivery) or 303 back to `/`. A post from another site is refused,
    /// and so is every request for a host name that is not the emulator's own.
    func addConsoleRoutes(to router: Router<BasicRequestContext>) {
        let hostCheck = EmulatorHostCheck<BasicRequestContext>(hostNames: hostNames, answer: .consolePage)
        router.group().add(middleware: hostCheck).get("/") { _, _ -> Response in
            let model = ConsolePage.Model(
                teams: state.configuration.teams,
                appleIDs: await state.appleIDRecords(),
                notifications: await state.sentNotifications(),
                faults: await state.activeFaults(),
                currentKeyID: await state.currentKeyID()
            )
            return Self.consoleHTML(.ok, ConsolePage.home(model))
        }

        let console = router.group("/console").add(middleware: hostCheck).add(middleware: ConsoleOriginCheck())

        console.post("/native-sign-in") { request, _ -> Response in
            try await Self.consoleAction {
                let input = try Self.decodeForm(ConsoleSignInForm.self, try await Self.body(request)).request()
                let answer = try await signInNatively(input)
                return Self.consoleHTML(
                    .ok,
                    ConsolePage.signedIn(
                        clientID: input.clientId,
                        registered: answer.registered,
                        credential: answer.credential
                    )
                )
            }
        }

        console.post("/notifications") { request, _ -> Response in
            try await consoleNotification(request, type: nil)
        }

        console.post("/revoke-consent") { request, _ -> Response in
            try await consoleNotification(request, type: "consent-revoked")
        }

        console.post("/notifications/redeliver") { request, _ -> Response in
            try await Self.consoleAction {
                let id = try Self.decodeForm(ConsoleRedeliverForm.self, try await Self.body(request)).id ?? ""
                let outcome = try await redeliverNotification(id: id)
                let clientID = await state.sentNotification(id: id)?.clientID ?? ""
                return Self.consoleHTML(.ok, ConsolePage.notificationSent(outcome, clientID: clientID, again: true))
            }
        }

        console.post("/delete-apple-id") { request, _ -> Response in
            try await Self.consoleAction {
                let email = try Self.decodeForm(ConsoleAppleIDForm.self, try await Self.body(request)).email ?? ""
                guard await state.deleteAppleID(email: email) else {
                    throw AppleOAuthError(httpCode: 404, error: "unknown_apple_id", description: "no Apple ID \(email)")
                }
                await state.log("delete-apple-id", outcome: "deleted from the console")
                return Self.backToConsole
            }
        }

        console.post("/rotate-keys") { _, _ -> Response in
            let kid = try await state.rotateKeys()
            await state.log("rotate-keys", outcome: "current kid \(kid)")
            return Self.backToConsole
        }

        console.post("/faults") { request, _ -> Response in
            try await Self.consoleAction {
                let input = try Self.decodeForm(ConsoleFaultForm.self, try await Self.body(request)).request()
                await state.setFault(endpoint: input.endpoint, mode: input.mode, count: input.count)
                return Self.backToConsole
            }
        }
    }

    /// Sends the notification a console form asks for (`clientId`, `email`, and `type` unless given) and shows how its
    /// delivery went.
    private func consoleNotification(_ request: Request, type: String?) async throws -> Response {
        try await Self.consoleAction {
            let input = try Self.decodeForm(NotificationRequest.self, try await Self.body(request))
            let outcome = try await sendNotification(
                clientID: input.clientId,
                email: input.email,
                type: type ?? input.type ?? ""
            )
            return Self.consoleHTML(.ok, ConsolePage.notificationSent(outcome, clientID: input.clientId, again: false))
        }
    }

    /// `GET /emulator/log` for a browser: the table, filtered by the query's `endpoint` and `clientId`.
    func logPage(_ request: Request) async throws -> Response {
        let filter = try Self.decodeForm(LogFilter.self, request.uri.query ?? "")
        return Self.consoleHTML(.ok, ConsolePage.log(await state.logEntries(), filter: filter))
    }

    /// Whether the caller asked for HTML, as a browser navigating does (`Accept: text/html,…`); scripts send none, or
    /// `*/*`, or `application/json`.
    static func prefersHTML(_ request: Request) -> Bool {
        request.headers[values: .accept].contains { $0.lowercased().contains("text/html") }
    }

    /// Runs a form's action; an `AppleOAuthError` it throws becomes the console's error page.
    private static func consoleAction(_ action: () async throws -> Response) async throws -> Response {
        do {
            return try await action()
        } catch let error as AppleOAuthError {
            return consoleHTML(HTTPResponse.Status(code: error.httpCode), ConsolePage.failure(error))
        }
    }

    /// After an action with nothing to read: back to the overview, which shows its effect.
    private static var backToConsole: Response { Response(status: .seeOther, headers: [.location: "/"]) }

    /// A console page with the headers every console page carries: no script may run, nothing may frame it.
    static func consoleHTML(_ status: HTTPResponse.Status, _ page: String) -> Response {
        var response = html(status, page)
        response.headers[.contentSecurityPolicy] = ConsolePage.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        // Not `no-referrer`: with it a browser sends `Origin: null` on the console's own posts, which are then refused.
        response.headers[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        return response
    }
}
