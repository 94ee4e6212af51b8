import HTTPTypes
public import Logging

/// Apple's Sign in with Apple REST API: authorization-code exchange, refresh-token validation and revocation.
///
/// Requests are form-encoded and carry a client secret from ``ClientSecretFactory``; Apple's OAuth errors become
/// ``AppleSignInError`` codes whose reason names the likely cause. Validation and revocation are retried on
/// timeouts, transport errors and 5xx answers per ``RetryPolicy``; code exchange is not (a code is single-use).
public struct AppleAPIClient: Sendable {
    public let configuration: AppleSignInConfiguration
    public let verifier: IdentityTokenVerifier
    let transport: any HTTPTransport
    let clientSecrets: ClientSecretFactory
    let retryPolicy: RetryPolicy
    let logger: Logger
    /// Told of every answer Apple gives (a server's credential health, the doctor's clock check).
    let observer: (any AppleAPICallObserver)?
    /// Team-transfer access tokens, shared by the copies of this client (`AppleAPIClient+Migration.swift`).
    let migrationTokens = MigrationAccessTokenCache()

    /// - Parameters:
    ///   - configuration: client ids and Apple's base URL.
    ///   - transport: the HTTP client.
    ///   - verifier: verifies the `id_token` Apple returns from a code exchange.
    ///   - clientSecrets: signs the client secrets.
    ///   - retryPolicy: retries and per-attempt timeout.
    ///   - logger: debug-level events; never tokens or secrets.
    ///   - observer: told of every answer Apple gives, after retries.
    public init(
        configuration: AppleSignInConfiguration,
        transport: any HTTPTransport,
        verifier: IdentityTokenVerifier,
        clientSecrets: ClientSecretFactory,
        retryPolicy: RetryPolicy = RetryPolicy(),
        logger: Logger = Logger(label: "siwa.apple-api"),
        observer: (any AppleAPICallObserver)? = nil
    ) {
        self.observer = observer
        self.configuration = configuration
        self.transport = transport
        self.verifier = verifier
        self.clientSecrets = clientSecrets
        self.retryPolicy = retryPolicy
        self.logger = logger
    }

