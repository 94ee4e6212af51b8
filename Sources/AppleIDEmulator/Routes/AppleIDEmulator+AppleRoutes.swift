import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension AppleIDEmulator {
    /// Apple's endpoints, as Apple serves them.
    func addAppleRoutes(to router: Router<BasicRequestContext>) {
        router.get("/auth/keys") { _, _ -> Response in
            if let fault = await applyFault("keys") { return fault }
            let body = try await state.keySetJSON()
            await state.log("keys", outcome: "200")
            return Response(
                status: .ok,
                headers: [.contentType: "application/json", .cacheControl: "max-age=86400"],
                body: .init(byteBuffer: ByteBuffer(bytes: body))
            )
        }

        router.get("/auth/authorize") { request, _ -> Response in
            let parameters = try Self.decodeForm(AuthorizeParameters.self, request.uri.query ?? "")
            do throws(AppleOAuthError) {
                _ = try await state.checkAuthorize(parameters)
            } catch {
                await state.log("authorize", clientID: parameters.client_id, outcome: error.error)
                return Self.html(.badRequest, EmulatorPages.error(error))
            }
            await state.log("authorize", clientID: parameters.client_id, outcome: "consent page")
            return Self.html(
                .ok,
                EmulatorPages.consent(parameters, firstName: "Jane", lastName: "Appleseed", email: "jane@example.com")
            )
        }

        router.post("/auth/authorize") { request, _ -> Response in
            let parameters = try Self.decodeForm(AuthorizeParameters.self, try await Self.body(request))
            let redirectURI = parameters.redirect_uri ?? ""
            do throws(AppleOAuthError) {
                _ = try await state.checkAuthorize(parameters)
            } catch {
                return Self.html(.badRequest, EmulatorPages.error(error))
            }
            var fields: [(String, String)]
            if parameters.action == "cancel" {
                fields = [("error", "user_cancelled_authorize")]
                if let state = parameters.state { fields.append(("state", state)) }
                await state.log("authorize", clientID: parameters.client_id, outcome: "user_cancelled_authorize")
            } else {
                do {
                    fields = try await state.consent(parameters).fields
                } catch let error as AppleOAuthError {
                    return Self.html(.badRequest, EmulatorPages.error(error))
                }
                await state.log("authorize", clientID: parameters.client_id, outcome: "authorized")
            }
            switch parameters.response_mode ?? "query" {
            case "form_post":
                return Self.html(.ok, EmulatorPages.formPost(to: redirectURI, fields: fields))
            case "fragment":
                return Response(status: .found, headers: [.location: redirectURI + "#" + Self.encodeForm(fields)])
            default:
                let separator = redirectURI.contains("?") ? "&" : "?"
                return Response(status: .found, headers: [.location: redirectURI + separator + Self.encodeForm(fields)])
            }
        }

        router.post("/auth/token") { request, _ -> Response in
            if let fault = await applyFault("token") { return fault }
            let form = try Self.decodeForm(TokenForm.self, try await Self.body(request))
            let answer: TokenResponse
            do throws(AppleOAuthError) {
                answer = try await state.token(form)
            } catch {
                await state.log("token", grantType: form.grant_type, clientID: form.client_id, outcome: error.outcome)
                return try Self.appleError(error)
            }
            await state.log("token", grantType: form.grant_type, clientID: form.client_id, outcome: "200")
            return try Self.json(.ok, answer)
        }

        router.post("/auth/revoke") { request, _ -> Response in
            if let fault = await applyFault("revoke") { return fault }
            let form = try Self.decodeForm(RevokeForm.self, try await Self.body(request))
            do throws(AppleOAuthError) {
                try await state.revoke(form)
            } catch {
                await state.log(
                    "revoke",
                    grantType: form.token_type_hint,
                    clientID: form.client_id,
                    outcome: error.outcome
                )
                return try Self.appleError(error)
            }
            await state.log("revoke", grantType: form.token_type_hint, clientID: form.client_id, outcome: "200")
            return Response(status: .ok)
        }

        router.post("/auth/usermigrationinfo") { request, _ -> Response in
            let form = try Self.decodeForm(MigrationForm.self, try await Self.body(request))
            let authorization = request.headers[.authorization] ?? ""
            let bearer = authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst(7)) : nil
            let answer: [String: String]
            do throws(AppleOAuthError) {
                answer = try await state.migrationInfo(form, bearer: bearer)
            } catch {
                await state.log("usermigrationinfo", clientID: form.client_id, outcome: error.outcome)
                return try Self.appleError(error)
            }
            await state.log("usermigrationinfo", clientID: form.client_id, outcome: "200")
            return try Self.json(.ok, answer)
        }
    }

    /// Applies an injected fault to `endpoint`, if one is set.
    func applyFault(_ endpoint: String) async -> Response? {
        switch await state.takeFault(endpoint) {
        case .error?:
            await state.log(endpoint, outcome: "fault: 500")
            return Response(status: .internalServerError)
        case .timeout?:
            await state.log(endpoint, outcome: "fault: timeout")
            try? await Task.sleep(for: .seconds(state.configuration.faultHangDuration))
            return Response(status: .gatewayTimeout)
        case .ignore?:
            await state.log(endpoint, outcome: "fault: 200, ignored")
            return Response(status: .ok)
        case .invalidClient?:
            await state.log(endpoint, outcome: "fault: invalid_client")
            return try? Self.appleError(.refusedClient("fault: the team's key is revoked"))
        case .off?, nil:
            return nil
        }
    }

    // MARK: Encoding helpers

    static func body(_ request: Request) async throws -> String {
        String(buffer: try await request.body.collect(upTo: 64 * 1024))
    }

    static func decodeForm<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        do {
            return try URLEncodedFormDecoder().decode(type, from: text)
        } catch {
            throw AppleOAuthError.invalidRequest("the form could not be read")
        }
    }

    static func encodeForm(_ fields: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.map {
            "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }.joined(separator: "&")
    }

    static func html(_ status: HTTPResponse.Status, _ page: String) -> Response {
        Response(
            status: status,
            headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: page))
        )
    }

    static func json(_ status: HTTPResponse.Status, _ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return Response(
            status: status,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value)))
        )
    }

    /// Apple's error body: `{"error": code, "error_description"?}`.
    static func appleError(_ error: AppleOAuthError) throws -> Response {
        var body = ["error": error.error]
        if let description = error.description { body["error_description"] = description }
        return try json(HTTPResponse.Status(code: error.httpCode), body)
    }
}

/// Apple's endpoints answer their errors as Apple does: `{"error": code, "error_description"?}`.
extension AppleOAuthError: HTTPResponseError {
    var status: HTTPResponse.Status { HTTPResponse.Status(code: httpCode) }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        try AppleIDEmulator.appleError(self)
    }
}
