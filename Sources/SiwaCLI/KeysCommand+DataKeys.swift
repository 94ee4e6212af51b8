import AccountStore
import ArgumentParser
import AuthServer
import Crypto
import Foundation
import Logging

extension KeysCommand {
    /// `siwa keys data-keys`: the data keys, and what each seals.
    struct DataKeys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "data-keys",
            abstract: "List the data keys, which one seals, and how many sealed items each holds.",
            discussion: """
                Reads every sealed item (access-token signing keys, Apple refresh tokens, queued Apple revocations) \
                and counts them by the data key that sealed them. A key that does not seal and holds no item can be \
                retired (siwa keys retire-data-key). Exit status 1 when an item is sealed under a key the ring lacks.

                Example:
                  siwa keys data-keys
                  siwa keys data-keys --json
                """
        )

        @OptionGroup var store: StoreOptions

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            try await withConfiguredStore(self.store, needsDataKey: true) { settings, store in
                let census = try await DataResealer(store: store, sealer: settings.quietDataSealer).census()
                let report = DataKeyReport(settings: settings, census: census)
                print(json ? try UsersCommand.json(report) : report.text)
                if census.unopenable > 0 || !census.byMissingKey.isEmpty { throw ExitCode(1) }
            }
        }
    }

    /// `siwa keys rotate-data-key`: a new sealing key, and every item sealed again under it.
    struct RotateDataKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-data-key",
            abstract: "Add a new data key that seals from now on, and re-seal every sealed item under it.",
            discussion: """
                With the keys in the key file (SIWA_DATA_KEY_FILE): writes the file with a new key first and the \
                earlier keys after it (0600, replaced in one step), then re-seals every sealed item under the new \
                key in batches, printing progress. Servers reading that file pick the new key up within seconds (when \
                the file changes, on SIGHUP, or when they meet data sealed under it). Safe to interrupt and safe with \
                servers running: every item is sealed under an old key or the new one, all in the file, and \
                --resume finishes the job. Back up the key file afterwards.

                With the keys in SIWA_DATA_KEY: prints the new value of SIWA_DATA_KEY (the new key first) and \
                re-seals nothing; set it on every instance, restart them, then run --resume with the new value.

                Several hosts, each with its own copy of the key file: run with --no-reseal, copy the file to every \
                host, then run --resume.

                On a terminal it asks before adding a key; a script passes --yes.

                Example:
                  siwa keys rotate-data-key --yes
                  siwa keys rotate-data-key --resume --batch-size 200
                """
        )

        @Option(help: "Items read and re-sealed per batch (1 to 100000).")
        var batchSize = 500

        @Flag(help: "Add no key: re-seal what is not yet under the sealing key (after an interruption, say).")
        var resume = false

        @Flag(help: "Add the key but re-seal nothing yet (copy the key file to every host, then run --resume).")
        var noReseal = false

        @Flag(name: [.customShort("y"), .long], help: "Add the key without asking (needed when not on a terminal).")
        var yes = false

        @OptionGroup var store: StoreOptions

        @Flag(help: "Print JSON.")
        var json = false

        /// The `--json` answer.
        struct Output: Encodable {
            var addedKey: String?
            var sealingKey: String
            var keys: [String]
            /// The new `SIWA_DATA_KEY`, when the keys come from it (a secret: only ever printed here).
            var dataKey: String?
            var resealed = 0
            var alreadySealed = 0
            var changedMeanwhile = 0
            var failed = 0
            /// Whether every item is sealed under the sealing key now.
            var complete = false
        }

        func validate() throws {
            guard (1...100_000).contains(batchSize) else {
                throw ValidationError("--batch-size: expected 1 to 100000, got \(batchSize)")
            }
            if resume && noReseal { throw ValidationError("--resume and --no-reseal contradict each other") }
        }

        func run() async throws {
            try await withConfiguredStore(self.store, needsDataKey: true) { settings, store in
                var settings = settings
                var output = Output(sealingKey: "", keys: [])
                if !resume {
                    let added = try addKey(&settings)
                    output.addedKey = added.description
                    if settings.dataKeyFromVariable {
                        output.dataKey = settings.dataKeys.listText
                        output.sealingKey = added.description
                        output.keys = settings.dataKeys.ids.map(\.description)
                        print(json ? try UsersCommand.json(output) : Self.variableInstructions(settings.dataKeys))
                        return
                    }
                    Terminal.error(
                        "added data key \(added) to \(settings.dataKeyFile): it seals from now on; the earlier keys "
                            + "still open"
                    )
                }
                output.sealingKey = settings.dataKeys.primary.id.description
                output.keys = settings.dataKeys.ids.map(\.description)
                if noReseal {
                    print(
                        json
                            ? try UsersCommand.json(output)
                            : "copy \(settings.dataKeyFile) to every host that runs siwa (their servers re-read it "
                                + "within seconds), then re-seal: siwa keys rotate-data-key --resume"
                    )
                    return
                }
                try await reseal(settings, store, into: &output)
                print(json ? try UsersCommand.json(output) : Self.summary(output, settings: settings))
                if output.failed > 0 { throw ExitCode(1) }
            }
        }

        /// Adds a new key first in the ring: to the key file (under a lock, re-read first), or, for keys from
        /// `SIWA_DATA_KEY`, only to `settings`. Asks first on a terminal.
        private func addKey(_ settings: inout ServerSettings) throws -> DataKeyID {
            if settings.dataKeyFromVariable {
                settings.dataKeys = try settings.dataKeys.adding(SymmetricKey(size: .bits256))
                return settings.dataKeys.primary.id
            }
            let file = settings.dataKeyFile
            switch Confirmation(yes: yes, standardInputIsTerminal: Terminal.standardInputIsTerminal) {
            case .proceed: break
            case .refuse:
                Terminal.error("error: standard input is not a terminal, so nobody can confirm: pass --yes to rotate")
                throw ExitCode(2)
            case .ask:
                Terminal.prompt(
                    "Add a new data key to \(file) and re-seal every sealed item under it? Back up the file after. [y/N] "
                )
                guard Confirmation.accepts(readLine()) else {
                    Terminal.error("no key added")
                    throw ExitCode(1)
                }
            }
            settings.dataKeys = try reportingProblems {
                try DataKeyFile.withLock(file) {
                    guard let current = try DataKeyFile.read(file) else {
                        throw ServerSettings.Problem(variable: "SIWA_DATA_KEY_FILE", fix: "\(file) is gone")
                    }
                    let ring = try current.adding(SymmetricKey(size: .bits256))
                    try DataKeyFile.replace(file, with: ring)
                    return ring
                }
            }
            return settings.dataKeys.primary.id
        }

        /// Passes over every item until one finds nothing changed meanwhile (three at most), printing progress.
        private func reseal(
            _ settings: ServerSettings,
            _ store: any AccountStore,
            into output: inout Output
        ) async throws {
            let resealer = DataResealer(store: store, sealer: settings.quietDataSealer)
            var pass = DataResealer.Pass()
            for number in 1...3 {
                pass = try await resealer.reseal(batchSize: batchSize) { pass in
                    Terminal.error(
                        "pass \(number): \(pass.examined) item(s) read, \(pass.resealed) re-sealed, "
                            + "\(pass.current) already under \(settings.dataKeys.primary.id)"
                    )
                }
                output.resealed += pass.resealed
                if number == 1 { output.alreadySealed = pass.current }
                if pass.changedMeanwhile == 0 { break }
            }
            output.changedMeanwhile = pass.changedMeanwhile
            output.failed = pass.failed
            output.complete = pass.changedMeanwhile == 0 && pass.failed == 0
            for (reason, count) in pass.failures.sorted(by: { $0.key < $1.key }) {
                Terminal.error("error: \(count) item(s) did not open: \(reason)")
            }
        }

        private static func summary(_ output: Output, settings: ServerSettings) -> String {
            let sealing = output.sealingKey
            var lines = ["re-sealed \(output.resealed) item(s) under data key \(sealing)"]
            if output.complete {
                let older = settings.dataKeys.ids.dropFirst().map(\.description)
                lines.append(
                    "every item is sealed under \(sealing)"
                        + (older.isEmpty
                            ? ""
                            : "; once every instance has the key (servers re-read \(settings.dataKeySetting) within "
                                + "seconds, on SIGHUP or at restart), retire the older ones: "
                                + older.map { "siwa keys retire-data-key \($0)" }.joined(separator: "; "))
                )
            } else if output.changedMeanwhile > 0 {
                lines.append(
                    "\(output.changedMeanwhile) item(s) changed while being re-sealed (a running server wrote them): "
                        + "run siwa keys rotate-data-key --resume again"
                )
            }
            if output.addedKey != nil, !settings.dataKeyFromVariable {
                lines.append(
                    "back up \(settings.dataKeyFile) now: data sealed under \(sealing) opens with no other key"
                )
            }
            return lines.joined(separator: "\n")
        }

        private static func variableInstructions(_ keys: DataKeyRing) -> String {
            """
            new data key \(keys.primary.id). Set SIWA_DATA_KEY on every instance to the value below (the new key \
            first, the earlier ones after it), restart them, then re-seal with it set: siwa keys rotate-data-key --resume
            \(keys.listText)
            """
        }
    }

    /// `siwa keys retire-data-key`: an older key out of the key file, once nothing is sealed under it, kept in a file
    /// of its own for the database backups taken before.
    struct RetireDataKey: AsyncParsableCommand {
        /// A running server seals with the key that sealed when it last read the key file, which it checks every
        /// `dataKeyReloadInterval`: until each has read the rotated file, it may seal under the key about to be
        /// retired. Waits out what is left of that time since the file changed (one second more), so that the count
        /// that follows is final.
        static func waitForServersToReadTheKeyFile(_ settings: ServerSettings) async throws {
            guard !settings.dataKeyFromVariable,
                let changed = try? FileManager.default.attributesOfItem(atPath: settings.dataKeyFile)[
                    .modificationDate
                ] as? Date
            else { return }
            let settled = changed.addingTimeInterval(
                Double(settings.server.dataKeyReloadInterval.components.seconds) + 1
            )
            let wait = settled.timeIntervalSinceNow
            guard wait > 0 else { return }
            Terminal.error(
                "waiting \(Int(wait.rounded(.up))) s, until every running siwa has read the key file changed at "
                    + "\(changed.formatted(.iso8601)) (they check it every "
                    + "\(settings.server.dataKeyReloadInterval.components.seconds) s)"
            )
            try await Task.sleep(for: .seconds(wait))
        }

        static let configuration = CommandConfiguration(
            commandName: "retire-data-key",
            abstract: "Remove an older data key from the key file once no sealed item uses it, keeping a copy apart.",
            discussion: """
                Counts the items sealed under the key first and refuses while there are any (siwa keys \
                rotate-data-key --resume re-seals them under the sealing key); never removes the sealing key. Retire \
                a key once every instance has the new sealing key: servers re-read the key file within seconds of a \
                change, on SIGHUP, or at restart.

                Before removing the key, writes it to a file of its own, retired-data-keys/<key id>-<date>.key beside \
                the key file (0600, the folder 0700), and prints the time of the retirement: a backup of the \
                database taken before then may hold data sealed under the key, and restoring it needs that file \
                (docs/deploy.md, "Backups and restores"). When the file cannot be written, the key stays; --forget \
                retires it with no copy.

                With the keys in SIWA_DATA_KEY it says which entry to remove.

                Example:
                  siwa keys retire-data-key 0123456789abcdef
                """
        )

        @Argument(help: "The key id: 16 hex characters, as siwa keys data-keys lists it.")
        var keyID: String

        @Flag(help: "Keep no copy of the key: a database backup from before now that needs it cannot be restored.")
        var forget = false

        @OptionGroup var store: StoreOptions

        @Flag(help: "Print JSON.")
        var json = false

        /// The `--json` answer.
        struct Output: Encodable {
            var retired: String
            /// The keys left, the sealing one first; for keys from `SIWA_DATA_KEY`, the entry to remove instead.
            var keys: [String]
            var removeEntry: Int?
            /// When the key was retired: database backups taken before may need it.
            var retiredAt: String
            /// The file the key was kept in; `nil` with `--forget` or keys from `SIWA_DATA_KEY`.
            var keptIn: String?
        }

        func run() async throws {
            guard let id = DataKeyID(keyID) else {
                Terminal.error(
                    "error: '\(keyID)' is no data key id: expected 16 hex characters (siwa keys data-keys lists them)"
                )
                throw ExitCode(2)
            }
            try await withConfiguredStore(self.store, needsDataKey: true) { settings, store in
                let ring = settings.dataKeys
                guard let position = ring.ids.firstIndex(of: id) else {
                    Terminal.error(
                        "error: \(settings.dataKeySetting) holds no data key \(id); it holds "
                            + ring.ids.map(\.description).joined(separator: ", ")
                    )
                    throw ExitCode(1)
                }
                guard position > 0 else {
                    Terminal.error(
                        "error: data key \(id) seals, so it cannot be retired; siwa keys rotate-data-key adds a new "
                            + "sealing key first"
                    )
                    throw ExitCode(1)
                }
                try await Self.waitForServersToReadTheKeyFile(settings)
                let count = try await DataResealer(store: store, sealer: settings.quietDataSealer).census().count(id)
                guard count == 0 else {
                    Terminal.error(
                        "error: \(count) item(s) are still sealed under data key \(id): run siwa keys rotate-data-key "
                            + "--resume first (it re-seals them under \(ring.primary.id)), then retire it"
                    )
                    throw ExitCode(1)
                }
                let now = Date()
                let time = now.formatted(.iso8601)
                if settings.dataKeyFromVariable {
                    let output = Output(retired: id.description, keys: [], removeEntry: position + 1, retiredAt: time)
                    print(
                        json
                            ? try UsersCommand.json(output)
                            : "no item is sealed under data key \(id): remove entry \(position + 1) of SIWA_DATA_KEY "
                                + "on every instance and restart them; keep that key apart (in your secret store): a "
                                + "backup of the database taken before \(time) may need it listed again"
                    )
                    return
                }
                let file = settings.dataKeyFile
                let (left, kept) = try reportingProblems {
                    try DataKeyFile.withLock(file) {
                        guard let current = try DataKeyFile.read(file), let left = current.removing(id) else {
                            throw ServerSettings.Problem(
                                variable: "SIWA_DATA_KEY_FILE",
                                fix: "\(file) changed meanwhile: \(id) is no longer an older key in it"
                            )
                        }
                        // Kept before the key file loses it, so that a failure leaves the key where it was.
                        let kept = forget ? nil : try DataKeyFile.keepRetired(id, of: current, from: file, at: now)
                        try DataKeyFile.replace(file, with: left)
                        return (left, kept)
                    }
                }
                let output = Output(
                    retired: id.description,
                    keys: left.ids.map(\.description),
                    retiredAt: time,
                    keptIn: kept
                )
                print(json ? try UsersCommand.json(output) : Self.summary(output, file: file, left: left))
            }
        }

        private static func summary(_ output: Output, file: String, left: DataKeyRing) -> String {
            let retired = "retired data key \(output.retired) from \(file); it holds \(left)"
            guard let kept = output.keptIn else {
                return retired + "\nkept no copy of it (--forget): a backup of the database taken before "
                    + "\(output.retiredAt) that holds data sealed under \(output.retired) cannot be restored"
            }
            return retired + "\nkept it in \(kept) (0600): a backup of the database taken before \(output.retiredAt) "
                + "may need it; keep that file with those backups as long as any exists (docs/deploy.md, "
                + "\"Backups and restores\")"
        }
    }
}

