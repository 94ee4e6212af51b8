import AppleSignInClient
import Foundation
import Testing

/// Apple's first-time name and email survive a failed first sign-in and reach the server on the next one.
@Suite("Client: first sign-in profile")
struct FirstSignInProfileTests {
    /// How the first attempt fails.
    enum FirstAttempt: String, CaseIterable, Sendable {
        /// The server answers 503.
        case serviceUnavailable
        /// Nothing listens on the port.
        case connectionRefused
    }

    @Test(arguments: FirstAttempt.allCases)
    func nameIsSentAgainAfterAFailedFirstAttempt(_ failure: FirstAttempt) async throws {
        try await ClientHarness.run { harness in
            let store = InMemoryTokenStore()
            let first = try await harness.appleCredential("jane@example.com", givenName: "Jane")
            #expect(first.fullName?.givenName == "Jane")

            let error = try await #require(throws: SiwaClientError.self) {
                try await failingClient(failure, harness, store).signIn(first)
            }
            switch failure {
            case .serviceUnavailable:
                #expect(error.code == .server)
                #expect(error.status == 503)
                #expect(error.serverCode == "unavailable")
                #expect(error.serverMessage == "the service is briefly unavailable")
            case .connectionRefused:
                #expect(error.code == .transport)
            }
            let pending = try #require(store.read().pendingProfile(appleUserID: first.user))
            #expect(pending.givenName == "Jane")
            #expect(pending.familyName == "Appleseed")
            #expect(pending.email == "jane@example.com")
            #expect(pending.appleUserID == first.user)

            // Apple does not give the name again; the client sends the one it kept.
            let second = try await harness.appleCredential("jane@example.com")
            #expect(second.fullName == nil)
            let session = try await harness.client(tokenStore: store).signIn(second)
            #expect(session.isNewUser)
            #expect(session.user.givenName == "Jane")
            #expect(session.user.familyName == "Appleseed")
            #expect(store.read().pendingProfiles.isEmpty)
        }
    }

    @Test func keptNameGoesOnlyToTheSameAppleID() async throws {
        try await ClientHarness.run { harness in
            let store = InMemoryTokenStore()
            let transport = RecordingTransport()
            await transport.log.fail("/auth/apple/native", status: 503)
            let client = harness.client(tokenStore: store, transport: transport)
            let jane = try await harness.appleCredential("jane@example.com", givenName: "Jane")
            await #expect(throws: SiwaClientError.self) { try await client.signIn(jane) }

            // Someone else signs in for the first time on the same device (Apple gives John's email, no name):
            // Jane's name is not his, and stays kept for her.
            let johnCredential = try await harness.appleCredential("john@example.com")
            #expect(johnCredential.email == "john@example.com")
            let john = try await client.signIn(johnCredential)
            #expect(john.user.givenName == nil)
            #expect(store.read().pendingProfiles.map(\.givenName) == ["Jane"])

            let janeAgain = try await client.signIn(try await harness.appleCredential("jane@example.com"))
            #expect(janeAgain.user.givenName == "Jane")
            #expect(store.read().pendingProfiles.isEmpty)
        }
    }

    @Test func atMostEightProfilesAreKeptAndTheOldestGoesFirst() async throws {
        let store = InMemoryTokenStore()
        let transport = RecordingTransport()
        await transport.log.fail("/auth/apple/native", status: 503, count: 9)
        let client = SiwaClient(
            baseURL: try #require(URL(string: "http://127.0.0.1:1")),
            tokenStore: store,
            transport: transport
        )
        for index in 1...9 {
            var name = PersonNameComponents()
            name.givenName = "Person \(index)"
            await #expect(throws: SiwaClientError.self) {
                try await client.signIn(
                    identityToken: unsignedToken(subject: "apple-user-\(index)"),
                    authorizationCode: nil,
                    fullName: name,
                    email: nil,
                    nonce: nil
                )
            }
        }
        let kept = store.read().pendingProfiles
        #expect(kept.count == TokenStoreContents.maximumPendingProfiles)
        #expect(kept.map(\.appleUserID) == (2...9).map { "apple-user-\($0)" })
        #expect(kept.last?.givenName == "Person 9")
    }

    /// A JWT-shaped token whose payload names `subject` (the client reads `sub` without verifying).
    private func unsignedToken(subject: String) -> String {
        let payload = Data(#"{"sub":"\#(subject)"}"#.utf8).base64EncodedString()
            .replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
        return "eyJhbGciOiJub25lIn0.\(payload).c2ln"
    }

    private func failingClient(
        _ failure: FirstAttempt,
        _ harness: ClientHarness,
        _ store: InMemoryTokenStore
    )
        async throws -> SiwaClient
    {
        switch failure {
        case .serviceUnavailable:
            let transport = RecordingTransport()
            await transport.log.fail("/auth/apple/native", status: 503)
            return harness.client(tokenStore: store, transport: transport)
        case .connectionRefused:
            return SiwaClient(
                baseURL: try #require(URL(string: "http://127.0.0.1:1")),
                tokenStore: store,
                transport: RecordingTransport()
            )
        }
    }
}
