import Foundation
import HTTPTypes
import Hummingbird

extension AppleIDEmulator {
    /// The control API for tests and developers, JSON in and out; errors are `{"error", "message"}`. It answers only
    /// the emulator's own host names, and refuses browsers on other sites and bodies that are not JSON.
    func addControlRoutes(to router: Router<BasicRequestContext>) {
        let control = router.group("/emulator")
            .add(middleware: EmulatorHostCheck(hostNames: hostNames, answer: .controlJSON))
            .add(middleware: ControlAPIRequestCheck())

        control.post("/native-sign-in") { request, context -> Response in
            let input = try await Self.decodeJSON(NativeSignInRequest.self, request, context)
            do {
                return try Self.json(.ok, try await signInNatively(input).credential)
            } catch let error as AppleOAuthError {
                return try Self.controlError(error)
            }
        }

        control.post("/notifications") { request, context -> Response in
            let input = try await Self.decodeJSON(NotificationRequest.self, request, context)
            guard let type = input.type else {
                return try Self.controlError(.invalidRequest("type is required"))
            }
            return try await controlAnswer {
                try await sendNotification(clientID: input.clientId, email: input.email, type: type)
            }
        }

        control.get("/notifications") { _, _ -> Response in
            try Self.json(.ok, await state.sentNotifications().map(SentNotificationSummary.init))
        }

        control.post("/notifications/:id/redeliver") { _, context -> Response in
            let id = try context.parameters.require("id")
            return try await controlAnswer { try await redeliverNotification(id: id) }
        }

        control.post("/revoke-consent") { request, context -> Response in
            let input = try await Self.decodeJSON(NotificationRequest.self, request, context)
            return try await controlAnswer {
                try await sendNotification(clientID: input.clientId, email: input.email, type: "consent-revoked")
            }
        }

        control.post("/rotate-keys") { _, _ -> Response in
            let kid = try await state.rotateKeys()
            await state.log("rotate-keys", outcome: "current kid \(kid)")
            return try Self.json(.ok, ["kid": kid])
        }

        control.post("/faults") { request, context -> Response in
            let input = try await Self.decodeJSON(FaultRequest.self, request, context)
            guard EmulatorFault.endpoints.contains(input.endpoint) else {
                return try Self.controlError(.invalidRequest("endpoint must be keys, token or revoke"))
            }
            guard EmulatorFault.endpoints(for: input.mode).contains(input.endpoint) else {
                return try Self.controlError(
                    .invalidRequest("ignore is for revoke only, invalid_client for token and revoke")
                )
            }
            await state.setFault(endpoint: input.endpoint, mode: input.mode, count: input.count)
            return try Self.json(.ok, ["endpoint": input.endpoint, "mode": input.mode.rawValue])
        }

        // Scripts get JSON, as always; a browser (which asks for `text/html`) gets the console's table.
        control.get("/log") { request, _ -> Response in
            var response =
                Self.prefersHTML(request)
                ? try await logPage(request) : try Self.json(.ok, await state.logEntries())
            response.headers[.vary] = "Accept"
            return response
        }
    }

    /// The JSON answer of `body`'s value, or the control API's error for an `AppleOAuthError` it throws.
    private func controlAnswer(_ body: () async throws -> some Encodable) async throws -> Response {
        do {
            return try Self.json(.ok, try await body())
        } catch let error as AppleOAuthError {
            return try Self.controlError(error)
        }
    }

    /// A native sign-in, logged (its outcome, never the token); shared by the control API and the console.
    func signInNatively(_ input: NativeSignInRequest) async throws -> (credential: NativeCredential, registered: Bool) {
        let answer = try await state.nativeSignIn(input)
        await state.log(
            "native-sign-in",
            clientID: input.clientId,
            outcome: answer.registered ? "200" : "200 (unregistered client id)",
            unregisteredClient: !answer.registered
        )
        return answer
    }

    /// Signs a notification, applies its effect, and POSTs it to the client's notification URL.
    /// - Throws: `AppleOAuthError` for an unknown client, Apple ID or type, and when the notification cannot be sent.
    func sendNotification(clientID: String, email: String, type: String) async throws -> NotificationOutcome {
        try await deliver(try await state.notification(clientID: clientID, email: email, type: type), again: false)
    }

    /// POSTs a kept notification again: the same bytes to the same URL, also after its Apple ID was deleted.
    /// - Throws: `AppleOAuthError` (404) when no notification `id` is kept, and when it cannot be sent.
    func redeliverNotification(id: String) async throws -> NotificationOutcome {
        guard let sent = await state.sentNotification(id: id) else {
            throw AppleOAuthError(
                httpCode: 404,
                error: "unknown_notification",
                description: "no kept notification \(id) (the last \(EmulatorState.keptNotifications) are kept)"
            )
        }
        return try await deliver(sent, again: true)
    }

    private func deliver(_ sent: SentNotificationRecord, again: Bool) async throws -> NotificationOutcome {
        let what = again ? "\(sent.type) (redelivery of \(sent.id))" : sent.type
        guard let url = sent.url else {
            await state.log("notification", clientID: sent.clientID, outcome: "\(what): no notification URL")
            return NotificationOutcome(id: sent.id, type: sent.type, delivered: false, receiverStatus: nil)
        }
        guard let delivery else {
            throw AppleOAuthError(httpCode: 503, error: "no_delivery", description: "this emulator cannot send HTTP")
        }
        let status: Int
        do {
            status = try await delivery.post(json: Array(sent.body), to: url)
        } catch {
            await state.log("notification", clientID: sent.clientID, outcome: "\(what): delivery failed")
            throw AppleOAuthError(httpCode: 502, error: "delivery_failed", description: "could not reach \(url)")
        }
        await state.log("notification", clientID: sent.clientID, outcome: "\(what): receiver answered \(status)")
        return NotificationOutcome(id: sent.id, type: sent.type, delivered: true, receiverStatus: status)
    }

    static func decodeJSON<T: Decodable>(
        _ type: T.Type,
        _ request: Request,
        _ context: BasicRequestContext
    )
        async throws -> T
    {
        do {
            return try await request.decode(as: type, context: context)
        } catch {
            throw ControlAPIError(code: "invalid_request", message: "the JSON body is not a valid \(T.self)")
        }
    }

    static func controlError(_ error: AppleOAuthError) throws -> Response {
        try json(
            HTTPResponse.Status(code: error.httpCode),
            ["error": error.error, "message": error.description ?? error.error]
        )
    }
}

/// The answer of the notification routes.
struct NotificationOutcome: Encodable {
    /// The kept notification's id, for `POST /emulator/notifications/{id}/redeliver`.
    var id: String
    var type: String
    var delivered: Bool
    var receiverStatus: Int?
}

/// An entry of `GET /emulator/notifications`.
struct SentNotificationSummary: Encodable {
    var id: String
    var type: String
    var clientId: String
    var sub: String
    var sentAt: Date

    init(_ record: SentNotificationRecord) {
        self.id = record.id
        self.type = record.type
        self.clientId = record.clientID
        self.sub = record.sub
        self.sentAt = record.sentAt
    }
}

/// A control-API failure, answered as `{"error": code, "message": text}`.
struct ControlAPIError: HTTPResponseError {
    var status: HTTPResponse.Status = .badRequest
    var code: String
    var message: String

    func response(from request: Request, context: some RequestContext) throws -> Response {
        try AppleIDEmulator.json(status, ["error": code, "message": message])
    }
}
