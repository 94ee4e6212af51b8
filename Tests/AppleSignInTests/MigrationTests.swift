import AppleSignIn
import Crypto
import HTTPTypes
import SiwaTesting
import Synchronization
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Team transfer (TN3159): the migration access token and both sides of `/auth/usermigrationinfo`.
@Suite("Apple REST API client: team transfer")
struct MigrationTests {
    static let bundleID: ClientID = "com.example.app"
    static let now = Date(timeIntervalSince1970: 1_750_000_000)

    let clock = ManualWallClock(now)
    let transport = StubTransport()

    private func client() throws -> AppleAPIClient {
        let credentials = ClientSecretCredentials(
            teamID: try TeamID("ABCDE12345"),
            keyID: try KeyID("KEY0123456"),
            key: AppleDeveloperKey(privateKey: P256.Signing.PrivateKey())
        )
        let configuration = try AppleSignInConfiguration(
            bundleIDs: [Self.bundleID],
            credentials: credentials,
            appleBaseURL: try AppleBaseURL("http://127.0.0.1:9090")
        )
        let keys = AppleKeyCache(
            source: StaticAppleKeySource(keySet: try TestAppleKeys(count: 1).keySet()),
            clock: clock
        )
        return AppleAPIClient(
            configuration: configuration,
            transport: transport,
            verifier: IdentityTokenVerifier(configuration: configuration, keys: keys, clock: clock),
            clientSecrets: ClientSecretFactory(credentials: credentials, lifetime: 86_400, clock: clock),
            retryPolicy: RetryPolicy(maximumAttempts: 2, initialDelay: .zero)
        )
    }

    /// Answers the client-credentials grant with `m.1`, `m.2`, … in turn.
    private func grantTokens(expiresIn: Int = 3600) {
        let issued = Atomic<Int>(0)
        transport.on("/auth/token") { _ in
            let number = issued.add(1, ordering: .relaxed).newValue
            return StubTransport.json(
                .ok,
                #"{"access_token":"m.\#(number)","token_type":"Bearer","expires_in":\#(expiresIn)}"#
            )
        }
    }

    private func expectFormPost(_ recorded: StubTransport.Recorded, path: String) {
        #expect(recorded.request.method == .post)
        #expect(recorded.request.authority == "127.0.0.1:9090")
        #expect(recorded.request.path == path)
        #expect(recorded.request.headerFields[.contentType] == "application/x-www-form-urlencoded")
    }

