import AccountStore
import AccountStoreSQL
import ArgumentParser
import AuthServer
import Foundation
import Logging

/// `siwa restore`: puts a backup of `siwa backup` in place of the service's database, with siwa stopped, and says
/// what that undid; `--reapply` then does again what can be done again.
struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a backup of siwa backup, and say what the restore undoes; --reapply does it again.",
        discussion: """
            Stop siwa first: on SQLite the restore refuses while a siwa serve holds the database (and siwa serve \
            does not start while a restore runs); on PostgreSQL while connections of siwa serve are open. Before \
            anything is replaced it checks the backup against its manifest (<backup>.json, written by siwa \
            backup) and that the data keys hold every key its sealed items need.

            It reads what happened since the backup from the database it replaces (its audit log: accounts \
            disabled, enabled and deleted, admin roles granted and revoked, service tokens created and revoked, \
            sessions ended, signing keys made), lists it, and writes it to siwa-undone-<time>.jsonl beside the \
            backup. siwa restore --reapply FILE does again what can be: disables, enables, deletions (with Apple's \
            revocation), admin roles, service-token revocations and session endings, and a signing-key rotation \
            when keys were made since. What cannot be: accounts created since (they sign in again, as new \
            accounts; the name Apple sends once is lost) and service tokens created since (create them again).

            Example:
              systemctl stop siwa
              runuser -u siwa -- siwa restore /var/backups/siwa/siwa-20261201T020000Z.sqlite --yes --config /etc/siwa/siwa.json
              runuser -u siwa -- siwa restore --reapply /var/backups/siwa/siwa-undone-20261202T090000Z.jsonl --config /etc/siwa/siwa.json
              systemctl start siwa
            """
    )

    @Argument(help: "The backup (or, with --reapply, the siwa-undone-….jsonl a restore wrote).")
    var file: String

    @Flag(help: "Do again what the restore that wrote FILE undid.")
    var reapply = false

    @Flag(name: [.customShort("y"), .long], help: "Restore without asking (needed when not on a terminal).")
    var yes = false

    @OptionGroup var store: StoreOptions

    func run() async throws {
        if reapply {
            try await Reapply.run(file, self.store)
            return
        }
        let confirmation = Confirmation(yes: yes, standardInputIsTerminal: Terminal.standardInputIsTerminal)
        guard confirmation != .refuse else {
            Terminal.error("error: standard input is not a terminal, so nobody can confirm: pass --yes to restore")
            throw ExitCode(2)
        }
        // A SQLite file that is gone (the disk was lost) is what a restore is for: it need not exist.
        let (settings, logger) = try await operatorSettings(
            self.store,
            createsDatabase: true,
            createsDataKey: false,
            needsDataKey: true
        )
        let manifest = try Self.checkedManifest(file, settings: settings)
        if confirmation == .ask {
            Terminal.error(
                "replace \(settings.databaseDescription)\n  with \(file), taken \(manifest.takenAt.formatted(.iso8601))"
            )
            Terminal.prompt("Restore it? What happened since is undone (it is listed first). [y/N] ")
            guard Confirmation.accepts(readLine()) else {
                Terminal.error("not restored")
                throw ExitCode(1)
            }
        }
        var lock: DatabaseLock?
        do {
            if let url = settings.databaseURL {
                let serving = try await SQLAccountStore.servingConnections(postgresURL: url, logger: logger)
                guard serving == 0 else {
                    throw ServerSettings.Problem(
                        variable: settings.databaseURLSetting,
                        fix:
                            "\(serving) connection(s) of siwa serve are open on the database: stop every instance first "
                            + "(systemctl stop siwa)"
                    )
                }
            } else {
                lock = try DatabaseLock(database: settings.databasePath, mode: .restoring)
            }
        } catch let problem as ServerSettings.Problem {
            Terminal.error("error: \(problem)")
            throw ExitCode(2)
        } catch {
            Terminal.error("error: \(settings.databaseSettingName): \(BackupCommand.describe(error))")
            throw ExitCode(2)
        }
        let since = await Undone.read(settings, manifest: manifest, logger: logger)
        do {
            try await Self.replace(settings, with: file)
        } catch {
            Terminal.error("error: the restore failed: \(BackupCommand.describe(error))")
            throw ExitCode(1)
        }
        await Self.continueEventSequence(after: since.lastEventSequence, settings: settings, logger: logger)
        lock?.release()
        try await Self.report(since, backup: file, manifest: manifest, settings: settings, logger: logger)
    }

    /// Moves the restored database's lifecycle event sequence past the replaced one's: the events written after the
    /// backup are gone, and the events written from now on must not take their sequences, or a backend whose feed
    /// cursor is past the backup would skip them.
    static func continueEventSequence(after last: Int64?, settings: ServerSettings, logger: Logger) async {
        guard let last, last > 0 else { return }
        var quiet = logger
        quiet.logLevel = .error
        guard (try? await StoreFactory.schemaVersion(settings, logger: quiet)) == SQLAccountStore.schemaVersion else {
            print(
                "the backup's schema has no lifecycle events: a backend reading GET /admin/api/events starts again "
                    + "from after=0 once siwa has upgraded it (the replaced database had handed out \(last))"
            )
            return
        }
        do {
            let store = try await StoreFactory.openExisting(settings, logger: quiet)
            do {
                try await store.advanceLifecycleEventSequence(to: last)
                await store.shutdown()
            } catch {
                await store.shutdown()
                throw error
            }
            print("lifecycle events continue after sequence \(last), the replaced database's last")
        } catch {
            Terminal.error(
                "warning: the lifecycle event sequence could not be moved past \(last) (\(BackupCommand.describe(error))): "
                    + "new events may take sequences a backend has already read"
            )
        }
    }

    /// The backup's manifest, checked: the file is the one backed up, for this kind of database, and the data keys
    /// hold every key its sealed items need.
    static func checkedManifest(_ file: String, settings: ServerSettings) throws -> BackupManifest {
        let manifest: BackupManifest
        do {
            manifest = try BackupManifest.read(BackupManifest.path(of: file))
        } catch {
            Terminal.error(
                "error: \(BackupManifest.path(of: file)) cannot be read (\(error.localizedDescription)): restore a "
                    + "backup of siwa backup, with its manifest beside it"
            )
            throw ExitCode(2)
        }
        let engine = settings.databaseURL == nil ? "sqlite" : "postgres"
        guard manifest.engine == engine else {
            Terminal.error("error: \(file) is a \(manifest.engine) backup, and the database is \(engine)")
            throw ExitCode(2)
        }
        guard (try? BackupManifest.sha256(of: file)) == manifest.sha256 else {
            Terminal.error("error: \(file) is not the file its manifest describes (its SHA-256 differs): damaged?")
            throw ExitCode(2)
        }
        let lacking = manifest.sealedItems.keys.sorted().filter { id in
            DataKeyID(id).map { settings.dataKeys.key($0) == nil } ?? true
        }
        for id in lacking {
            let advice = DataKeyID(id).map(settings.missingKeyAdvice) ?? "find the key it was sealed under"
            Terminal.error(
                "error: \(settings.dataKeySetting): the backup holds \(manifest.sealedItems[id] ?? 0) item(s) sealed under "
                    + "data key \(id), which \(settings.dataKeySource) lacks: \(advice); nothing was restored"
            )
        }
        if !lacking.isEmpty { throw ExitCode(2) }
        return manifest
    }

    /// Puts the backup in place. SQLite's file goes through a copy beside the database, renamed over it once written
    /// and synced (the old `-wal` and `-shm` belong to the replaced file). PostgreSQL's dump becomes a script
    /// (`pg_restore --file`) that `psql` runs in one transaction, after statements that drop every table and
    /// function of siwa's schema: whatever fails, the database is as it was; whatever succeeds, nothing of a newer
    /// schema is left behind.
    static func replace(_ settings: ServerSettings, with file: String) async throws {
        if let url = settings.databaseURL {
            let script = file + ".restoring.sql"
            unlink(script)
            defer { unlink(script) }
            guard
                FileManager.default.createFile(
                    atPath: script,
                    contents: Data((SQLAccountStore.postgresDropStatements.joined(separator: "\n") + "\n").utf8),
                    attributes: [.posixPermissions: 0o600]
                )
            else {
                throw ServerSettings.Problem(variable: settings.databaseURLSetting, fix: "cannot write \(script)")
            }
            // Created 0600 first: pg_restore keeps the mode of a file it writes into, and the script holds the data.
            let body = script + ".body"
            unlink(body)
            defer { unlink(body) }
            guard FileManager.default.createFile(atPath: body, contents: nil, attributes: [.posixPermissions: 0o600])
            else {
                throw ServerSettings.Problem(variable: settings.databaseURLSetting, fix: "cannot write \(body)")
            }
            let converted = try await PostgresTools.run(
                "pg_restore",
                ["--clean", "--if-exists", "--no-owner", "--no-privileges", "--file=\(body)", file],
                url: url
            )
            guard converted.status == 0 else {
                throw PostgresTools.Failure(
                    description: "pg_restore exited with \(converted.status): \(converted.standardError)"
                )
            }
            try append(body, to: script)
            let run = try await PostgresTools.run(
                "psql",
                ["--no-psqlrc", "--quiet", "--single-transaction", "--set=ON_ERROR_STOP=1", "--file=\(script)"],
                url: url
            )
            guard run.status == 0 else {
                throw PostgresTools.Failure(
                    description: "psql exited with \(run.status), and the database is as it was: \(run.standardError)"
                )
            }
            return
        }
        let path = DataKeyFile.absolute(settings.databasePath)
        let copy = path + ".restoring"
        unlink(copy)
        guard let data = FileManager.default.contents(atPath: file),
            FileManager.default.createFile(atPath: copy, contents: data, attributes: [.posixPermissions: 0o600]),
            let handle = FileHandle(forUpdatingAtPath: copy)
        else {
            throw ServerSettings.Problem(variable: settings.databaseSettingName, fix: "cannot write \(copy)")
        }
        try handle.synchronize()
        try handle.close()
        unlink(path + "-wal")
        unlink(path + "-shm")
        guard rename(copy, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(copy)
            throw ServerSettings.Problem(
                variable: settings.databaseSettingName,
                fix: "cannot rename \(copy): \(reason)"
            )
        }
    }

    /// Appends the file at `source` to the one at `destination`, in pieces.
    private static func append(_ source: String, to destination: String) throws {
        guard let input = FileHandle(forReadingAtPath: source), let output = FileHandle(forWritingAtPath: destination)
        else {
            throw ServerSettings.Problem(variable: destination, fix: "cannot join \(source) to \(destination)")
        }
        defer {
            try? input.close()
            try? output.close()
        }
        output.seekToEndOfFile()
        while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty { output.write(chunk) }
    }

    /// What the restored database is, and what the restore undid: listed, and written for `--reapply`.
    static func report(
        _ undone: Undone,
        backup: String,
        manifest: BackupManifest,
        settings: ServerSettings,
        logger: Logger
    ) async throws {
        let version = try? await StoreFactory.schemaVersion(settings, logger: logger)
        print(
            "restored \(settings.databaseDescription) from \(manifest.file), taken \(manifest.takenAt.formatted(.iso8601)) "
                + "(schema version \(version.map(String.init) ?? "unknown"))"
        )
        if let version, version < SQLAccountStore.schemaVersion {
            print("siwa serve (or siwa migrate) upgrades it to version \(SQLAccountStore.schemaVersion) as it starts")
        }
        guard let events = undone.events else {
            print(
                "what the restore undid is not known: \(undone.unknownBecause ?? "the replaced database was not read")"
            )
            return
        }
        // Events the backup holds too (taken in the same millisecond as its newest) were not undone.
        let kept = await Undone.eventIDs(settings, since: manifest.newestAuditEvent?.time, logger: logger)
        var list = undone
        list.events = events.filter { !kept.contains($0.id) }
        let lines = list.summary
        if lines.isEmpty {
            print("nothing happened since the backup: the restore undid nothing")
            return
        }
        let path = URL(fileURLWithPath: backup).deletingLastPathComponent().appendingPathComponent(
            "siwa-undone-\(BackupCommand.stamp(Date())).jsonl"
        ).path
        try BackupManifest.writePrivately(try list.jsonLines(backupTakenAt: manifest.takenAt), to: path)
        print("the restore undid what happened since the backup:")
        for line in lines { print("  \(line)") }
        print(
            "re-apply what can be (disables, enables, deletions, admin roles, token revocations, session endings, the "
                + "signing-key rotation):"
        )
        let config = settings.configFile.map { " --config \($0)" } ?? ""
        print("  siwa restore --reapply \(path)\(config)")
    }
}
