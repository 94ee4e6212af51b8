import Foundation
import HTTPTypes
import Hummingbird

extension AppleIDEmulator {
    /// The control API for tests and developers, JSON in and out; errors are `{"error", "message"}`.
    func addControlRoutes(to router: Router<BasicRequestContext>) {
        let control = router.group("/emulator")

        control.post("/native-sign-in") { request, context -> Response in
            let input = try await Self.decodeJSON(NativeSignInRequest.self, request, context)
            do {
                let credential = try await state.nativeSignIn(input)
                await state.log("native-sign-in", clientID: input.clientId, outcome: "200")
                return try Self.json(.ok, credential)
            } catch let error as AppleOAuthError {
                return try Self.controlError(error)
            }
        }

        control.post("/notifications") { request, context -> Response in
            let input = try await Self.decodeJSON(NotificationRequest.self, request, context)
            guard let type = input.type else {
                return try Self.controlError(.invalidRequest("type is required"))
            }
            return try await deliverNotification(clientID: input.clientId, email: input.email, type: type)
        }

        control.post("/revoke-consent") { request, context -> Response in
            let input = try await Self.decodeJSON(NotificationRequest.self, request, context)
            return try await deliverNotification(clientID: input.clientId, email: input.email, type: "consent-revoked")
        }

        control.post("/rotate-keys") { _, _ -> Response in
            let kid = try await state.rotateKeys()
            await state.log("rotate-keys", outcome: "current kid \(kid)")
            return try Self.json(.ok, ["kid": kid])
        }

        control.post("/faults") { request, context -> Response in
            let input = try await Self.decodeJSON(FaultRequest.self, request, context)
            guard ["keys", "token", "revoke"].contains(input.endpoint) else {
                return try Self.controlError(.invalidRequest("endpoint must be keys, token or revoke"))
            }
            await state.setFault(endpoint: input.endpoint, mode: input.mode, count: input.count)
            return try Self.json(.ok, ["endpoint": input.endpoint, "mode": input.mode.rawValue])
        }

        control.get("/log") { _, _ -> Response in
            try Self.json(.ok, await state.logEntries())
        }
    }

    /// Signs a notification, applies its effect, and POSTs it to the client's notification URL.
    private func deliverNotification(clientID: String, email: String, type: String) async throws -> Response {
        let signed: (url: String?, body: [UInt8])
        do {
            signed = try await state.notification(clientID: clientID, email: email, type: type)
        } catch let error as AppleOAuthError {
            return try Self.controlError(error)
        }
        guard let url = signed.url else {
            await state.log("notification", clientID: clientID, outcome: "\(type): no notification URL")
            return try Self.json(.ok, NotificationOutcome(type: type, delivered: false, receiverStatus: nil))
        }
        guard let delivery else {
            return try Self.controlError(
                AppleOAuthError(httpCode: 503, error: "no_delivery", description: "this emulator cannot send HTTP")
            )
        }
        do {
            let status = try await delivery.post(json: signed.body, to: url)
            await state.log("notification", clientID: clientID, outcome: "\(type): receiver answered \(status)")
            return try Self.json(.ok, NotificationOutcome(type: type, delivered: true, receiverStatus: status))
        } catch {
            await state.log("notification", clientID: clientID, outcome: "\(type): delivery failed")
            return try Self.controlError(
                AppleOAuthError(httpCode: 502, error: "delivery_failed", description: "could not reach \(url)")
            )
        }
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
    var type: String
    var delivered: Bool
    var receiverStatus: Int?
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