    /// Exchanges an authorization code for Apple's tokens and verifies the returned `id_token`.
    ///
    /// A native app's code is exchanged with its bundle id as `client_id` and no `redirect_uri`; a web code with the
    /// Services ID and the `redirect_uri` of the authorization. Pass the `aud` of the identity token that came with
    /// the code as `clientID`; ``exchange(code:for:redirectURI:)`` does that for you.
    /// - Parameters:
    ///   - code: the authorization code (valid 5 minutes, single use).
    ///   - clientID: the client the code was issued to.
    ///   - redirectURI: for a Services ID code, the exact `redirect_uri` of the authorization; ignored otherwise.
    /// - Returns: Apple's tokens, with ``AppleTokenResponse/verifiedIDToken`` set when Apple sent an `id_token`.
    /// - Throws: ``AppleSignInError``: Apple's OAuth error, or a transport or verification failure;
    ///   ``AppleSignInError/Code/invalidConfiguration`` when a Services ID code comes without `redirectURI`.
    public func exchange(
        code: String,
        clientID: ClientID,
        redirectURI: String?
    ) async throws(AppleSignInError)
        -> AppleTokenResponse
    {
        var fields = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", clientID.rawValue),
            ("client_secret", clientSecrets.secret(for: clientID).token),
        ]
        if configuration.isServicesID(clientID) {
            guard let redirectURI else {
                throw .invalidConfiguration(
                    "redirectURI",
                    "a Services ID code must be exchanged with the redirect_uri used to authorize"
                )
            }
            fields.append(("redirect_uri", redirectURI))
        }
        let answer = try await post(
            "/auth/token",
            fields: fields,
            call: .exchange,
            clientID: clientID,
            retry: .once
        )
        var response = try AppleTokenResponse(json: answer.body)
        if let idToken = response.idToken {
            response.verifiedIDToken = try await verifier.verify(idToken)
        }
        logger.debug("exchanged authorization code", metadata: ["client_id": "\(clientID)"])
        return response
    }

    /// Exchanges the code that came with `identityToken`, using its `aud` as the client id, and checks that Apple's
    /// `id_token` is for the same user.
    /// - Parameters:
    ///   - code: the authorization code that came with `identityToken`.
    ///   - identityToken: the verified identity token of the same sign-in; its `aud` is the client id.
    ///   - redirectURI: for a web sign-in, the exact `redirect_uri` of the authorization.
    /// - Returns: Apple's tokens, as ``exchange(code:clientID:redirectURI:)`` returns them.
    /// - Throws: ``AppleSignInError``; ``AppleSignInError/Code/subjectMismatch`` when the code belongs to another user.
    public func exchange(
        code: String,
        for identityToken: IdentityToken,
        redirectURI: String? = nil
    )
        async throws(AppleSignInError) -> AppleTokenResponse
    {
        let response = try await exchange(code: code, clientID: identityToken.aud, redirectURI: redirectURI)
        if let returned = response.verifiedIDToken, returned.sub != identityToken.sub {
            throw AppleSignInError(.subjectMismatch, "the authorization code belongs to another user than the token")
        }
        return response
    }

    /// Asks Apple whether a refresh token is still valid (`grant_type=refresh_token`). Apple may throttle frequent
    /// checks: validate a user's token at most once a day.
    /// - Parameters:
    ///   - refreshToken: Apple's refresh token from the code exchange.
    ///   - clientID: the client it was issued to.
    /// - Returns: ``RefreshTokenValidation/valid(_:)`` or ``RefreshTokenValidation/revoked`` on `invalid_grant`.
    /// - Throws: ``AppleSignInError`` for every other failure (Apple unreachable is not "revoked").
    public func validate(
        refreshToken: String,
        clientID: ClientID
    ) async throws(AppleSignInError)
        -> RefreshTokenValidation
    {
        let fields = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refreshToken),
            ("client_id", clientID.rawValue),
            ("client_secret", clientSecrets.secret(for: clientID).token),
        ]
        do {
            let answer = try await post(
                "/auth/token",
                fields: fields,
                call: .validate,
                clientID: clientID,
                retry: retryPolicy
            )
            return .valid(try AppleTokenResponse(json: answer.body))
        } catch  where error.code == .invalidGrant {
            return .revoked
        }
    }

    /// Revokes a token at Apple (`POST /auth/revoke`). Apple answers 200 also for unknown tokens.
    /// - Parameters:
    ///   - token: the refresh or access token.
    ///   - hint: which kind it is.
    ///   - clientID: the client it was issued to.
    /// - Throws: ``AppleSignInError``: Apple's OAuth error (such as ``AppleSignInError/Code/invalidClient``), or a
    ///   transport failure or 5xx answer that persisted through the retries.
    public func revoke(
        token: String,
        hint: TokenTypeHint = .refreshToken,
        clientID: ClientID
    )
        async throws(AppleSignInError)
    {
        let fields = [
            ("client_id", clientID.rawValue),
            ("client_secret", clientSecrets.secret(for: clientID).token),
            ("token", token),
            ("token_type_hint", hint.rawValue),
        ]
        _ = try await post("/auth/revoke", fields: fields, call: .revoke, clientID: clientID, retry: retryPolicy)
        logger.debug("revoked token at Apple", metadata: ["client_id": "\(clientID)", "hint": "\(hint.rawValue)"])
    }

    private func post(
        _ path: String,
        fields: [(String, String)],
        call: AppleAPIAnswer.Call,
        clientID: ClientID,
        retry: RetryPolicy
    )
        async throws(AppleSignInError) -> HTTPTransportResponse
    {
        let base = configuration.appleBaseURL
        var request = HTTPRequest(
            method: .post,
            scheme: base.scheme,
            authority: base.authority,
            path: base.pathPrefix + path
        )
        request.headerFields[.contentType] = "application/x-www-form-urlencoded"
        request.headerFields[.accept] = "application/json"
        let body = Array(FormURLEncoding.encode(fields).utf8)
        let start = ContinuousClock.now
        let answer: HTTPTransportResponse
        do {
            answer = try await AppleHTTP.send(
                request,
                body: body,
                transport: transport,
                retry: retry,
                timeout: retry.timeout,
                logger: logger
            )
        } catch {
            observer?.observe(
                AppleAPIAnswer(call: call, clientID: clientID, error: error, date: nil, duration: .now - start)
            )
            throw error
        }
        return try observed(answer, call: call, path: path, clientID: clientID, duration: .now - start)
    }

    /// Tells the observer what Apple answered, then returns a success or throws the error it became.
    func observed(
        _ answer: HTTPTransportResponse,
        call: AppleAPIAnswer.Call,
        path: String,
        clientID: ClientID,
        duration: Duration? = nil,
        error makeError: (HTTPTransportResponse) -> AppleSignInError? = { _ in nil }
    ) throws(AppleSignInError) -> HTTPTransportResponse {
        let error =
            answer.response.status.kind == .successful
            ? nil : makeError(answer) ?? AppleHTTP.error(from: answer, path: path, clientID: clientID)
        observer?.observe(
            AppleAPIAnswer(
                call: call,
                clientID: clientID,
                error: error,
                date: answer.response.headerFields[.date],
                duration: duration
            )
        )
        if let error { throw error }
        return answer
    }
}

