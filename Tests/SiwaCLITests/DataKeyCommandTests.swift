import AccountStore
import AccountStoreSQL
import AppleSignIn
import AuthServer
import Crypto
import Foundation
import SiwaTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `siwa keys rotate-data-key`, `data-keys` and `retire-data-key` as subprocesses on a SQLite file holding data sealed
/// the way siwa 0.3 sealed it (no key id) and the way 0.4 does; and a running `siwa serve` that meets a new key.
@Suite("siwa keys: data keys")
struct DataKeyCommandTests {
    let folder: TemporaryFolder
    let keyFile: String
    let environment: [String: String]

    init() throws {
        folder = try TemporaryFolder("siwa-data-keys")
        keyFile = folder.url.appendingPathComponent("siwa-data.key").path
        environment = [
            "SIWA_DATABASE_PATH": folder.url.appendingPathComponent("siwa.sqlite").path,
            "SIWA_DATA_KEY_FILE": keyFile,
            "SIWA_BUNDLE_IDS": "com.example.app",
        ]
    }

    /// The operator's path: count, add a key without re-sealing, see the retirement refused, re-seal, retire, and
    /// start the server on the new key alone.
    @Test func rotationResealsEverythingAndTheOldKeyRetiresOnceNothingUsesIt() async throws {
        #expect(try await siwa(["migrate"]).status == 0)
        let first = try #require(try DataKeyRing.read(file: keyFile)).primary.id
        let seeded = try await seedSealedData(under: try sealingKeyInFile())
        let total = seeded.count

        var report = try await json(["keys", "data-keys", "--json"])
        let keys = try #require(report["keys"] as? [[String: Any]])
        #expect(keys.count == 1 && keys.first?["id"] as? String == first.description)
        #expect(keys.first?["items"] as? Int == total)
        #expect(keys.first?["withoutKeyID"] as? Int == seeded.legacyCount)
        #expect(report["toReseal"] as? Int == seeded.legacyCount, "data from before key ids is re-sealed too")

        let sealing = try await siwa(["keys", "retire-data-key", first.description])
        #expect(sealing.status == 1 && sealing.stderr.contains("seals, so it cannot be retired"), "\(sealing.stderr)")
        let unconfirmed = try await siwa(["keys", "rotate-data-key"])
        #expect(unconfirmed.status == 2 && unconfirmed.stderr.contains("pass --yes"), "\(unconfirmed.stderr)")
        #expect(try keyRing().ids == [first], "nothing added without --yes")

        let added = try await json(["keys", "rotate-data-key", "--yes", "--no-reseal", "--json"])
        let second = try #require((added["addedKey"] as? String).flatMap(DataKeyID.init))
        #expect(try keyRing().ids == [second, first], "the new key first, the old one after it")
        #expect(try mode(keyFile) == 0o600)

        let refused = try await siwa(["keys", "retire-data-key", first.description])
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains("\(total) item(s) are still sealed under data key \(first)"),
            "\(refused.stderr)"
        )
        #expect(refused.stderr.contains("rotate-data-key --resume"))

        let resealed = try await json(["keys", "rotate-data-key", "--resume", "--batch-size", "2", "--json"])
        #expect(resealed["complete"] as? Bool == true)
        #expect(resealed["resealed"] as? Int == total)
        #expect(resealed["addedKey"] == nil)
        try await expectEverything(of: seeded, sealedUnder: second, opensWith: DataKeyRing(key: try sealingKeyInFile()))

        report = try await json(["keys", "data-keys", "--json"])
        let counted = try #require(report["keys"] as? [[String: Any]])
        #expect(counted.map { $0["items"] as? Int } == [total, 0])
        #expect(counted.map { $0["retirable"] as? Bool } == [false, true])

        let retired = try await siwa(["keys", "retire-data-key", first.description])
        #expect(retired.status == 0, "\(retired.stderr)")
        #expect(try keyRing().ids == [second])
        #expect(try mode(keyFile) == 0o600)

