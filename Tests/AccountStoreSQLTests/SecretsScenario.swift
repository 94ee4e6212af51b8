import AccountStore
import AccountStoreSQL
import AppleSignIn
import SiwaTesting
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Runs operations that succeed and fail with hashes, nonces and keys, and looks for them in the logs.
enum SecretsScenario {
    static func run(_ store: SQLAccountStore, recording: LogRecording, alsoAbsent: [String] = []) async throws {
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        let tokenHash: [UInt8] = (0..<32).map { UInt8(0xA0 &+ $0) }
        let nonceHash: [UInt8] = (0..<32).map { UInt8(0x30 &+ $0) }
        let key: [UInt8] = (0..<48).map { UInt8(0x60 &+ $0) }
        let appleToken: [UInt8] = (0..<40).map { UInt8(0x10 &+ $0) }

        let user = try await store.signIn(
            AppleSignInFacts(appleUserID: AppleUserID("001.secrets.1"), clientID: "com.example.app"),
            now: now
        ).user
        try await store.saveAppleToken(
            AppleTokenRecord(
                userID: user.id,
                clientID: "com.example.app",
                encryptedRefreshToken: appleToken,
                storedAt: now
            )
        )
        let token = RefreshTokenRecord(
            hash: tokenHash,
            sessionID: SessionID(),
            userID: user.id,
            issuedAt: now,
            expiresAt: now.addingTimeInterval(60)
        )
        try await store.createSession(firstToken: token, now: now)
        await #expect(throws: StoreError.duplicate) { try await store.createSession(firstToken: token, now: now) }
        await #expect(throws: StoreError.duplicate) {
            try await store.rotateRefreshToken(presentedHash: tokenHash, next: token, now: now)
        }
        try await store.saveServerNonce(hash: nonceHash, expiresAt: now.addingTimeInterval(60))
        await #expect(throws: StoreError.duplicate) {
            try await store.saveServerNonce(hash: nonceHash, expiresAt: now.addingTimeInterval(60))
        }
        let signingKey = SigningKeyRecord(kid: "logged-kid", sealedPrivateKey: key, createdAt: now)
        try await store.addSigningKey(signingKey)
        await #expect(throws: StoreError.duplicate) { try await store.addSigningKey(signingKey) }

        let log = recording.lines.joined(separator: "\n")
        let secrets = [tokenHash, nonceHash, key, appleToken].flatMap { bytes in
            [hex(bytes), Data(bytes).base64EncodedString(), "\(bytes)"]
        }
        for secret in secrets + alsoAbsent {
            #expect(!log.contains(secret), "the logs hold a secret")
        }
        #expect(!recording.lines.isEmpty, "the failures were logged")
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
    }
}