/// The HTTP details shared by the API client and the key-set source.
enum AppleHTTP {
    /// Sends with retries on timeouts, transport failures, 5xx and 429.
    static func send(
        _ request: HTTPRequest,
        body: [UInt8]?,
        transport: any HTTPTransport,
        retry: RetryPolicy,
        timeout: Duration,
        logger: Logger
    ) async throws(AppleSignInError) -> HTTPTransportResponse {
        var attempt = 1
        while true {
            let outcome: Result<HTTPTransportResponse, AppleSignInError>
            do {
                outcome = .success(try await transport.send(request, body: body, timeout: timeout))
            } catch let error as AppleSignInError {
                outcome = .failure(error)
            } catch is CancellationError {
                throw AppleSignInError(.transportFailed, "cancelled calling Apple \(request.path ?? "")")
            } catch {
                outcome = .failure(
                    AppleSignInError(.transportFailed, "calling Apple \(request.path ?? "") failed: \(type(of: error))")
                )
            }
            let retryable: Bool
            switch outcome {
            case .success(let answer):
                let status = answer.response.status
                retryable = status.kind == .serverError || status == .tooManyRequests
                if !retryable || attempt >= retry.maximumAttempts { return answer }
            case .failure(let error):
                retryable = error.code == .timeout || error.code == .transportFailed
                if !retryable || attempt >= retry.maximumAttempts { throw error }
            }
            attempt += 1
            logger.debug("retrying Apple call", metadata: ["path": "\(request.path ?? "")", "attempt": "\(attempt)"])
            do {
                try await Task.sleep(for: retry.delay(beforeAttempt: attempt))
            } catch {
                throw AppleSignInError(.transportFailed, "cancelled calling Apple \(request.path ?? "")")
            }
        }
    }

    /// Maps Apple's error answer to a typed error with a likely cause.
    static func error(from answer: HTTPTransportResponse, path: String, clientID: ClientID?) -> AppleSignInError {
        let status = answer.response.status
        if status.kind == .serverError || status == .tooManyRequests {
            return AppleSignInError(.appleServerError, "Apple answered \(status.code) to \(path)")
        }
        let document = try? JSONReader.parseObject(answer.body)
        let description = document?["error_description"]?.stringValue.map { String($0.prefix(200)) }
        let client = clientID.map { "'\($0)'" } ?? "the client"
        switch document?["error"]?.stringValue {
        case "invalid_request":
            return AppleSignInError(
                .invalidRequest,
                "Apple refused the request to \(path) as malformed",
                appleDescription: description
            )
        case "invalid_client":
            return AppleSignInError(
                .invalidClient,
                "Apple refused the client secret for \(client): its team id (iss), key id (kid) or client id (sub) does "
                    + "not match the .p8 key or the client, or it has expired (at most 6 months)",
                appleDescription: description
            )
        case "invalid_grant":
            return AppleSignInError(
                .invalidGrant,
                "Apple refused the grant: the code or token expired, was already used or revoked, or was issued to "
                    + "another client_id or redirect_uri than \(client)",
                appleDescription: description
            )
        case "unauthorized_client":
            return AppleSignInError(
                .unauthorizedClient,
                "\(client) may not use this grant; check that Sign in with Apple is enabled for it",
                appleDescription: description
            )
        case "unsupported_grant_type":
            return AppleSignInError(
                .unsupportedGrantType,
                "Apple does not support this grant_type",
                appleDescription: description
            )
        case "invalid_scope":
            return AppleSignInError(.invalidScope, "Apple refused the requested scope", appleDescription: description)
        case let other?:
            return AppleSignInError(
                .unexpectedResponse,
                "Apple answered \(status.code) with error \(LoggedText.quoted(other, limit: 64)) to \(path)",
                appleDescription: description
            )
        case nil:
            return AppleSignInError(
                .unexpectedResponse,
                "Apple answered \(status.code) without an error code to \(path)"
            )
        }
    }
}