/// What `siwa keys data-keys` prints.
struct DataKeyReport: Encodable {
    struct Key: Encodable {
        var id: String
        var seals: Bool
        var items: Int
        /// Of `items`, those sealed before key ids (siwa 0.3).
        var withoutKeyID: Int
        var retirable: Bool
    }

    struct MissingKey: Encodable {
        var id: String
        var items: Int
        /// How to put the key back.
        var fix: String
    }

    /// `SIWA_DATA_KEY` or `SIWA_DATA_KEY_FILE`.
    var setting: String
    var keyFile: String?
    var keys: [Key]
    /// Items whose header names a key the ring lacks.
    var missingKeys: [MissingKey]
    /// Items from before key ids that no key opens.
    var unopenable: Int
    var items: Int
    /// Items not (yet) sealed under the sealing key with its id: what `rotate-data-key --resume` re-seals.
    var toReseal: Int

    init(settings: ServerSettings, census: DataResealer.Census) {
        setting = settings.dataKeySetting
        keyFile = settings.dataKeyFromVariable ? nil : settings.dataKeyFile
        let primary = settings.dataKeys.primary.id
        keys = settings.dataKeys.ids.map { id in
            let items = census.byKey[id] ?? 0
            return Key(
                id: id.description,
                seals: id == primary,
                items: items,
                withoutKeyID: census.withoutKeyID[id] ?? 0,
                retirable: id != primary && items == 0
            )
        }
        missingKeys = census.byMissingKey.sorted { $0.key < $1.key }.map {
            MissingKey(id: $0.key.description, items: $0.value, fix: settings.missingKeyAdvice($0.key))
        }
        unopenable = census.unopenable
        items = census.total
        toReseal = census.total - (census.byKey[primary] ?? 0) + (census.withoutKeyID[primary] ?? 0)
    }