        // The server starts on the new key alone and opens both signing keys (its key set lists them). Their sealed
        // bytes hold no RSA companion, so it also stores a key that has one, for ID tokens.
        let kids = try await withServer { port, _ in try await jwksKids(port) }
        #expect(kids.isSuperset(of: seeded.signingKeyIDs), "\(kids)")
        #expect(kids.count == seeded.signingKeyIDs.count + 1, "\(kids)")
    }

    /// The state an interrupted rotation leaves (the new key in the file, the first items re-sealed under it, the rest
    /// under the old key): every item opens with the file's keys, and `--resume` re-seals the rest and only the rest.
    /// Then a server that has not re-read the file yet seals an Apple token under the old key: the old key cannot be
    /// retired until `--resume` has run again.
    @Test func anInterruptedRotationResumes() async throws {
        #expect(try await siwa(["migrate"]).status == 0)
        let first = try sealingKeyInFile()
        let seeded = try await seedSealedData(under: first, users: 20)
        let added = try await json(["keys", "rotate-data-key", "--yes", "--no-reseal", "--json"])
        let second = try sealingKeyInFile()
        #expect(added["addedKey"] as? String == DataKeyID(of: second).description)

        // What the killed command had done: the first half of the walk, item by item.
        let ring = try keyRing()
        let sealer = DataSealer(keys: ring, source: .file(keyFile))
        let done = seeded.count / 2
        try await withSQLiteStore(at: environment["SIWA_DATABASE_PATH"]!) { store in
            for item in try await store.sealedItems(after: nil, limit: done) {
                #expect(try await store.replaceSealed(item, with: try sealer.seal(try sealer.open(item.sealed))))
            }
            for item in try await store.sealedItems(after: nil, limit: 1_000) {
                #expect(throws: Never.self, "\(item.kind) \(item.id) opens") { try sealer.open(item.sealed) }
            }
        }

        let resumed = try await json(["keys", "rotate-data-key", "--resume", "--batch-size", "3", "--json"])
        #expect(resumed["complete"] as? Bool == true)
        #expect(resumed["addedKey"] == nil)
        #expect(resumed["alreadySealed"] as? Int == done, "what was done before is not redone")
        #expect(resumed["resealed"] as? Int == seeded.count - done)
        #expect(try keyRing().ids == ring.ids, "resuming adds no key")
        try await expectEverything(of: seeded, sealedUnder: DataKeyID(of: second), opensWith: DataKeyRing(key: second))

        // A server still on the old keys seals a new Apple token under the old key.
        let late = try await storeAppleToken(of: "001234.late.1234", "late", sealedUnder: first)
        let report = try await json(["keys", "data-keys", "--json"])
        #expect(report["toReseal"] as? Int == 1)
        #expect((report["keys"] as? [[String: Any]])?.last?["retirable"] as? Bool == false)
        let refused = try await siwa(["keys", "retire-data-key", DataKeyID(of: first).description])
        #expect(refused.status == 1 && refused.stderr.contains("1 item(s) are still sealed"), "\(refused.stderr)")
        let again = try await json(["keys", "rotate-data-key", "--resume", "--json"])
        #expect(again["resealed"] as? Int == 1)
        #expect(try await siwa(["keys", "retire-data-key", DataKeyID(of: first).description]).status == 0)
        let token = try await withSQLiteStore(at: environment["SIWA_DATABASE_PATH"]!) { store in
            try await store.appleToken(userID: late)
        }
        #expect(try DataSealer(key: second).open(try #require(token).encryptedRefreshToken) == Array("late".utf8))
    }

    /// With the keys in `SIWA_DATA_KEY`, the command prints the new value and re-seals only once it is set.
    @Test func withTheKeysInTheVariableTheOperatorSetsTheNewValue() async throws {
        let old = SymmetricKey(size: .bits256)
        var environment = self.environment
        environment["SIWA_DATA_KEY"] = old.withUnsafeBytes { Data($0).base64EncodedString() }
        #expect(try await siwa(["migrate"], environment).status == 0)
        #expect(!FileManager.default.fileExists(atPath: keyFile), "no key file with SIWA_DATA_KEY set")
        let seeded = try await seedSealedData(under: old)

        let printed = try await json(["keys", "rotate-data-key", "--json"], environment)
        let value = try #require(printed["dataKey"] as? String)
        let ring = try DataKeyRing.parse(list: value)
        #expect(ring.ids.last == DataKeyID(of: old) && ring.ids.count == 2)
        #expect(printed["resealed"] as? Int == 0, "nothing is re-sealed before the instances have the new value")
        let text = try await siwa(["keys", "rotate-data-key"], environment)
        #expect(text.stdout.contains("Set SIWA_DATA_KEY on every instance"), "\(text.stdout)")
        try await expectEverything(of: seeded, sealedUnder: DataKeyID(of: old), opensWith: ring, named: false)

        environment["SIWA_DATA_KEY"] = value
        let resumed = try await json(["keys", "rotate-data-key", "--resume", "--json"], environment)
        #expect(resumed["complete"] as? Bool == true && resumed["resealed"] as? Int == seeded.count)
        #expect(resumed["dataKey"] == nil, "the keys are printed only when a key was added")
        try await expectEverything(
            of: seeded,
            sealedUnder: ring.primary.id,
            opensWith: try DataKeyRing.parse(list: String(value.split(separator: ",")[0]))
        )

        let retire = try await siwa(["keys", "retire-data-key", DataKeyID(of: old).description], environment)
        #expect(retire.status == 0)
        #expect(retire.stdout.contains("remove entry 2 of SIWA_DATA_KEY"), "\(retire.stdout)")
    }

    /// A server running on the old key file meets a signing key sealed under a key added to the file after it started:
    /// it re-reads the file and opens it. No time limit of its own: alone it takes seconds, but beside a cold build on
    /// two cores it went past two minutes; a hang is the test command's watchdog's.
    @Test func aRunningServerPicksUpAKeyAddedToItsKeyFile() async throws {
        #expect(try await siwa(["migrate"]).status == 0)
        try await withServer { port, log in
            let before = try await jwksKids(port)
            #expect(before.count == 1)
            let rotated = try await siwa(["keys", "rotate-data-key", "--yes"])
            #expect(rotated.status == 0, "\(rotated.stderr)")
            let signing = try await siwa(["keys", "rotate", "--json"])
            let answer = try JSONSerialization.jsonObject(with: Data(signing.stdout.utf8)) as? [String: Any]
            let kid = try #require(answer?["currentKey"] as? String)
            // The server reads the new signing key from the store within seconds; it is sealed under the new data key.
            var kids = before
            while !kids.contains(kid) {
                try await Task.sleep(for: .milliseconds(200))
                kids = try await jwksKids(port)
            }
            #expect(kids == before.union([kid]))
            let text = try String(contentsOfFile: log, encoding: .utf8)
            #expect(text.contains("re-read the data keys"), "\(text)")
            #expect(!text.contains(try keyRing().listText.split(separator: ",")[0]), "no key material in the log")
        }
    }

    @Test func doctorNamesAMalformedKeyOfTheRing() async throws {
        let good = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
        _ = try folder.write("siwa-data.key", "# keys\n\(good)\nnot a key\n")
        let file = try await siwa(["doctor"])
        #expect(file.stdout.contains("✗ SIWA_DATA_KEY_FILE: \(keyFile) line 3:"), "\(file.stdout)")
        var environment = self.environment
        environment["SIWA_DATA_KEY"] = "\(good),short"
        let variable = try await siwa(["doctor"], environment)
        #expect(variable.stdout.contains("✗ SIWA_DATA_KEY: entry 2:"), "\(variable.stdout)")
        #expect(!variable.stdout.contains(good), "the keys are not printed")
    }

    /// Retiring writes the key to a file of its own (0600, in a folder 0700, named by its id and the date) before the
    /// key file loses it, and says that database backups from before the retirement need that file.
    @Test func retiringKeepsTheKeyInAFileOfItsOwn() async throws {
        #expect(try await siwa(["migrate"]).status == 0)
        let oldKey = try sealingKeyInFile()
        let old = DataKeyID(of: oldKey)
        _ = try await seedSealedData(under: oldKey, users: 2)
        _ = try await json(["keys", "rotate-data-key", "--yes", "--json"])

        let retired = try await siwa(["keys", "retire-data-key", old.description])
        #expect(retired.status == 0, "\(retired.stderr)")
        let folder = self.folder.url.appendingPathComponent("retired-data-keys").path
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        try #require(names.count == 1, "\(names)")
        let name = names[0]
        let day = String(name.dropFirst(old.description.count + 1).prefix(10))
        #expect(name == "\(old)-\(day).key" && day.count == 10 && day.split(separator: "-").count == 3, "\(name)")
        let kept = folder + "/" + name
        #expect(try mode(folder) == 0o700)
        #expect(try mode(kept) == 0o600)
        #expect(try DataKeyRing.read(file: kept)?.ids == [old], "the kept file is a key file of the retired key")
        #expect(try keyRing().key(old) == nil)
        #expect(retired.stdout.contains("retired data key \(old) from \(keyFile)"), "\(retired.stdout)")
        #expect(
            retired.stdout.contains("kept it in \(kept) (0600): a backup of the database taken before \(day)T"),
            "\(retired.stdout)"
        )
        let base64 = oldKey.withUnsafeBytes { Data($0).base64EncodedString() }
        #expect(!retired.stdout.contains(base64) && !retired.stderr.contains(base64), "no key material printed")

        // Added to the end of the key file, the kept file puts the key back as one that only opens.
        let sealing = try keyRing().primary.id
        let handle = try #require(FileHandle(forWritingAtPath: keyFile))
        try handle.seekToEnd()
        try handle.write(contentsOf: try Data(contentsOf: URL(fileURLWithPath: kept)))
        try handle.close()
        #expect(try keyRing().ids == [sealing, old])
    }

    /// When the key cannot be kept, the key stays in the key file, unless the operator says to forget it.
    @Test func retiringRefusesWhenTheKeyCannotBeKeptUnlessTold() async throws {
        #expect(try await siwa(["migrate"]).status == 0)
        let old = try keyRing().primary.id
        _ = try await json(["keys", "rotate-data-key", "--yes", "--json"])
        // A file where the folder of kept keys belongs.
        _ = try folder.write("retired-data-keys", "not a folder")

        let refused = try await siwa(["keys", "retire-data-key", old.description])
        #expect(refused.status == 2, "\(refused.stdout)")
        #expect(refused.stderr.contains("cannot keep a copy of data key \(old)"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--forget"), "\(refused.stderr)")
        #expect(try keyRing().key(old) != nil, "the key stays")

        let forgotten = try await siwa(["keys", "retire-data-key", old.description, "--forget"])
        #expect(forgotten.status == 0, "\(forgotten.stderr)")
        #expect(forgotten.stdout.contains("kept no copy of it (--forget)"), "\(forgotten.stdout)")
        #expect(try keyRing().key(old) == nil)
    }

    /// A database holding data sealed under a key the ring lacks (one restored from before the key's retirement) is a
    /// problem for doctor, which names the key and the kept copy to restore; with a signing key under it, serve would
    /// refuse to start, and doctor exits 1.
    @Test func doctorCallsDataUnderAKeyTheRingLacksAProblem() async throws {
        #expect(try await siwa(["migrate"]).status == 0)
        #expect(try await doctorOnSealedData().findings.map(\.message) == ["the database holds no sealed data yet"])

        let missing = SymmetricKey(size: .bits256)
        let id = DataKeyID(of: missing)
        _ = try await storeAppleToken(of: "001234.restored.1234", "restored", sealedUnder: missing)
        var doctor = try await doctorOnSealedData()
        #expect(!doctor.serveRefuses, "an Apple token that does not open does not stop serve")
        #expect(doctor.findings.map(\.ok) == [false])
        #expect(
            doctor.findings.first?.message.hasPrefix(
                "the database holds 1 item(s) sealed under data key \(id), which \(keyFile) lacks: add that key back to "
                    + "\(keyFile) as a later line"
            ) == true,
            "\(doctor.findings)"
        )
        // Serve starts, and logs the same finding as an error once it has counted.
        let logged = try await withServer { _, log in try await censusLine(in: log) }
        #expect(logged.contains(" error "), "\(logged)")
        #expect(
            logged.contains("SIWA_DATA_KEY_FILE: the database holds 1 item(s) sealed under data key \(id), which "),
            "\(logged)"
        )

        // The copy retire-data-key keeps, and a signing key under the same key.
        let kept = folder.url.appendingPathComponent("retired-data-keys/\(id)-2025-03-02.key").path
        try FileManager.default.createDirectory(
            atPath: (kept as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true
        )
        try Data(try #require(DataKeyRing(key: missing).keyFileText(of: id, comments: [])).utf8)
            .write(to: URL(fileURLWithPath: kept))
        try await withSQLiteStore(at: environment["SIWA_DATABASE_PATH"]!) { store in
            try await store.addSigningKey(
                SigningKeyRecord(
                    kid: "kid-restored",
                    sealedPrivateKey: try DataSealer(key: missing).seal(
                        Array(P256.Signing.PrivateKey().rawRepresentation)
                    ),
                    createdAt: Date()
                )
            )
        }
        let text = try await siwa(["doctor"])
        #expect(text.status == 1, "serve would refuse: \(text.stdout)")
        #expect(
            text.stdout.contains(
                "✗ SIWA_DATA_KEY_FILE: the database holds 2 item(s) sealed under data key \(id), which \(keyFile) lacks: "
                    + "restore the kept key file: add it to the key file, with siwa stopped: cat \(kept) >> \(keyFile)"
            ),
            "\(text.stdout)"
        )
        #expect(text.stdout.contains("siwa serve would refuse to start"), "\(text.stdout)")

        let handle = try #require(FileHandle(forWritingAtPath: keyFile))
        try handle.seekToEnd()
        try handle.write(contentsOf: try Data(contentsOf: URL(fileURLWithPath: kept)))
        try handle.close()
        doctor = try await doctorOnSealedData()
        #expect(!doctor.serveRefuses)
        #expect(doctor.findings.map(\.ok) == [true])
        // The two under the restored key, and the signing key serve made above under the file's own.
        #expect(doctor.findings.map(\.message) == ["the keys open the database's 3 sealed item(s)"])

        // With no key file at all, serve would make a new key, which opens none of it.
        try FileManager.default.removeItem(atPath: keyFile)
        doctor = try await doctorOnSealedData()
        #expect(doctor.serveRefuses)
        #expect(
            doctor.findings.map(\.message) == [
                "the database holds 3 sealed item(s) and there is no key file \(keyFile): restore it from your backup (or "
                    + "set SIWA_DATA_KEY); a new key cannot open them"
            ]
        )
    }

    /// The first start creates the key file and logs where, and that it must be backed up; a later start does not.
    /// No time limit of its own, as above: two starts of a debug server took past two minutes beside a cold build.
    @Test func theFirstStartSaysItCreatedADataKeyToBackUp() async throws {
        let first = try await withServer { _, log in try String(contentsOfFile: log, encoding: .utf8) }
        let key = try keyRing().primary.id
        #expect(first.contains("created a new data key in \(keyFile): back that file up now"), "\(first)")
        #expect(first.contains("\(key)"), "the key's id: \(first)")
        let base64 = try sealingKeyInFile().withUnsafeBytes { Data($0).base64EncodedString() }
        #expect(!first.contains(base64), "no key material in the log")
        let later = try await withServer { _, log in try String(contentsOfFile: log, encoding: .utf8) }
        #expect(!later.contains("created a new data key"), "\(later)")
    }

    // MARK: Helpers

    /// What ``seedSealedData(under:users:)`` stored: each item's position and what it holds.
    struct Seeded {
        var plaintexts: [SealedItem.Position: [UInt8]] = [:]
        var legacyCount = 0
        var signingKeyIDs: [String] = []
        var count: Int { plaintexts.count }
    }

    /// A signing key sealed as siwa 0.3 sealed it and one as 0.4 does, `users` Apple tokens (every other one the 0.3
    /// way) and a queued revocation, all under `key`.
    private func seedSealedData(under key: SymmetricKey, users: Int = 6) async throws -> Seeded {
        let sealer = DataSealer(key: key)
        func legacy(_ plaintext: [UInt8]) throws -> [UInt8] {
            Array(try #require(try AES.GCM.seal(plaintext, using: key).combined))
        }
        var seeded = Seeded()
        try await withSQLiteStore(at: environment["SIWA_DATABASE_PATH"]!) { store in
            for (index, kid) in ["kid-legacy", "kid-current"].enumerated() {
                let privateKey = Array(P256.Signing.PrivateKey().rawRepresentation)
                let sealed = index == 0 ? try legacy(privateKey) : try sealer.seal(privateKey)
                try await store.addSigningKey(
                    SigningKeyRecord(
                        kid: kid,
                        sealedPrivateKey: sealed,
                        createdAt: Date().addingTimeInterval(Double(index))
                    )
                )
                seeded.plaintexts[SealedItem.Position(kind: .signingKey, id: kid)] = privateKey
                seeded.signingKeyIDs.append(kid)
                if index == 0 { seeded.legacyCount += 1 }
            }
            for index in 0...users {
                let user = try await store.signIn(
                    AppleSignInFacts(appleUserID: AppleUserID("001234.seed\(index).1234"), clientID: "com.example.app"),
                    now: Date()
                ).user
                let token = Array("apple-refresh-\(index)".utf8)
                let sealed = index.isMultiple(of: 2) ? try legacy(token) : try sealer.seal(token)
                if index.isMultiple(of: 2) { seeded.legacyCount += 1 }
                try await store.saveAppleToken(
                    AppleTokenRecord(
                        userID: user.id,
                        clientID: "com.example.app",
                        encryptedRefreshToken: sealed,
                        storedAt: Date()
                    )
                )
                guard index == users else {
                    seeded.plaintexts[SealedItem.Position(kind: .appleToken, id: user.id.description)] = token
                    continue
                }
                // The last user is deleted: the token waits in the revocation queue.
                let deleted = try await store.deleteUser(
                    id: user.id,
                    mode: .delete,
                    appleRevocationDueAt: Date().addingTimeInterval(86_400),
                    now: Date()
                )
                let queued = try #require(deleted?.queuedRevocation)
                seeded.plaintexts[SealedItem.Position(kind: .appleRevocation, id: queued.id.uuidString.lowercased())] =
                    token
            }
        }
        return seeded
    }

    /// Signs the Apple user `appleUserID` in and stores their Apple token, `token` sealed under `key` (as a server
    /// holding that key would); the account's id.
    private func storeAppleToken(
        of appleUserID: String,
        _ token: String,
        sealedUnder key: SymmetricKey
    ) async throws -> UserID {
        try await withSQLiteStore(at: environment["SIWA_DATABASE_PATH"]!) { store in
            let user = try await store.signIn(
                AppleSignInFacts(appleUserID: AppleUserID(appleUserID), clientID: "com.example.app"),
                now: Date()
            ).user
            try await store.saveAppleToken(
                AppleTokenRecord(
                    userID: user.id,
                    clientID: "com.example.app",
                    encryptedRefreshToken: try DataSealer(key: key).seal(Array(token.utf8)),
                    storedAt: Date()
                )
            )
            return user.id
        }
    }

    /// Every seeded item is sealed under `id` (named in its header; or, unless `named`, also without a header) and
    /// opens with `keys` to what it held.
    private func expectEverything(
        of seeded: Seeded,
        sealedUnder id: DataKeyID,
        opensWith keys: DataKeyRing,
        named: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let items = try await withSQLiteStore(at: environment["SIWA_DATABASE_PATH"]!) { store in
            try await store.sealedItems(after: nil, limit: 1_000)
        }
        #expect(Set(items.map(\.position)) == Set(seeded.plaintexts.keys), sourceLocation: sourceLocation)
        let sealer = DataSealer(keys: keys, source: .setting("test"))
        for item in items {
            let key = sealer.sealingKey(of: item.sealed)
            #expect(named ? key == .named(id) : key.id == id, "\(item.position)", sourceLocation: sourceLocation)
            #expect(try sealer.open(item.sealed) == seeded.plaintexts[item.position], sourceLocation: sourceLocation)
        }
    }

    private func siwa(_ arguments: [String], _ environment: [String: String]? = nil) async throws -> SiwaProcess.Result
    {
        try await SiwaProcess.run(arguments, environment: environment ?? self.environment, directory: folder.url)
    }

    private func json(_ arguments: [String], _ environment: [String: String]? = nil) async throws -> [String: Any] {
        let result = try await siwa(arguments, environment)
        #expect(result.status == 0, "siwa \(arguments.joined(separator: " ")): \(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    /// `siwa doctor --json`: its findings about the database's sealed data, and whether serve would refuse.
    private func doctorOnSealedData() async throws -> (findings: [(ok: Bool, message: String)], serveRefuses: Bool) {
        let result = try await siwa(["doctor", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let findings = try #require(object["findings"] as? [[String: Any]]).filter {
            $0["setting"] as? String == "SIWA_DATA_KEY_FILE" && ($0["message"] as? String)?.contains("database") == true
        }
        return (
            findings.map { ($0["ok"] as? Bool ?? false, $0["message"] as? String ?? "") },
            try #require(object["serveRefuses"] as? Bool)
        )
    }

    private func keyRing() throws -> DataKeyRing { try #require(try DataKeyRing.read(file: keyFile)) }

    /// The sealing key of the key file (its first key line).
    private func sealingKeyInFile() throws -> SymmetricKey {
        let text = try String(contentsOfFile: keyFile, encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { !$0.hasPrefix("#") })
        return SymmetricKey(data: try #require(Data(base64Encoded: String(line))))
    }

    private func mode(_ path: String) throws -> Int? {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
    }

    /// The line serve logs of its sealed-data census, once it is written (serve counts after it starts answering).
    private func censusLine(in log: String) async throws -> String {
        for _ in 0..<600 {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.contains("sealed-data census") }) {
                return String(line)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("serve logged no census: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        return ""
    }

    /// Runs `siwa serve` on the folder's database and key file while `body` runs, with its log's path.
    private func withServer<R>(_ body: (_ port: Int, _ log: String) async throws -> R) async throws -> R {
        let (server, port, log) = try SiwaProcess.startServe(in: folder, settings: environment)
        defer { server.terminate(signal: SIGTERM) }
        try #require(try await SiwaProcess.waitUntilServing(port: port), "siwa serve did not come up: \(log)")
        return try await body(port, log)
    }

    private func jwksKids(_ port: Int) async throws -> Set<String> {
        let (data, _) = try await URLSession.shared.data(
            from: URL(string: "http://127.0.0.1:\(port)/.well-known/jwks.json")!
        )
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let keys = try #require(object["keys"] as? [[String: Any]])
        // The stored keys: each also publishes its RSA companion (for ID tokens) under `<kid>.rs`.
        return Set(keys.filter { $0["kty"] as? String == "EC" }.compactMap { $0["kid"] as? String })
    }
}