    /// The `sub` of the client secret in `fields`.
    private func secretSubject(_ fields: [String: String]) throws -> String {
        let secret = try ClientSecretJWT(try #require(fields["client_secret"]))
        #expect(secret.claims.iss == "ABCDE12345")
        return secret.claims.sub
    }

    @Test func theMigrationTokenIsAClientCredentialsGrantForUserMigration() async throws {
        grantTokens()
        let client = try client()
        #expect(try await client.migrationAccessToken(clientID: Self.bundleID) == "m.1")

        let requests = transport.requests(to: "/auth/token")
        try #require(requests.count == 1)
        expectFormPost(requests[0], path: "/auth/token")
        let fields = requests[0].formFields
        #expect(Set(fields.keys) == ["grant_type", "scope", "client_id", "client_secret"])
        #expect(fields["grant_type"] == "client_credentials")
        #expect(fields["scope"] == "user.migration")
        #expect(fields["client_id"] == Self.bundleID.rawValue)
        #expect(try secretSubject(fields) == Self.bundleID.rawValue)
        #expect(requests[0].request.headerFields[.authorization] == nil)
    }

    @Test func theMigrationTokenIsCachedUntilShortlyBeforeItExpires() async throws {
        grantTokens(expiresIn: 3600)
        let client = try client()
        #expect(try await client.migrationAccessToken(clientID: Self.bundleID) == "m.1")
        clock.advance(by: 3000)
        #expect(try await client.migrationAccessToken(clientID: Self.bundleID) == "m.1", "cached within its hour")
        #expect(transport.requests(to: "/auth/token").count == 1)
        clock.advance(by: 400)  // 3400 s: inside the last 5 minutes.
        #expect(try await client.migrationAccessToken(clientID: Self.bundleID) == "m.2", "renewed before it expires")
        #expect(transport.requests(to: "/auth/token").count == 2)
    }

    @Test func theSendingTeamGetsATransferSub() async throws {
        grantTokens()
        transport.on("/auth/usermigrationinfo") { _ in StubTransport.json(.ok, #"{"transfer_sub":"000999.tt.1111"}"#) }
        let client = try client()
        let transferSub = try await client.transferSub(
            for: AppleUserID("001234.old.5678"),
            targetTeam: try TeamID("NEWTEAM456"),
            clientID: Self.bundleID
        )
        #expect(transferSub == AppleUserID("000999.tt.1111"))

        let requests = transport.requests(to: "/auth/usermigrationinfo")
        try #require(requests.count == 1)
        expectFormPost(requests[0], path: "/auth/usermigrationinfo")
        #expect(requests[0].request.headerFields[.authorization] == "Bearer m.1")
        let fields = requests[0].formFields
        #expect(Set(fields.keys) == ["sub", "target", "client_id", "client_secret"])
        #expect(fields["sub"] == "001234.old.5678")
        #expect(fields["target"] == "NEWTEAM456")
        #expect(fields["client_id"] == Self.bundleID.rawValue)
        #expect(try secretSubject(fields) == Self.bundleID.rawValue)

        // A second user reuses the access token.
        _ = try await client.transferSub(
            for: AppleUserID("001234.other.5678"),
            targetTeam: try TeamID("NEWTEAM456"),
            clientID: Self.bundleID
        )
        #expect(transport.requests(to: "/auth/token").count == 1)
    }

    @Test func theReceivingTeamExchangesTheTransferSub() async throws {
        grantTokens()
        transport.on("/auth/usermigrationinfo") { _ in
            StubTransport.json(
                .ok,
                #"{"sub":"002222.new.3333","email":"x1@privaterelay.appleid.com","is_private_email":true}"#
            )
        }
        let moved = try await client().exchangeTransferSub(AppleUserID("000999.tt.1111"), clientID: Self.bundleID)
        #expect(moved.sub == AppleUserID("002222.new.3333"))
        #expect(moved.email == "x1@privaterelay.appleid.com")
        #expect(moved.isPrivateEmail == true)

        let request = try #require(transport.requests(to: "/auth/usermigrationinfo").first)
        #expect(request.request.headerFields[.authorization] == "Bearer m.1")
        let fields = request.formFields
        #expect(Set(fields.keys) == ["transfer_sub", "client_id", "client_secret"])
        #expect(fields["transfer_sub"] == "000999.tt.1111")
        #expect(fields["client_id"] == Self.bundleID.rawValue)
    }

    @Test func isPrivateEmailMayBeAStringAndEmailMayBeAbsent() async throws {
        grantTokens()
        transport.on("/auth/usermigrationinfo") { _ in
            StubTransport.json(.ok, #"{"sub":"002222.new.3333","is_private_email":"false"}"#)
        }
        let moved = try await client().exchangeTransferSub(AppleUserID("000999.tt.1111"), clientID: Self.bundleID)
        #expect(moved.email == nil)
        #expect(moved.isPrivateEmail == false)
    }

    @Test func appleErrorsBecomeTypedErrors() async throws {
        grantTokens()
        let client = try client()
        transport.on("/auth/usermigrationinfo") { _ in
            StubTransport.json(.badRequest, #"{"error":"invalid_request","error_description":"unknown sub"}"#)
        }
        await #expect(throws: AppleSignInError.invalidRequest) {
            try await client.exchangeTransferSub(AppleUserID("000999.unknown.1"), clientID: Self.bundleID)
        }
        transport.on("/auth/usermigrationinfo") { _ in StubTransport.json(.ok, #"{"email":"a@b.c"}"#) }
        await #expect(throws: AppleSignInError.unexpectedResponse, "an answer without sub") {
            try await client.exchangeTransferSub(AppleUserID("000999.tt.1"), clientID: Self.bundleID)
        }
        transport.on("/auth/usermigrationinfo") { _ in StubTransport.json(.ok, "{}") }
        await #expect(throws: AppleSignInError.unexpectedResponse, "an answer without transfer_sub") {
            try await client.transferSub(
                for: AppleUserID("1"),
                targetTeam: try TeamID("NEWTEAM456"),
                clientID: Self.bundleID
            )
        }
    }

    @Test func aRefusedGrantIsTyped() async throws {
        transport.on("/auth/token") { _ in StubTransport.json(.badRequest, #"{"error":"invalid_scope"}"#) }
        await #expect(throws: AppleSignInError.invalidScope) {
            try await client().migrationAccessToken(clientID: Self.bundleID)
        }
        transport.on("/auth/token") { _ in StubTransport.json(.badRequest, #"{"error":"invalid_client"}"#) }
        await #expect(throws: AppleSignInError.invalidClient) {
            try await client().transferSub(
                for: AppleUserID("1"),
                targetTeam: try TeamID("NEWTEAM456"),
                clientID: Self.bundleID
            )
        }
        #expect(transport.requests(to: "/auth/usermigrationinfo").isEmpty, "no migration call without a token")
    }

    @Test func aRefusedAccessTokenIsRenewedOnce() async throws {
        grantTokens()
        let calls = Atomic<Int>(0)
        transport.on("/auth/usermigrationinfo") { recorded in
            calls.add(1, ordering: .relaxed)
            guard recorded.request.headerFields[.authorization] == "Bearer m.2" else {
                return StubTransport.json(.unauthorized, #"{"error":"invalid_token"}"#)
            }
            return StubTransport.json(.ok, #"{"transfer_sub":"000999.tt.1111"}"#)
        }
        let client = try client()
        let transferSub = try await client.transferSub(
            for: AppleUserID("1"),
            targetTeam: try TeamID("NEWTEAM456"),
            clientID: Self.bundleID
        )
        #expect(transferSub == AppleUserID("000999.tt.1111"))
        #expect(transport.requests(to: "/auth/token").count == 2, "the refused token was replaced")

        // Refused every time: a typed error after one renewal.
        transport.on("/auth/usermigrationinfo") { _ in StubTransport.json(.unauthorized, #"{"error":"invalid_token"}"#)
        }
        await #expect(throws: AppleSignInError.unauthorizedClient) {
            try await client.exchangeTransferSub(AppleUserID("000999.tt.1111"), clientID: Self.bundleID)
        }
        #expect(transport.requests(to: "/auth/token").count == 3)
    }
}