    var text: String {
        var lines = ["data keys of \(keyFile.map { "\(setting) \($0)" } ?? setting), the first seals:"]
        for key in keys {
            var line = "  \(key.id)  \(key.seals ? "seals     " : "opens only")  \(key.items) item(s)"
            if key.withoutKeyID > 0 { line += ", \(key.withoutKeyID) of them sealed before key ids" }
            if key.retirable { line += "  can be retired: siwa keys retire-data-key \(key.id)" }
            lines.append(line)
        }
        if toReseal > 0 {
            lines.append(
                "\(toReseal) item(s) are not yet sealed under \(keys[0].id) with its id: siwa keys rotate-data-key "
                    + "--resume re-seals them"
            )
        }
        for missing in missingKeys {
            lines.append(
                "! \(missing.items) item(s) are sealed under data key \(missing.id), which \(setting) lacks, and "
                    + "cannot be opened: \(missing.fix)"
            )
        }
        if unopenable > 0 {
            lines.append("! \(unopenable) item(s) sealed before key ids open under no key of \(setting)")
        }
        return lines.joined(separator: "\n")
    }
}

extension ServerSettings {
    /// The data sealer of an operator command, which logs nothing of its own.
    var quietDataSealer: DataSealer {
        var logger = Logger(label: "siwa")
        logger.logLevel = .critical
        return makeDataSealer(logger: logger)
    }
}

/// Runs `body`; a ``ServerSettings/Problem`` it throws is reported naming its setting and the command exits 2.
func reportingProblems<R>(_ body: () throws -> R) throws -> R {
    do {
        return try body()
    } catch let problem as ServerSettings.Problem {
        Terminal.error("error: \(problem)")
        throw ExitCode(2)
    }
}
