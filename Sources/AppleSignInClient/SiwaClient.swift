public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The client of a siwa server: signs in with an Apple credential, keeps the session in a `TokenStore`, and sends
/// authenticated requests, refreshing the session once when the server answers 401.
///
/// ```swift
/// let client = SiwaClient(
///     baseURL: URL(string: "https://auth.example.com")!,
///     tokenStore: KeychainTokenStore(service: "com.example.app")
/// )
/// let session = try await client.signIn(
///     identityToken: credential.identityToken,
///     authorizationCode: credential.authorizationCode,
///     fullName: credential.fullName,
///     email: credential.email,
///     nonce: nonce.raw
/// )
/// let (data, response) = try await client.send(URLRequest(url: apiURL))
/// ```
///
/// Requests that fail with 401 while the access token is the same share one `POST /auth/refresh`; each is retried
/// once with the new token. A refresh the server refuses (the session was revoked, the refresh token reused or
/// expired) clears the stored tokens and throws `SiwaClientError` with code `.notSignedIn`; it is never retried.
///
/// The client reads its token store at first use and then writes through: use one client per store.
public actor SiwaClient {
    /// The siwa server, for example `https://auth.example.com`; paths such as `auth/refresh` are appended to it.
    public nonisolated let baseURL: URL
    let tokenStore: any TokenStore
    let transport: any SiwaClientTransport
    /// The store's contents once read; every change is written through to the store.
    private var contents: TokenStoreContents?
    /// Non-nil while a refresh is running: the requests waiting for its outcome.
    var refreshWaiters: [CheckedContinuation<SessionTokens, any Error>]?

    /// Creates a client.
    /// - Parameters:
    ///   - baseURL: the siwa server.
    ///   - tokenStore: where the session is kept (`KeychainTokenStore` in apps).
    ///   - transport: the HTTP client (`URLSessionTransport` over `URLSession.shared` by default).
    public init(
        baseURL: URL,
        tokenStore: any TokenStore,
        transport: any SiwaClientTransport = URLSessionTransport()
    ) {
        self.baseURL = baseURL
        self.tokenStore = tokenStore
        self.transport = transport
    }

    // MARK: Sign-in

    /// Signs in with a credential from Sign in with Apple (`POST /auth/apple/native`) and keeps the session.
    ///
    /// Apple gives the name and email only on the first authorization. They are saved in the token store before the
    /// request and sent again with later sign-ins of the same Apple ID until the server has answered with an
    /// account, so a failed first attempt does not lose them.
    /// - Parameters:
    ///   - identityToken: `ASAuthorizationAppleIDCredential.identityToken` as text (a JWT).
    ///   - authorizationCode: `ASAuthorizationAppleIDCredential.authorizationCode` as text, if any.
    ///   - fullName: `ASAuthorizationAppleIDCredential.fullName` (first sign-in only).
    ///   - email: `ASAuthorizationAppleIDCredential.email` (first sign-in only).
    ///   - nonce: the raw nonce (`SignInNonce.raw`) whose SHA-256 was the request's nonce, if one was set.
    /// - Returns: the account and whether it is new.
    /// - Throws: `SiwaClientError`: `.server` with the server's code (`identity_token_expired`, …) when it refused the
    ///   credential, `.transport` when it could not be reached, `.tokenStore` when the session could not be saved.
    public func signIn(
        identityToken: String,
        authorizationCode: String?,
        fullName: PersonNameComponents?,
        email: String?,
        nonce: String?
    ) async throws -> Session {
        guard !identityToken.isEmpty else {
            throw SiwaClientError(.missingIdentityToken, "the Apple credential has no identity token")
        }
        let appleUserID = IdentityTokenSubject.of(identityToken)
        var stored = try loadContents()
        let given = fullName?.givenName?.nonBlank
        let family = fullName?.familyName?.nonBlank
        let email = email?.nonBlank
        if given != nil || family != nil || email != nil {
            stored.keep(
                FirstSignInProfile(appleUserID: appleUserID, givenName: given, familyName: family, email: email)
            )
            try save(stored)
        }
        let profile = stored.pendingProfile(appleUserID: appleUserID)
        let body = NativeSignInBody(
            identityToken: identityToken,
            authorizationCode: authorizationCode?.nonBlank,
            nonce: nonce?.nonBlank,
            givenName: profile?.givenName,
            familyName: profile?.familyName
        )
        let (data, response) = try await deliver(try jsonRequest("auth/apple/native", body: body))
        guard response.statusCode == 200 else { throw WireCoding.serverError(data, response) }
        let answer = try WireCoding.decode(TokenAnswer.self, from: data, status: response.statusCode)
        guard let user = answer.user else {
            throw SiwaClientError(.invalidResponse, "the sign-in answer has no user", status: response.statusCode)
        }
        var latest = try loadContents()
        latest.tokens = SessionTokens(accessToken: answer.accessToken, refreshToken: answer.refreshToken)
        latest.forgetProfile(appleUserID: appleUserID)  // the server has the account now
        try save(latest)
        return Session(user: user, isNewUser: answer.isNewUser ?? false)
    }

    /// Whether a session is stored (it may still turn out to have been revoked on the server).
    public func isSignedIn() throws -> Bool {
        try loadContents().tokens != nil
    }

    // MARK: Authenticated requests

    /// The signed-in account (`GET /api/me`).
    /// - Throws: `SiwaClientError`: `.notSignedIn` without a session (or when it ended), `.server` for another error
    ///   answer, `.transport` when the server could not be reached.
    public func currentUser() async throws -> User {
        var request = URLRequest(url: baseURL.appending(path: "api/me"))
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.cachePolicy = .reloadIgnoringLocalCacheData
        let (data, response) = try await send(request)
        guard response.statusCode == 200 else { throw WireCoding.serverError(data, response) }
        return try WireCoding.decode(User.self, from: data, status: response.statusCode)
    }

    /// Sends `request` with `Authorization: Bearer <access token>` and returns the answer, whatever its status.
    ///
    /// On a 401 the session is refreshed (one `POST /auth/refresh` shared by every request that failed with the same
    /// token) and the request is sent once more; that second answer is returned even if it is a 401.
    /// - Throws: `SiwaClientError`: `.notSignedIn` without a session or when the refresh was refused (the stored
    ///   tokens are then cleared), `.server` when the refresh failed for another reason (the session is kept),
    ///   `.transport` when no answer arrived.
    /// - Warning: the access token goes to whatever host `request` names: send only to siwa and to services that
    ///   accept its tokens.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        guard let tokens = try loadContents().tokens else {
            throw SiwaClientError(.notSignedIn, "no session is stored")
        }
        let first = try await deliver(request, bearer: tokens.accessToken)
        guard first.1.statusCode == 401 else { return first }
        let fresh = try await refreshedTokens(replacing: tokens)
        return try await deliver(request, bearer: fresh.accessToken)
    }

    // MARK: Sign-out

    /// Ends the session: forgets the tokens, then asks the server to revoke the session (`POST /auth/logout` with the
    /// refresh token, which works even when the access token has expired).
    ///
    /// The local tokens are gone even when this throws. A refresh in progress is awaited first, so that the refresh
    /// token revoked is the current one.
    /// - Throws: `SiwaClientError`: `.tokenStore` when the store could not be cleared; `.server` or `.transport` when
    ///   the server could not be told (its session then ends when its refresh token expires).
    public func signOut() async throws {
        if refreshWaiters != nil {
            _ = try? await withCheckedThrowingContinuation { refreshWaiters?.append($0) }
        }
        var stored = try loadContents()
        guard let tokens = stored.tokens else { return }
        stored.tokens = nil
        try save(stored)
        let body = RefreshTokenBody(refreshToken: tokens.refreshToken)
        let (data, response) = try await deliver(try jsonRequest("auth/logout", body: body))
        guard (200..<300).contains(response.statusCode) else { throw WireCoding.serverError(data, response) }
    }

    // MARK: Internals

    /// The store's contents, read at first use.
    func loadContents() throws -> TokenStoreContents {
        if let contents { return contents }
        let read = try tokenStore.read()
        contents = read
        return read
    }

    /// Replaces the contents in memory, then in the store (in memory even if the store fails, so that a rotated
    /// refresh token is not lost while the process lives).
    func save(_ new: TokenStoreContents) throws {
        contents = new
        try tokenStore.write(new)
    }

    /// A JSON `POST` to `path` under the base URL.
    func jsonRequest(_ path: String, body: some Encodable) throws -> URLRequest {
        var request = URLRequest(url: baseURL.appending(path: path))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.cachePolicy = .reloadIgnoringLocalCacheData
        request.httpBody = try WireCoding.encode(body)
        return request
    }

    /// Sends through the transport, with a bearer token if given; maps transport failures to `SiwaClientError`.
    func deliver(_ request: URLRequest, bearer: String? = nil) async throws -> (Data, HTTPURLResponse) {
        var request = request
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        do {
            return try await transport.send(request)
        } catch let error as SiwaClientError {
            throw error
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw SiwaClientError(.transport, "the request to the siwa server failed", underlying: error)
        }
    }
}

extension String {
    /// Nil when blank.
    fileprivate var nonBlank: String? {
        trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : self
    }
}
