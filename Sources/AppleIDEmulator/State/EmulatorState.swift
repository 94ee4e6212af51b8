import Crypto
import CryptoExtras
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The emulator's memory and its rules: Apple IDs, consent, codes, tokens, keys, faults and the call log.
actor EmulatorState {
    let configuration: EmulatorConfiguration
    private let now: @Sendable () -> Date
    private let stateFile: String?
    private let logger: Logger
    private var records: EmulatorRecords
    private var signingKey: _RSA.Signing.PrivateKey
    private var currentKid = ""
    /// ES256 public keys of the teams, by team id: client secrets must verify with them.
    private let teamKeys: [String: P256.Signing.PublicKey]
    private var faults: [String: EmulatorFault] = [:]

    init(
        configuration: EmulatorConfiguration,
        now: @escaping @Sendable () -> Date,
        stateFile: String?,
        logger: Logger
    ) async throws {
        try configuration.validate()
        self.configuration = configuration
        self.now = now
        self.stateFile = stateFile
        self.logger = logger
        if let stateFile, let data = FileManager.default.contents(atPath: stateFile) {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .secondsSince1970
            self.records = try decoder.decode(EmulatorRecords.self, from: data)
        } else {
            self.records = EmulatorRecords()
        }
        var teamKeys: [String: P256.Signing.PublicKey] = [:]
        for team in configuration.teams {
            teamKeys[team.teamID] = try P256.Signing.PublicKey(pemRepresentation: team.publicKeyPEM)
        }
        self.teamKeys = teamKeys
        if let current = records.signingKeys.last(where: { $0.retiredAt == nil }) {
            self.signingKey = try _RSA.Signing.PrivateKey(pemRepresentation: current.privateKeyPEM)
            self.currentKid = current.kid
        } else {
            self.signingKey = try await Self.newSigningKey()
            addSigningKey(signingKey)
        }
    }

    // MARK: Keys

    /// Makes `key` the one that signs, under a new `kid`, and keeps it.
    private func addSigningKey(_ key: _RSA.Signing.PrivateKey) {
        let record = SigningKeyRecord(
            kid: Self.randomAlphanumeric(10),
            privateKeyPEM: key.pemRepresentation,
            createdAt: now()
        )
        records.signingKeys.append(record)
        signingKey = key
        currentKid = record.kid
        save()
    }

    /// The key set at `/auth/keys`: the current key and rotated-out keys still in their grace period.
    func keySetJSON() throws -> [UInt8] {
        let cutoff = now().addingTimeInterval(-configuration.keyGracePeriod)
        records.signingKeys.removeAll { ($0.retiredAt.map { $0 < cutoff }) ?? false }
        var keys: [[String: String]] = []
        for record in records.signingKeys.reversed() {
            let primitives = try _RSA.Signing.PrivateKey(pemRepresentation: record.privateKeyPEM).publicKey
                .getKeyPrimitives()
            keys.append([
                "kty": "RSA", "kid": record.kid, "use": "sig", "alg": "RS256",
                "n": CompactJWS.base64URL(primitives.modulus), "e": CompactJWS.base64URL(primitives.publicExponent),
            ])
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Array(try encoder.encode(["keys": keys]))
    }

    /// An RSA key, made on a thread of Dispatch's global queue: a tenth of a second of CPU or more, which would
    /// otherwise hold one of the cooperative pool's few threads from every request.
    private static func newSigningKey() async throws -> _RSA.Signing.PrivateKey {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try _RSA.Signing.PrivateKey(keySize: .bits2048) })
            }
        }
    }

    /// A new current key; the old one stays published for the grace period.
    func rotateKeys() async throws -> String {
        let key = try await Self.newSigningKey()
        for index in records.signingKeys.indices where records.signingKeys[index].retiredAt == nil {
            records.signingKeys[index].retiredAt = now()
        }
        addSigningKey(key)
        return currentKid
    }

    // MARK: Faults and log

    func setFault(endpoint: String, mode: EmulatorFault.Mode, count: Int?) {
        faults[endpoint] = mode == .off ? nil : EmulatorFault(mode: mode, remaining: count)
    }

    /// The fault to apply to this call of `endpoint`, counting it down.
    func takeFault(_ endpoint: String) -> EmulatorFault.Mode? {
        guard var fault = faults[endpoint] else { return nil }
        if let remaining = fault.remaining {
            if remaining <= 1 {
                faults[endpoint] = nil
            } else {
                fault.remaining = remaining - 1
                faults[endpoint] = fault
            }
        }
        return fault.mode
    }

    /// The faults in force, by endpoint.
    func activeFaults() -> [String: EmulatorFault] { faults }

    func log(
        _ endpoint: String,
        grantType: String? = nil,
        clientID: String? = nil,
        outcome: String,
        unregisteredClient: Bool = false
    ) {
        records.log.append(
            EmulatorLogEntry(
                time: now(),
                endpoint: endpoint,
                grantType: grantType,
                clientID: clientID,
                outcome: outcome,
                unregisteredClient: unregisteredClient ? true : nil
            )
        )
        if records.log.count > 5000 { records.log.removeFirst(records.log.count - 5000) }
        save()
    }

    func logEntries() -> [EmulatorLogEntry] { records.log }

    // MARK: Apple IDs

    /// The Apple ID for `email`, created on first use; a name given updates the stored one.
    private func appleID(email: String, givenName: String?, familyName: String?) -> String {
        let key = email.lowercased()
        var record = records.appleIDs[key] ?? AppleIDRecord(email: email)
        if let givenName, !givenName.isEmpty { record.givenName = givenName }
        if let familyName, !familyName.isEmpty { record.familyName = familyName }
        records.appleIDs[key] = record
        return key
    }

    /// The user's link with `teamID`: the same `sub` for every client of one team, another for another team.
    private func link(_ appleID: String, team teamID: String) -> TeamLink {
        if let link = records.appleIDs[appleID]?.teams[teamID] { return link }
        let link = TeamLink(
            sub: "000\(Int.random(in: 100...999)).\(Self.randomHex(16)).\(Int.random(in: 1000...9999))",
            relayEmail: "\(Self.randomAlphanumeric(10).lowercased())@privaterelay.appleid.com"
        )
        records.appleIDs[appleID]?.teams[teamID] = link
        return link
    }

    private func updateLink(_ appleID: String, team teamID: String, _ body: (inout TeamLink) -> Void) {
        var current = link(appleID, team: teamID)
        body(&current)
        records.appleIDs[appleID]?.teams[teamID] = current
    }

    /// Records an authorization: returns whether it was the first for this Apple ID and team. As at Apple, the first
    /// one decides whether the team sees the email (the email scope, then hidden or not) until consent is revoked.
    private func authorize(_ appleID: String, team teamID: String, hideEmail: Bool, sharesEmail: Bool = true) -> Bool {
        let first = !link(appleID, team: teamID).consented
        updateLink(appleID, team: teamID) { link in
            if first {
                link.hideEmail = hideEmail
                link.emailWithheld = sharesEmail ? nil : true
            }
            link.consented = true
            link.consentRevokedAt = nil
        }
        return first
    }

    /// The email this team sees: the relay address when hidden; none when the email scope was not granted.
    private func visibleEmail(_ appleID: String, team teamID: String) -> (email: String, isPrivate: Bool)? {
        let link = link(appleID, team: teamID)
        guard link.emailWithheld != true else { return nil }
        return link.hideEmail ? (link.relayEmail, true) : (records.appleIDs[appleID]?.email ?? appleID, false)
    }

    // MARK: Tokens

    private func identityToken(
        appleID: String,
        teamID: String,
        clientID: String,
        nonce: String?,
        native: Bool,
        code: String? = nil,
        lifetime: Int = 600
    ) throws -> String {
        let link = link(appleID, team: teamID)
        let visible = visibleEmail(appleID, team: teamID)
        let nowSeconds = Int(now().timeIntervalSince1970)
        // A negative lifetime gives an already expired token, issued the usual 600 s before it expired.
        let expiry = nowSeconds + lifetime
        let issued = lifetime >= 0 ? nowSeconds : expiry - 600
        let transfer = records.transfers.last {
            $0.appleID == appleID && $0.toTeam == teamID && now().timeIntervalSince($0.createdAt) < 60 * 86_400
        }
        let claims = IdentityTokenClaims(
            iss: configuration.issuer,
            aud: clientID,
            exp: expiry,
            iat: issued,
            sub: link.sub,
            nonce: nonce,
            // As Apple does next to a code: base64url of the left half of the code's SHA-256 (OpenID Connect Core
            // 3.3.2.11). It also makes two sign-ins in one second two different tokens, as on a device.
            cHash: code.map { CompactJWS.base64URL(Data(SHA256.hash(data: Array($0.utf8)).prefix(16))) },
            email: visible?.email,
            emailVerified: visible.map { _ in true },
            isPrivateEmail: visible?.isPrivate,
            authTime: nowSeconds,
            nonceSupported: true,
            realUserStatus: native ? 2 : nil,
            transferSub: transfer?.transferSub
        )
        return try CompactJWS.signRS256(claims, kid: currentKid, key: signingKey)
    }

    private func issueCode(
        appleID: String,
        teamID: String,
        clientID: String,
        redirectURI: String?,
        nonce: String?
    ) -> String {
        let code = "c\(Self.randomHex(16)).0.\(Self.randomAlphanumeric(4).lowercased()).\(Self.randomAlphanumeric(22))"
        records.codes[code] = CodeRecord(
            clientID: clientID,
            teamID: teamID,
            appleID: appleID,
            redirectURI: redirectURI,
            nonce: nonce,
            expiresAt: now().addingTimeInterval(300)
        )
        return code
    }

    /// Checks `client_id` and `client_secret` as Apple does. Every failure of the secret is a bare `invalid_client`
    /// on the wire, as at Apple; the reason goes to the emulator's log, never the secret.
    private func authenticateClient(
        clientID: String?,
        clientSecret: String?
    ) throws(AppleOAuthError) -> EmulatorConfiguration.Team {
        guard let clientID, !clientID.isEmpty else { throw .invalidRequest("client_id is missing") }
        guard let (team, _) = configuration.team(ofClient: clientID) else {
            throw .refusedClient("no team registers client_id \(clientID)")
        }
        guard let clientSecret, !clientSecret.isEmpty else { throw .invalidRequest("client_secret is missing") }
        guard let key = teamKeys[team.teamID] else { throw .refusedClient("team \(team.teamID) has no key") }
        guard let parts = CompactJWS.Parts(clientSecret),
            let header = try? JSONDecoder().decode(ClientSecretHeader.self, from: parts.header)
        else { throw .refusedClient("client_secret is not a JWT") }
        guard header.alg == "ES256" else {
            throw .refusedClient("client_secret alg is \(header.alg ?? "missing"), not ES256")
        }
        guard header.kid == team.keyID else {
            throw .refusedClient("client_secret kid is \(header.kid ?? "missing"), not the team's key id \(team.keyID)")
        }
        guard CompactJWS.isSignedES256(parts, by: key) else {
            throw .refusedClient("client_secret is not signed by the team's key \(team.keyID)")
        }
        guard let claims = try? JSONDecoder().decode(ClientSecretClaims.self, from: parts.payload) else {
            throw .refusedClient("client_secret lacks iss, iat, exp, aud or sub")
        }
        let nowSeconds = Int(now().timeIntervalSince1970)
        guard claims.iss == team.teamID else {
            throw .refusedClient("client_secret iss is \(claims.iss), not the team id \(team.teamID)")
        }
        guard claims.sub == clientID else {
            throw .refusedClient("client_secret sub is \(claims.sub), not the client_id \(clientID)")
        }
        guard claims.aud.values.contains("https://appleid.apple.com") else {
            throw .refusedClient("client_secret aud is not https://appleid.apple.com")
        }
        guard claims.exp > nowSeconds else { throw .refusedClient("client_secret has expired") }
        guard claims.iat <= nowSeconds + 60 else { throw .refusedClient("client_secret iat is in the future") }
        guard claims.exp - claims.iat <= 15_777_000 else {
            throw .refusedClient("client_secret lives longer than 6 months (15777000 s)")
        }
        return team
    }

    /// `POST /auth/token`.
    func token(_ form: TokenForm) throws(AppleOAuthError) -> TokenResponse {
        guard let grantType = form.grant_type, !grantType.isEmpty else {
            throw .invalidRequest("grant_type is missing")
        }
        guard ["authorization_code", "refresh_token", "client_credentials"].contains(grantType) else {
            throw AppleOAuthError(error: "unsupported_grant_type", description: nil)
        }
        let team = try authenticateClient(clientID: form.client_id, clientSecret: form.client_secret)
        let clientID = form.client_id ?? ""
        switch grantType {
        case "authorization_code":
            guard let code = form.code, !code.isEmpty else { throw .invalidRequest("code is missing") }
            guard var record = records.codes[code] else {
                throw .invalidGrant("The code has expired or has been revoked.")
            }
            guard !record.used else { throw .invalidGrant("The code has already been used.") }
            guard record.expiresAt > now() else { throw .invalidGrant("The code has expired or has been revoked.") }
            guard record.clientID == clientID else {
                throw .invalidGrant("client_id mismatch. The code was not issued to \(clientID).")
            }
            guard record.redirectURI == form.redirect_uri else {
                throw .invalidGrant("redirect_uri does not match the authorization's (native codes take none)")
            }
            record.used = true
            records.codes[code] = record
            let refreshToken =
                "r\(Self.randomHex(16)).0.\(Self.randomAlphanumeric(4).lowercased()).\(Self.randomAlphanumeric(22))"
            records.refreshTokens[refreshToken] = TokenRecord(
                clientID: clientID,
                teamID: team.teamID,
                appleID: record.appleID
            )
            let accessToken = issueAccessToken(
                clientID: clientID,
                teamID: team.teamID,
                appleID: record.appleID,
                refreshToken: refreshToken
            )
            let idToken = try signedIdentityToken(
                appleID: record.appleID,
                teamID: team.teamID,
                clientID: clientID,
                nonce: record.nonce
            )
            save()
            return TokenResponse(
                access_token: accessToken,
                expires_in: 3600,
                refresh_token: refreshToken,
                id_token: idToken
            )
        case "refresh_token":
            guard let token = form.refresh_token, !token.isEmpty else {
                throw .invalidRequest("refresh_token is missing")
            }
            guard let record = records.refreshTokens[token], !record.revoked, record.clientID == clientID,
                records.appleIDs[record.appleID] != nil
            else { throw .invalidGrant("The token has expired or has been revoked.") }
            let accessToken = issueAccessToken(
                clientID: clientID,
                teamID: team.teamID,
                appleID: record.appleID,
                refreshToken: token
            )
            let idToken = try signedIdentityToken(
                appleID: record.appleID,
                teamID: team.teamID,
                clientID: clientID,
                nonce: nil
            )
            save()
            return TokenResponse(access_token: accessToken, expires_in: 3600, refresh_token: nil, id_token: idToken)
        default:  // client_credentials
            guard form.scope == "user.migration" else {
                throw AppleOAuthError(error: "invalid_scope", description: "only user.migration is supported")
            }
            let accessToken = "m\(Self.randomHex(24))"
            records.migrationTokens[accessToken] = MigrationTokenRecord(
                teamID: team.teamID,
                clientID: clientID,
                expiresAt: now().addingTimeInterval(3600)
            )
            save()
            return TokenResponse(access_token: accessToken, expires_in: 3600, refresh_token: nil, id_token: nil)
        }
    }

    private func signedIdentityToken(
        appleID: String,
        teamID: String,
        clientID: String,
        nonce: String?
    )
        throws(AppleOAuthError) -> String
    {
        do {
            return try identityToken(
                appleID: appleID,
                teamID: teamID,
                clientID: clientID,
                nonce: nonce,
                native: false
            )
        } catch {
            throw AppleOAuthError(httpCode: 500, error: "server_error", description: "signing failed")
        }
    }

    private func issueAccessToken(clientID: String, teamID: String, appleID: String, refreshToken: String) -> String {
        let token = "a\(Self.randomHex(24))"
        records.accessTokens[token] = TokenRecord(
            clientID: clientID,
            teamID: teamID,
            appleID: appleID,
            expiresAt: now().addingTimeInterval(3600),
            refreshToken: refreshToken
        )
        return token
    }

    /// `POST /auth/revoke`: 200 also for unknown tokens.
    func revoke(_ form: RevokeForm) throws(AppleOAuthError) {
        _ = try authenticateClient(clientID: form.client_id, clientSecret: form.client_secret)
        guard let token = form.token, !token.isEmpty else { throw .invalidRequest("token is missing") }
        if var record = records.refreshTokens[token], record.clientID == form.client_id {
            record.revoked = true
            records.refreshTokens[token] = record
            for (key, access) in records.accessTokens where access.refreshToken == token {
                records.accessTokens[key]?.revoked = true
            }
        } else if records.accessTokens[token]?.clientID == form.client_id {
            records.accessTokens[token]?.revoked = true
        }
        save()
    }

    /// Revokes every refresh and access token of one Apple ID with one team (consent revoked, account deleted).
    private func revokeTokens(appleID: String, teamID: String) {
        for (key, record) in records.refreshTokens where record.appleID == appleID && record.teamID == teamID {
            records.refreshTokens[key]?.revoked = true
        }
        for (key, record) in records.accessTokens where record.appleID == appleID && record.teamID == teamID {
            records.accessTokens[key]?.revoked = true
        }
    }

    // MARK: Web authorization

    /// Validates an authorize request; the error is shown as Apple's error page, never redirected.
    func checkAuthorize(_ parameters: AuthorizeParameters) throws(AppleOAuthError) -> EmulatorConfiguration.Team {
        guard let clientID = parameters.client_id, let (team, client) = configuration.team(ofClient: clientID) else {
            throw .invalidClient("Invalid client id or web redirect url.")
        }
        guard let redirectURI = parameters.redirect_uri, client.redirectURIs.contains(redirectURI) else {
            throw .invalidRequest("Invalid web redirect url.")
        }
        let responseTypes = Set((parameters.response_type ?? "").split(separator: " ").map(String.init))
        guard responseTypes.contains("code"), responseTypes.isSubset(of: ["code", "id_token"]) else {
            throw AppleOAuthError(error: "unsupported_response_type", description: "response_type must include code")
        }
        let mode = parameters.response_mode ?? "query"
        let scoped = !(parameters.scope ?? "").isEmpty
        guard ["query", "fragment", "form_post"].contains(mode) else {
            throw .invalidRequest("Invalid response_mode.")
        }
        guard !(scoped && mode != "form_post") else {
            throw .invalidRequest("response_mode must be form_post when name or email scope is requested.")
        }
        guard !(responseTypes.contains("id_token") && mode == "query") else {
            throw .invalidRequest("response_mode query is not allowed with id_token.")
        }
        return team
    }

    /// The result of Continue on the consent page.
    struct Authorization {
        var fields: [(String, String)]
    }

    /// Continue: code, id_token, state, and `user` on the first authorization of this Apple ID for the team.
    func consent(_ parameters: AuthorizeParameters) throws -> Authorization {
        let team = try checkAuthorize(parameters)
        let clientID = parameters.client_id ?? ""
        let email = (parameters.email ?? "").trimmingCharacters(in: .whitespaces)
        guard email.contains("@") else { throw AppleOAuthError.invalidRequest("an Apple ID email is required") }
        let appleID = appleID(email: email, givenName: parameters.given_name, familyName: parameters.family_name)
        let scopes = Set((parameters.scope ?? "").split(separator: " ").map(String.init))
        let first = authorize(
            appleID,
            team: team.teamID,
            hideEmail: parameters.hide_email == "true",
            sharesEmail: scopes.contains("email")
        )
        let code = issueCode(
            appleID: appleID,
            teamID: team.teamID,
            clientID: clientID,
            redirectURI: parameters.redirect_uri,
            nonce: parameters.nonce
        )
        var fields: [(String, String)] = [("code", code)]
        if (parameters.response_type ?? "").contains("id_token") {
            fields.append(
                (
                    "id_token",
                    try identityToken(
                        appleID: appleID,
                        teamID: team.teamID,
                        clientID: clientID,
                        nonce: parameters.nonce,
                        native: false,
                        code: code
                    )
                )
            )
        }
        if let state = parameters.state { fields.append(("state", state)) }
        if first, !scopes.isEmpty {
            let record = records.appleIDs[appleID]
            let user = FirstAuthorizationUser(
                name: scopes.contains("name") ? .init(firstName: record?.givenName, lastName: record?.familyName) : nil,
                email: visibleEmail(appleID, team: team.teamID)?.email
            )
            fields.append(("user", String(decoding: try JSONEncoder().encode(user), as: UTF8.self)))
        }
        save()
        return Authorization(fields: fields)
    }

    /// What a native app's `ASAuthorizationAppleIDCredential` holds.
    ///
    /// A `clientId` that no team registers still gets a credential, so that a developer can check that their server
    /// refuses another app's token: signed with the emulator's current key and issuer like any other, `aud` the asked
    /// client id, `sub` the Apple ID's with the first configured team. It is always a first authorization and records no
    /// consent (the emulator does not know that app); its code cannot be exchanged (`/auth/token` knows no such client).
    /// - Returns: the credential, and whether `clientId` is registered.
    func nativeSignIn(
        _ request: NativeSignInRequest
    ) throws -> (credential: NativeCredential, registered: Bool) {
        let registered = configuration.team(ofClient: request.clientId)?.0
        guard let team = registered ?? configuration.teams.first else {
            throw AppleOAuthError.invalidClient("no team is configured")
        }
        guard request.email.contains("@") else { throw AppleOAuthError.invalidRequest("email must be an address") }
        let appleID = appleID(email: request.email, givenName: request.givenName, familyName: request.familyName)
        // An app that does not ask for a scope gets neither it now nor later (the first authorization decides).
        let scopes = Set(request.scopes ?? ["name", "email"])
        let first =
            registered == nil
            ? true
            : authorize(
                appleID,
                team: team.teamID,
                hideEmail: request.hideEmail ?? false,
                sharesEmail: scopes.contains("email")
            )
        let code = issueCode(
            appleID: appleID,
            teamID: team.teamID,
            clientID: request.clientId,
            redirectURI: nil,
            nonce: request.nonce
        )
        let token = try identityToken(
            appleID: appleID,
            teamID: team.teamID,
            clientID: request.clientId,
            nonce: request.nonce,
            native: true,
            code: code,
            lifetime: request.expiresIn ?? 600
        )
        let record = records.appleIDs[appleID]
        save()
        let credential = NativeCredential(
            identityToken: token,
            authorizationCode: code,
            user: link(appleID, team: team.teamID).sub,
            email: first ? visibleEmail(appleID, team: team.teamID)?.email : nil,
            fullName: first && scopes.contains("name")
                ? .init(givenName: record?.givenName, familyName: record?.familyName) : nil,
            realUserStatus: 2
        )
        return (credential, registered != nil)
    }

    // MARK: Notifications and consent

    /// Signs a notification for `clientID` about `email`'s Apple ID and applies its effect; returns what to POST where,
    /// kept (the last 100) for redelivery.
    func notification(clientID: String, email: String, type: String) throws -> SentNotificationRecord {
        guard let (team, client) = configuration.team(ofClient: clientID) else {
            throw AppleOAuthError.invalidClient("unknown clientId")
        }
        let appleID = email.lowercased()
        guard records.appleIDs[appleID] != nil else {
            throw AppleOAuthError(httpCode: 404, error: "unknown_apple_id", description: "no Apple ID \(email)")
        }
        let link = link(appleID, team: team.teamID)
        var event = NotificationEvent(type: type, sub: link.sub, eventTime: Int64(now().timeIntervalSince1970 * 1000))
        switch type {
        case "email-disabled", "email-enabled":
            event.email = link.relayEmail
            event.isPrivateEmail = "true"
            updateLink(appleID, team: team.teamID) { $0.emailForwarding = type == "email-enabled" }
        case "consent-revoked":
            revokeTokens(appleID: appleID, teamID: team.teamID)
            let revokedAt = now()
            updateLink(appleID, team: team.teamID) { link in
                link.consented = false
                link.consentRevokedAt = revokedAt
            }
        case "account-delete":
            revokeTokens(appleID: appleID, teamID: team.teamID)
            records.appleIDs[appleID] = nil
        default:
            throw AppleOAuthError.invalidRequest(
                "type must be email-disabled, email-enabled, consent-revoked or account-delete"
            )
        }
        let nowSeconds = Int(now().timeIntervalSince1970)
        let claims = NotificationClaims(
            iss: configuration.issuer,
            aud: clientID,
            exp: nowSeconds + 86_400,
            iat: nowSeconds,
            jti: Self.randomAlphanumeric(22),
            events: String(decoding: try JSONEncoder().encode(event), as: UTF8.self)
        )
        let payload = try CompactJWS.signRS256(claims, kid: currentKid, key: signingKey)
        let sent = SentNotificationRecord(
            id: Self.randomHex(8),
            type: type,
            clientID: clientID,
            sub: link.sub,
            sentAt: now(),
            url: client.notificationURL,
            body: try JSONEncoder().encode(["payload": payload])
        )
        records.sentNotifications.append(sent)
        if records.sentNotifications.count > Self.keptNotifications {
            records.sentNotifications.removeFirst(records.sentNotifications.count - Self.keptNotifications)
        }
        save()
        return sent
    }

    /// How many sent notifications are kept for redelivery.
    static let keptNotifications = 100

    /// The kept notifications, oldest first.
    func sentNotifications() -> [SentNotificationRecord] { records.sentNotifications }

    /// A kept notification, byte for byte as it was sent; `nil` when unknown or no longer kept.
    func sentNotification(id: String) -> SentNotificationRecord? {
        records.sentNotifications.first { $0.id == id }
    }

    // MARK: Console

    /// Every Apple ID, by email.
    func appleIDRecords() -> [AppleIDRecord] {
        records.appleIDs.values.sorted { $0.email.lowercased() < $1.email.lowercased() }
    }

    /// The id of the key that signs new tokens.
    func currentKeyID() -> String { currentKid }

    /// Forgets an Apple ID without notifying anyone (an `account-delete` notification does both): its tokens die and
    /// its next sign-in gets new `sub`s.
    /// - Returns: whether there was such an Apple ID.
    func deleteAppleID(email: String) -> Bool {
        let appleID = email.lowercased()
        guard let record = records.appleIDs[appleID] else { return false }
        for teamID in record.teams.keys { revokeTokens(appleID: appleID, teamID: teamID) }
        records.appleIDs[appleID] = nil
        save()
        return true
    }

    // MARK: Team transfer (TN3159)

    /// `POST /auth/usermigrationinfo`.
    func migrationInfo(_ form: MigrationForm, bearer: String?) throws(AppleOAuthError) -> [String: String] {
        let team = try authenticateClient(clientID: form.client_id, clientSecret: form.client_secret)
        guard let bearer, let grant = records.migrationTokens[bearer], grant.teamID == team.teamID,
            grant.expiresAt > now()
        else {
            throw AppleOAuthError(
                httpCode: 401,
                error: "invalid_token",
                description: "migration access token is invalid"
            )
        }
        if let sub = form.sub, let target = form.target {
            guard configuration.teams.contains(where: { $0.teamID == target }) else {
                throw .invalidRequest("target is not a known team")
            }
            guard let appleID = records.appleIDs.first(where: { $0.value.teams[team.teamID]?.sub == sub })?.key else {
                throw .invalidRequest("unknown sub")
            }
            if let existing = records.transfers.first(where: {
                $0.appleID == appleID && $0.fromTeam == team.teamID && $0.toTeam == target
            }) {
                return ["transfer_sub": existing.transferSub]
            }
            let transferSub = "000\(Int.random(in: 100...999)).\(Self.randomHex(16)).\(Int.random(in: 1000...9999))"
            records.transfers.append(
                TransferRecord(
                    transferSub: transferSub,
                    appleID: appleID,
                    fromTeam: team.teamID,
                    toTeam: target,
                    createdAt: now()
                )
            )
            save()
            return ["transfer_sub": transferSub]
        }
        if let transferSub = form.transfer_sub {
            guard
                let transfer = records.transfers.first(where: {
                    $0.transferSub == transferSub && $0.toTeam == team.teamID
                })
            else { throw .invalidRequest("unknown transfer_sub") }
            let link = link(transfer.appleID, team: team.teamID)
            let (email, isPrivate) =
                link.hideEmail || !link.consented
                ? (link.relayEmail, true) : visibleEmail(transfer.appleID, team: team.teamID) ?? (link.relayEmail, true)
            save()
            return ["sub": link.sub, "email": email, "is_private_email": isPrivate ? "true" : "false"]
        }
        throw .invalidRequest("give sub and target, or transfer_sub")
    }

    // MARK: Persistence and randomness

    private func save() {
        guard let stateFile else { return }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        do {
            try Self.writePrivately(Array(try encoder.encode(records)), to: stateFile)
        } catch {
            logger.error("could not save emulator state", metadata: ["file": "\(stateFile)", "error": "\(error)"])
        }
    }

    /// Replaces `path` with `bytes`, readable by the owner only (0600: the state holds the emulator's private keys):
    /// written to a temporary file created 0600 beside it, then renamed over it, so a crash never leaves half a file.
    static func writePrivately(_ bytes: [UInt8], to path: String) throws {
        let temporary = path + ".tmp-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteNoPermission) }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else {
                close(descriptor)
                unlink(temporary)
                throw CocoaError(.fileWriteUnknown)
            }
            written += count
        }
        fchmod(descriptor, 0o600)
        fsync(descriptor)
        close(descriptor)
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw CocoaError(.fileWriteUnknown)
        }
    }

    static func randomHex(_ bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef")
        return String(
            (0..<bytes).flatMap { _ -> [Character] in
                let byte = UInt8.random(in: 0...255, using: &generator)
                return [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
            }
        )
    }

    static func randomAlphanumeric(_ count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<count).map { _ in alphabet.randomElement(using: &generator)! })
    }
}

/// The `user` field of a first web authorization.
struct FirstAuthorizationUser: Encodable {
    struct Name: Encodable {
        var firstName: String?
        var lastName: String?
    }
    /// Only with the name scope.
    var name: Name?
    /// Only with the email scope.
    var email: String?
}
