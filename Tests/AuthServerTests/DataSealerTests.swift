import AccountStore
import AppleSignIn
import AuthServer
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import SiwaTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The data keys: the sealed format with its key id, data from before key ids, the key ring and its file, and
/// re-reading the file when sealed data names a key the ring lacks.
@Suite struct DataSealerTests {
    let old = SymmetricKey(size: .bits256)
    let new = SymmetricKey(size: .bits256)

    // MARK: The sealed format

    @Test func sealedDataNamesItsKeyAndOpens() throws {
        let sealer = DataSealer(keys: try DataKeyRing([new, old]), source: .setting("SIWA_DATA_KEY"))
        let plaintext = Array("an Apple refresh token".utf8)
        let sealed = try sealer.seal(plaintext)
        #expect(Array(sealed.prefix(5)) == Array("siwa".utf8) + [2], "magic and version")
        #expect(Array(sealed[5..<13]) == DataKeyID(of: new).bytes, "the sealing key's id")
        #expect(sealed.count == 13 + 12 + plaintext.count + 16, "header, nonce, ciphertext, tag")
        #expect(try sealer.open(sealed) == plaintext)
        #expect(sealer.sealingKey(of: sealed) == .named(DataKeyID(of: new)))
        #expect(try sealer.seal(plaintext) != sealed, "a new nonce each time")

        // A ring that has the key in second place opens it too.
        let later = DataSealer(keys: try DataKeyRing([SymmetricKey(size: .bits256), new]), source: .setting("X"))
        #expect(try later.open(sealed) == plaintext)
    }

