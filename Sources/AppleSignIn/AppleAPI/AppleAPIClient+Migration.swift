import HTTPTypes
import Logging
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the receiving team learns from a `transfer_sub` (Apple's TN3159).
public struct TransferredAppleUser: Sendable, Hashable {
    /// The user's `sub` at the receiving team.
    public var sub: AppleUserID
    /// The email the receiving team sees (the real one, or a private relay address), when Apple sends one.
    public var email: String?
    /// `is_private_email`.
    public var isPrivateEmail: Bool?

    /// Makes the receiving team's view of a user from its parts.
    /// - Parameters:
    ///   - sub: the user's `sub` at the receiving team.
    ///   - email: the email Apple sent, if any.
    ///   - isPrivateEmail: `is_private_email`, if Apple sent it.
    public init(sub: AppleUserID, email: String?, isPrivateEmail: Bool?) {
        self.sub = sub
        self.email = email
        self.isPrivateEmail = isPrivateEmail
    }
}

extension AppleAPIClient {
    /// The team's access token for user migration: `POST /auth/token` with `grant_type=client_credentials` and
    /// `scope=user.migration`.
    ///
    /// The token is kept until shortly before its `expires_in` (a tenth of its lifetime, at most 5 minutes, earlier)
    /// and shared by every copy of this client.
    /// - Parameter clientID: the client id the team uses for the transfer (usually the app's primary bundle id).
    /// - Returns: the bearer token for ``transferSub(for:targetTeam:clientID:)`` and
    ///   ``exchangeTransferSub(_:clientID:)``.
    /// - Throws: ``AppleSignInError``: Apple's OAuth error (`invalid_client`, `invalid_scope`), or a transport failure.
    /// - Warning: a credential; never log it.
    public func migrationAccessToken(clientID: ClientID) async throws(AppleSignInError) -> String {
        let now = verifier.clock.now
        if let cached = migrationTokens.token(for: clientID, at: now) { return cached }
        let fields = [
            ("grant_type", "client_credentials"),
            ("scope", "user.migration"),
            ("client_id", clientID.rawValue),
            ("client_secret", clientSecrets.secret(for: clientID).token),
        ]
        let answer = try await postMigration("/auth/token", fields: fields, bearer: nil, clientID: clientID)
        let response = try AppleTokenResponse(json: answer.body)
        let lifetime = TimeInterval(max(response.expiresIn, 0))
        let margin = min(lifetime / 10, 300)
        migrationTokens.keep(response.accessToken, for: clientID, until: now.addingTimeInterval(lifetime - margin))
        logger.debug("obtained a user-migration access token", metadata: ["client_id": "\(clientID)"])
        return response.accessToken
    }

    /// Sending team: the `transfer_sub` that moves one user to `targetTeam` (`POST /auth/usermigrationinfo` with
    /// `sub` and `target`).
    /// - Parameters:
    ///   - sub: the user's `sub` at this (the sending) team.
    ///   - targetTeam: the receiving team's id.
    ///   - clientID: the client id the team uses for the transfer.
    /// - Returns: the `transfer_sub`, which the receiving team exchanges for the user's new `sub`.
    /// - Throws: ``AppleSignInError``: ``AppleSignInError/Code/invalidRequest`` for a `sub` Apple does not know,
    ///   ``AppleSignInError/Code/unauthorizedClient`` when Apple refuses the migration access token twice, a transport
    ///   failure, or ``AppleSignInError/Code/unexpectedResponse`` for an answer without `transfer_sub`.
    public func transferSub(
        for sub: AppleUserID,
        targetTeam: TeamID,
        clientID: ClientID
    ) async throws(AppleSignInError) -> AppleUserID {
        let answer = try await migrationInfo(
            [("sub", sub.rawValue), ("target", targetTeam.rawValue)],
            clientID: clientID
        )
        guard let transferSub = answer["transfer_sub"]?.stringValue, !transferSub.isEmpty else {
            throw AppleSignInError(.unexpectedResponse, "Apple's user migration answer has no transfer_sub")
        }
        return AppleUserID(transferSub)
    }

    /// Receiving team: exchanges a `transfer_sub` for the user's `sub` at this team, and the email this team sees
    /// (`POST /auth/usermigrationinfo` with `transfer_sub`).
    /// - Parameters:
    ///   - transferSub: what the sending team got for the user.
    ///   - clientID: the client id this team uses for the transfer.
    /// - Returns: the user's `sub` at this team, with the email (if Apple sent a non-empty one) and
    ///   `is_private_email`.
    /// - Throws: ``AppleSignInError``: ``AppleSignInError/Code/invalidRequest`` for a `transfer_sub` Apple does not
    ///   know for this team, ``AppleSignInError/Code/unauthorizedClient`` when Apple refuses the migration access
    ///   token twice, a transport failure, or ``AppleSignInError/Code/unexpectedResponse`` for an answer without `sub`.
    public func exchangeTransferSub(
        _ transferSub: AppleUserID,
        clientID: ClientID
    ) async throws(AppleSignInError) -> TransferredAppleUser {
        let answer = try await migrationInfo([("transfer_sub", transferSub.rawValue)], clientID: clientID)
        guard let sub = answer["sub"]?.stringValue, !sub.isEmpty else {
            throw AppleSignInError(.unexpectedResponse, "Apple's user migration answer has no sub")
        }
        let email = answer["email"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        return TransferredAppleUser(
            sub: AppleUserID(sub),
            email: email,
            isPrivateEmail: answer["is_private_email"]?.lenientBoolValue
        )
    }

    /// `POST /auth/usermigrationinfo` with the cached access token; a refused token (401) is dropped and the call made
    /// once more with a new one.
    private func migrationInfo(
        _ fields: [(String, String)],
        clientID: ClientID
    ) async throws(AppleSignInError) -> JSONValue {
        var attempt = 0
        while true {
            attempt += 1
            let accessToken = try await migrationAccessToken(clientID: clientID)
            let all =
                fields + [
                    ("client_id", clientID.rawValue), ("client_secret", clientSecrets.secret(for: clientID).token),
                ]
            do throws(AppleSignInError) {
                let answer = try await postMigration(
                    "/auth/usermigrationinfo",
                    fields: all,
                    bearer: accessToken,
                    clientID: clientID
                )
                do {
                    return try JSONReader.parseObject(answer.body)
                } catch {
                    throw AppleSignInError(.unexpectedResponse, "Apple's user migration answer is not a JSON object")
                }
            } catch  where error.code == .unauthorizedClient && attempt < 2 {
                migrationTokens.drop(clientID)
            }
        }
    }

    private func postMigration(
        _ path: String,
        fields: [(String, String)],
        bearer: String?,
        clientID: ClientID
    ) async throws(AppleSignInError) -> HTTPTransportResponse {
        let base = configuration.appleBaseURL
        var request = HTTPRequest(
            method: .post,
            scheme: base.scheme,
            authority: base.authority,
            path: base.pathPrefix + path
        )
        request.headerFields[.contentType] = "application/x-www-form-urlencoded"
        request.headerFields[.accept] = "application/json"
        if let bearer { request.headerFields[.authorization] = "Bearer \(bearer)" }
        let answer = try await AppleHTTP.send(
            request,
            body: Array(FormURLEncoding.encode(fields).utf8),
            transport: transport,
            retry: retryPolicy,
            timeout: retryPolicy.timeout,
            logger: logger
        )
        return try observed(answer, call: .migration, path: path, clientID: clientID) { answer in
            guard answer.response.status == .unauthorized else { return nil }
            return AppleSignInError(
                .unauthorizedClient,
                "Apple refused the user-migration access token of '\(clientID)' at \(path); check that the team "
                    + "may transfer apps"
            )
        }
    }
}

/// The user-migration access tokens of one ``AppleAPIClient``, per client id, until their renewal time.
final class MigrationAccessTokenCache: Sendable {
    private let tokens = Mutex<[ClientID: (token: String, renewAt: Date)]>([:])

    func token(for clientID: ClientID, at now: Date) -> String? {
        tokens.withLock { tokens in
            guard let cached = tokens[clientID], cached.renewAt > now else { return nil }
            return cached.token
        }
    }

    func keep(_ token: String, for clientID: ClientID, until renewAt: Date) {
        tokens.withLock { $0[clientID] = (token, renewAt) }
    }

    func drop(_ clientID: ClientID) {
        _ = tokens.withLock { $0.removeValue(forKey: clientID) }
    }
}
