import AppleSignInClient
import Foundation
import Testing

/// Every `TokenStore` keeps and replaces contents the same way; the file store is private and atomic.
@Suite("Client: token stores")
struct TokenStoreTests {
    /// The implementations that run on Linux (the Keychain store needs Security).
    enum Kind: String, CaseIterable, Sendable {
        case memory
        case file
    }

    private static let sample = TokenStoreContents(
        tokens: SessionTokens(accessToken: "access-1", refreshToken: "refresh-1"),
        pendingProfiles: [
            FirstSignInProfile(
                appleUserID: "000123.abc",
                givenName: "Jane",
                familyName: "Appleseed",
                email: "jane@example.com"
            )
        ]
    )

    @Test(arguments: Kind.allCases)
    func storesReplacesAndClears(_ kind: Kind) throws {
        try withStore(kind) { store in
            #expect(try store.read() == .empty)
            try store.write(Self.sample)
            #expect(try store.read() == Self.sample)
            let rotated = TokenStoreContents(tokens: SessionTokens(accessToken: "access-2", refreshToken: "refresh-2"))
            try store.write(rotated)
            #expect(try store.read() == rotated)
            try store.write(.empty)
            #expect(try store.read() == .empty)
            try store.write(.empty)  // clearing twice is fine
        }
    }

    @Test func fileIsOwnerOnlyAndReplacedAtomically() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appending(path: "nested/session.json")
        let store = FileTokenStore(url: url)
        try store.write(Self.sample)
        #expect(try permissions(url) == 0o600)
        #expect(try permissions(url.deletingLastPathComponent()) == 0o700)

        // A file left world-readable by someone else is replaced by a new 0600 file, not rewritten in place.
        try Data("{}".utf8).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: url.path)
        try store.write(Self.sample)
        #expect(try permissions(url) == 0o600)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path) == [
                "session.json"
            ]
        )

        try store.write(.empty)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test func unreadableFileIsATokenStoreError() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appending(path: "session.json")
        try Data("not json".utf8).write(to: url)
        let error = try #require(throws: SiwaClientError.self) { try FileTokenStore(url: url).read() }
        #expect(error.code == .tokenStore)
    }

    @Test func fileSessionSurvivesANewClient() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appending(path: "session.json")
        try await ClientHarness.run { harness in
            let credential = try await harness.appleCredential("file@example.com", givenName: "Fay")
            let session = try await harness.client(tokenStore: FileTokenStore(url: url)).signIn(
                identityToken: credential.identityToken,
                authorizationCode: credential.authorizationCode,
                fullName: credential.fullName,
                email: credential.email,
                nonce: nil
            )
            #expect(try permissions(url) == 0o600)

            // The app restarts: a new client over a new store value on the same file.
            let relaunched = harness.client(tokenStore: FileTokenStore(url: url))
            #expect(try await relaunched.isSignedIn())
            let user = try await relaunched.currentUser()
            #expect(user.id == session.user.id)
            #expect(user.givenName == "Fay")
        }
    }

    @Test func tokensPrintRedacted() {
        let tokens = SessionTokens(accessToken: "secret-access", refreshToken: "secret-refresh")
        for text in ["\(tokens)", String(reflecting: tokens), "\(TokenStoreContents(tokens: tokens))"] {
            #expect(!text.contains("secret"))
        }
    }

    private func withStore(_ kind: Kind, _ body: (any TokenStore) throws -> Void) throws {
        switch kind {
        case .memory:
            try body(InMemoryTokenStore())
        case .file:
            let directory = temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            try body(FileTokenStore(url: directory.appending(path: "session.json")))
        }
    }

    private func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appending(path: "siwa-client-tests-\(UUID().uuidString)")
    }

    private func permissions(_ url: URL) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return try #require((attributes[.posixPermissions] as? NSNumber)?.intValue) & 0o777
    }
}