    /// What siwa 0.3 wrote (AES-GCM's combined box, no header) opens under whichever key of the ring sealed it.
    @Test func dataFromBeforeKeyIDsOpensUnderTheRingsKeys() throws {
        let plaintext = Array("sealed by siwa 0.3".utf8)
        let legacy = Array(try #require(try AES.GCM.seal(plaintext, using: old).combined))
        let sealer = DataSealer(keys: try DataKeyRing([new, old]), source: .setting("SIWA_DATA_KEY"))
        #expect(try sealer.open(legacy) == plaintext)
        #expect(sealer.sealingKey(of: legacy) == .unnamed(DataKeyID(of: old)))

        let stranger = DataSealer(key: SymmetricKey(size: .bits256))
        #expect(throws: DataSealer.Failure.self) { try stranger.open(legacy) }
        #expect(stranger.sealingKey(of: legacy) == .unnamed(nil))
    }

    @Test func dataUnderAKeyTheRingLacksFailsNamingTheKeyID() throws {
        let sealed = try DataSealer(key: new).seal(Array("secret".utf8))
        let sealer = DataSealer(keys: DataKeyRing(key: old), source: .setting("SIWA_DATA_KEY"))
        let failure = try #require(throws: DataSealer.Failure.self) { try sealer.open(sealed) }
        #expect(failure.code == .unknownKey)
        #expect(failure.keyID == DataKeyID(of: new))
        #expect(failure.reason.contains("data key \(DataKeyID(of: new))"), "\(failure.reason)")
        #expect(failure.reason.contains("restart with SIWA_DATA_KEY listing that key"), "\(failure.reason)")
        for key in [old, new] {
            let base64 = key.withUnsafeBytes { Data($0).base64EncodedString() }
            #expect(!failure.reason.contains(base64), "no key material in the reason")
        }
    }

    @Test func changedHeaderOrDataDoesNotOpen() throws {
        let sealer = DataSealer(keys: try DataKeyRing([new, old]), source: .setting("SIWA_DATA_KEY"))
        let sealed = try sealer.seal(Array("secret".utf8))

        // The header names the other key of the ring: authenticated, so it fails rather than opening under it.
        var otherKey = sealed
        otherKey.replaceSubrange(5..<13, with: DataKeyID(of: old).bytes)
        let named = try #require(throws: DataSealer.Failure.self) { try sealer.open(otherKey) }
        #expect(named.code == .notOpened && named.keyID == DataKeyID(of: old))

        var version = sealed
        version[4] = 3
        #expect(throws: DataSealer.Failure.self) { try sealer.open(version) }
        var magic = sealed
        magic[0] ^= 0x20
        #expect(throws: DataSealer.Failure.self) { try sealer.open(magic) }
        var body = sealed
        body[body.count - 20] ^= 1
        let changed = try #require(throws: DataSealer.Failure.self) { try sealer.open(body) }
        #expect(changed.code == .notOpened)
        #expect(changed.reason.contains("changed or damaged"))
        #expect(throws: DataSealer.Failure.self) { try sealer.open(Array(sealed.prefix(20))) }
    }

    // MARK: The ring

    @Test func keyIDsAreDerivedFromTheKeyAndPrintedAsHex() throws {
        let id = DataKeyID(of: new)
        #expect(id.bytes.count == 8)
        #expect(id.description.count == 16)
        #expect(id.description == id.description.lowercased())
        #expect(DataKeyID(id.description) == id)
        #expect(DataKeyID(id.description.uppercased()) == id)
        #expect(DataKeyID(of: SymmetricKey(data: new.withUnsafeBytes { Data($0) })) == id, "the same key, the same id")
        #expect(id != DataKeyID(of: old))
        #expect(DataKeyID("0123") == nil && DataKeyID("0123456789abcdeg") == nil)
    }

    @Test func aKeyFileHoldsOneKeyALineWithComments() throws {
        // siwa 0.3's file: one key and a newline.
        let one = try DataKeyRing.parse(file: Self.base64(old) + "\n")
        #expect(one.ids == [DataKeyID(of: old)])

        let text = """
            # rotated on Monday

            \(Self.base64(new))
              # the old one
            \(Self.base64(old))\r

            """
        let two = try DataKeyRing.parse(file: text)
        #expect(two.ids == [DataKeyID(of: new), DataKeyID(of: old)])
        #expect(two.primary.id == DataKeyID(of: new))
        #expect(try DataKeyRing.parse(file: two.fileText).ids == two.ids, "what siwa writes, it reads")
        #expect(!"\(two)".contains(Self.base64(new)), "a ring prints its ids only")

        let bad = try #require(throws: DataKeyRing.Malformed.self) {
            try DataKeyRing.parse(file: "# keys\n\(Self.base64(new))\nnot a key\n")
        }
        #expect(bad.position == "line 3")
        #expect(!bad.description.contains("not a key"), "the value is not echoed")
        let twice = try #require(throws: DataKeyRing.Malformed.self) {
            try DataKeyRing.parse(file: "\(Self.base64(new))\n\(Self.base64(new))\n")
        }
        #expect(twice.description == "line 2: the same key as line 1")
        let empty = try #require(throws: DataKeyRing.Malformed.self) { try DataKeyRing.parse(file: "# nothing\n") }
        #expect(empty.description == "holds no key")
        let short = try #require(throws: DataKeyRing.Malformed.self) {
            try DataKeyRing.parse(file: Data(repeating: 1, count: 16).base64EncodedString())
        }
        #expect(short.position == "line 1")
    }

    /// One key of a ring, written alone, is a key file of that key; added to the end of another key file, it joins
    /// that ring as a key that only opens.
    @Test func aKeyWrittenAloneJoinsAnotherRingWhenAppended() throws {
        let ring = try DataKeyRing([new, old])
        let text = try #require(ring.keyFileText(of: DataKeyID(of: old), comments: ["retired", "keep it"]))
        #expect(text.hasPrefix("# retired\n# keep it\n"), "\(text)")
        #expect(try DataKeyRing.parse(file: text).ids == [DataKeyID(of: old)])
        let other = DataKeyRing(key: SymmetricKey(size: .bits256))
        #expect(try DataKeyRing.parse(file: other.fileText + text).ids == other.ids + [DataKeyID(of: old)])
        #expect(ring.keyFileText(of: DataKeyID(of: SymmetricKey(size: .bits256)), comments: []) == nil)
    }

    @Test func aListHoldsKeysSeparatedByCommas() throws {
        let ring = try DataKeyRing.parse(list: "\(Self.base64(new)), \(Self.base64(old))")
        #expect(ring.ids == [DataKeyID(of: new), DataKeyID(of: old)])
        #expect(try DataKeyRing.parse(list: ring.listText).ids == ring.ids)
        let bad = try #require(throws: DataKeyRing.Malformed.self) {
            try DataKeyRing.parse(list: "\(Self.base64(new)),oops")
        }
        #expect(bad.description.hasPrefix("entry 2: "))
        let added = try ring.adding(SymmetricKey(size: .bits256))
        #expect(Array(added.ids.dropFirst()) == ring.ids, "a new key goes first")
        #expect(added.removing(added.primary.id) == nil, "the sealing key is never removed")
        #expect(added.removing(DataKeyID(of: old))?.ids == Array(added.ids.prefix(2)))
    }

    // MARK: Re-reading the key file

    /// A rotation while the server runs: another process adds a key to the file and seals under it; the server's
    /// sealer re-reads the file when it meets the new key's id, opens the data, and seals under the new key after.
    @Test func dataUnderAKeyAddedToTheFileOpensAfterARereading() throws {
        let keyFile = try KeyFile(holding: old)
        let (file, server) = (keyFile.path, keyFile.sealer)

        let rotated = try DataKeyRing([new, old])
        let sealed = try DataSealer(keys: rotated, source: .setting("test")).seal(Array("secret".utf8))
        try Self.write(rotated, to: file)
        #expect(try server.open(sealed) == Array("secret".utf8))
        #expect(server.keys.primary.id == DataKeyID(of: new), "the new key seals from now on")
        #expect(server.sealingKey(of: try server.seal([1])) == .named(DataKeyID(of: new)))
    }

    /// Misses re-read the file at most once every ``DataSealer/reloadInterval``.
    @Test func missesRereadTheFileAtMostOnceInAWhile() throws {
        let keyFile = try KeyFile(holding: old)
        let (file, clock, server) = (keyFile.path, keyFile.clock, keyFile.sealer)
        let sealed = try DataSealer(key: new).seal(Array("secret".utf8))

        let missing = try #require(throws: DataSealer.Failure.self) { try server.open(sealed) }
        #expect(missing.code == .unknownKey)
        #expect(missing.reason.contains("put that key back in \(file)"), "\(missing.reason)")

        try Self.write(try DataKeyRing([new, old]), to: file)
        #expect(throws: DataSealer.Failure.self, "re-read a moment ago: not again yet") { try server.open(sealed) }
        clock.advance(by: DataSealer.reloadInterval)
        #expect(try server.open(sealed) == Array("secret".utf8))
    }

    @Test func keysFromASettingAreNeverReread() throws {
        let sealer = DataSealer(keys: DataKeyRing(key: old), source: .setting("SIWA_DATA_KEY"))
        #expect(try sealer.reload(force: true) == false)
    }

    /// The reloader's check: a changed file is read (and a broken one keeps the keys read before); an unchanged one is
    /// not read at all.
    @Test func aChangedKeyFileIsReadAgain() throws {
        let keyFile = try KeyFile(holding: old)
        let (file, sealer) = (keyFile.path, keyFile.sealer)
        #expect(try sealer.reload() == false, "unchanged")

        try Self.write(try DataKeyRing([new, old]), to: file)
        #expect(try sealer.reload() == true)
        #expect(sealer.keys.ids == [DataKeyID(of: new), DataKeyID(of: old)])

        try "not a key\n".write(toFile: file, atomically: true, encoding: .utf8)
        let broken = try #require(throws: DataSealer.Failure.self) { try sealer.reload() }
        #expect(broken.code == .keyFileUnreadable)
        #expect(broken.reason.contains("line 1"))
        #expect(sealer.keys.ids == [DataKeyID(of: new), DataKeyID(of: old)], "the keys read before stay")
        #expect(try sealer.reload() == false, "a broken file is reported once, not at every check")
    }

    /// A running server whose key file gains a key (a rotation by `siwa keys rotate-data-key` elsewhere) opens a
    /// signing key sealed under it the first time it meets one, before its next look at the file (its own re-read is
    /// an hour away). No time limit of its own: alone it takes under a second, but among the whole suite's tests on two
    /// cores its server's refresher got its turn only after 60 to 110 s; a hang is the test command's watchdog's.
    @Test func aRunningServerRereadsItsKeyFileWhenItMeetsANewKey() async throws {
        let keyFile = try KeyFile(holding: old)
        let (file, sealer) = (keyFile.path, keyFile.sealer)
        let store = InMemoryAccountStore()
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(50))
        configuration.dataKeyReloadInterval = .seconds(3_600)
        let app = try await buildApplication(
            configuration: configuration,
            apple: try AppleSignInConfiguration(bundleIDs: ["com.example.app"]),
            store: store,
            transport: StubTransport(),
            sealer: sealer,
            port: 0,
            logger: Self.quiet
        )
        try await app.test(.live) { client in
            let rotated = try DataKeyRing([new, old])
            try Self.write(rotated, to: file)
            let signingKey = Array(P256.Signing.PrivateKey().rawRepresentation)
            try await store.addSigningKey(
                SigningKeyRecord(
                    kid: "rotated",
                    sealedPrivateKey: try DataSealer(keys: rotated, source: .setting("test")).seal(signingKey),
                    createdAt: Date()
                )
            )
            // The store refresher opens the new signing key: the sealer re-reads the file for its key id. Each look
            // is a request of its own, and a failed one is looked again: on a loaded machine the test's turns come
            // seldom, and a kept-alive connection would meet the server's head deadline between them.
            let port = try #require(client.port)
            let keySet = try #require(URL(string: "http://127.0.0.1:\(port)/.well-known/jwks.json"))
            while true {
                if let (data, _) = try? await URLSession.shared.data(from: keySet),
                    String(decoding: data, as: UTF8.self).contains("\"rotated\"")
                {
                    break
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(sealer.keys.ids == rotated.ids)
        }
    }

    // MARK: Re-sealing

    /// Items under an older key or from before key ids are sealed again under the sealing key; a second pass has
    /// nothing left to do; the census counts by key.
    @Test func resealingMovesEveryItemUnderTheSealingKey() async throws {
        let store = InMemoryAccountStore()
        let before = DataSealer(key: old)
        try await store.addSigningKey(
            SigningKeyRecord(kid: "k1", sealedPrivateKey: try before.seal([1, 2, 3]), createdAt: Date())
        )
        var tokens: [UserID: String] = [:]
        for index in 0..<5 {
            let user = try await store.signIn(
                AppleSignInFacts(appleUserID: AppleUserID("001234.user\(index).1234"), clientID: "com.example.app"),
                now: Date()
            ).user
            let token = "apple-refresh-\(index)"
            let sealed =
                index.isMultiple(of: 2)
                ? Array(try #require(try AES.GCM.seal(Array(token.utf8), using: old).combined))
                : try before.seal(Array(token.utf8))
            try await store.saveAppleToken(
                AppleTokenRecord(
                    userID: user.id,
                    clientID: "com.example.app",
                    encryptedRefreshToken: sealed,
                    storedAt: Date()
                )
            )
            tokens[user.id] = token
        }
        let sealer = DataSealer(keys: try DataKeyRing([new, old]), source: .setting("test"))
        let resealer = DataResealer(store: store, sealer: sealer)
        var census = try await resealer.census()
        #expect(census.total == 6)
        #expect(census.count(DataKeyID(of: old)) == 6)
        #expect(census.withoutKeyID[DataKeyID(of: old)] == 3)

        var batches = 0
        let pass = try await resealer.reseal(batchSize: 2) { _ in batches += 1 }
        #expect(pass.resealed == 6 && pass.current == 0 && pass.failed == 0 && pass.changedMeanwhile == 0)
        #expect(batches == 3)
        census = try await resealer.census()
        #expect(census.count(DataKeyID(of: new)) == 6 && census.count(DataKeyID(of: old)) == 0)
        #expect(census.withoutKeyID.isEmpty)
        for (userID, token) in tokens {
            let stored = try #require(await store.appleToken(userID: userID))
            #expect(try DataSealer(key: new).open(stored.encryptedRefreshToken) == Array(token.utf8))
        }
        let again = try await resealer.reseal(batchSize: 2)
        #expect(again.resealed == 0 && again.current == 6)

        // An item under a key the ring lacks is counted and reported, not lost.
        let lost = SymmetricKey(size: .bits256)
        try await store.addSigningKey(
            SigningKeyRecord(kid: "k2", sealedPrivateKey: try DataSealer(key: lost).seal([9]), createdAt: Date())
        )
        census = try await resealer.census()
        #expect(census.byMissingKey == [DataKeyID(of: lost): 1])
        let failing = try await resealer.reseal(batchSize: 10)
        #expect(failing.failed == 1)
        #expect(failing.failures.keys.first?.contains("\(DataKeyID(of: lost))") == true)
    }

    // MARK: Helpers

    private static let quiet = {
        var logger = Logger(label: "siwa-data-keys-test")
        logger.logLevel = .critical
        return logger
    }()

    private static func base64(_ key: SymmetricKey) -> String { key.withUnsafeBytes { Data($0).base64EncodedString() } }

    private static func write(_ ring: DataKeyRing, to file: String) throws {
        try ring.fileText.write(toFile: file, atomically: true, encoding: .utf8)
    }

    /// A key file holding one key, in a folder of its own (removed when the test ends), and a sealer reading it as a
    /// server started on it does.
    private final class KeyFile {
        let folder: URL
        let path: String
        let clock = ManualWallClock(unixTime: 1_000_000)
        let sealer: DataSealer

        init(holding key: SymmetricKey) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-keys-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            path = folder.appendingPathComponent("siwa-data.key").path
            try DataSealerTests.write(DataKeyRing(key: key), to: path)
            sealer = DataSealer(
                keys: DataKeyRing(key: key),
                source: .file(path),
                clock: clock,
                logger: DataSealerTests.quiet
            )
        }

        deinit { try? FileManager.default.removeItem(at: folder) }
    }
}
