import AccountStore
import AccountStoreSQL
import ArgumentParser
import AuthServer
import Foundation
import Logging

/// `siwa backup`: a consistent backup of the service's database, checked against the data keys, with a manifest that
/// `siwa restore` reads.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Back the database up, while siwa serves: a consistent copy, checked against the data keys.",
        discussion: """
            SQLite: a copy of the database as of one moment (VACUUM INTO), opened and counted before it is kept. \
            PostgreSQL: pg_dump's custom format, run with the configured URL (the password in PGPASSWORD, never \
            on the command line); pg_dump must be of the server's version or newer. Beside the backup, \
            <backup>.json says what it holds: its time, schema version, newest audit event, signing keys and the \
            sealed items under each data key. Each file is written 0600, named by its time in UTC. Exit status 1 \
            when the data keys do not open everything the backup holds (it is kept, and the finding says which key \
            to keep with it).

            Example:
              runuser -u siwa -- siwa backup --output /var/backups/siwa --config /etc/siwa/siwa.json
            """
    )

    @Option(help: "The folder for the backup and its manifest (created 0700 when missing).")
    var output: String

    @OptionGroup var store: StoreOptions

    @Flag(help: "Print the manifest as JSON.")
    var json = false

    func run() async throws {
        let (settings, logger) = try await operatorSettings(self.store, createsDatabase: false, needsDataKey: true)
        do {
            try FileManager.default.createDirectory(
                atPath: output,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            Terminal.error("error: --output: cannot create \(output): \(error.localizedDescription)")
            throw ExitCode(2)
        }
        let engine = settings.databaseURL == nil ? "sqlite" : "postgres"
        let name = "siwa-\(Self.stamp(Date())).\(engine == "sqlite" ? "sqlite" : "dump")"
        let path = URL(fileURLWithPath: output).appendingPathComponent(name).path
        let partial = path + ".partial"
        let opened = try await StoreFactory.open(settings, logger: logger, checksDataKey: true)
        let manifest: BackupManifest
        do {
            manifest = try await Self.backUp(
                opened.store,
                to: partial,
                name: name,
                settings: settings,
                logger: logger
            )
            await opened.close()
        } catch {
            await opened.close()
            unlink(partial)
            Terminal.error("error: the backup failed: \(Self.describe(error))")
            throw ExitCode(1)
        }
        guard rename(partial, path) == 0 else {
            Terminal.error("error: cannot rename \(partial) to \(path): \(String(cString: strerror(errno)))")
            throw ExitCode(1)
        }
        try manifest.write(to: BackupManifest.path(of: path))
        let unopened = manifest.sealedItems.filter { item in
            DataKeyID(item.key).map { settings.dataKeys.key($0) == nil } ?? true
        }
        if json {
            print(String(decoding: try BackupManifest.encoder().encode(manifest), as: UTF8.self))
        } else {
            let keys = manifest.sealedItems.sorted { $0.key < $1.key }.map { "\($0.value) under \($0.key)" }
            print(
                "backed up \(settings.databaseDescription) to \(path) (schema version \(manifest.schemaVersion), "
                    + "\(manifest.signingKeys.count) signing key(s), sealed items: "
                    + "\(keys.isEmpty ? "none" : keys.joined(separator: ", "))); manifest: \(BackupManifest.path(of: path))"
            )
            print(
                "keep it with the data-key file (\(settings.dataKeySource)) and its retired keys: without them its "
                    + "sealed items do not open"
            )
        }
        guard unopened.isEmpty else {
            for (id, count) in unopened.sorted(by: { $0.key < $1.key }) {
                let advice = DataKeyID(id).map(settings.missingKeyAdvice) ?? "find the key it was sealed under"
                Terminal.error(
                    "error: \(settings.dataKeySetting): \(count) item(s) of the backup are sealed under data key \(id), "
                        + "which \(settings.dataKeySource) lacks: \(advice)"
                )
            }
            throw ExitCode(1)
        }
    }

    /// Writes the backup of `store` to `partial`, and what it holds. SQLite's copy is opened and counted itself;
    /// PostgreSQL's dump is the database as of its start, whose facts are read from the database right after it.
    static func backUp(
        _ store: SQLAccountStore,
        to partial: String,
        name: String,
        settings: ServerSettings,
        logger: Logger
    ) async throws -> BackupManifest {
        let takenAt = Date()
        let facts: (schema: Int, audit: BackupManifest.AuditMark?, keys: [String], census: DataResealer.Census)
        if let url = settings.databaseURL {
            // Created 0600 first: pg_dump keeps the mode of a file it writes into.
            guard FileManager.default.createFile(atPath: partial, contents: nil, attributes: [.posixPermissions: 0o600])
            else {
                throw PostgresTools.Failure(description: "cannot create \(partial)")
            }
            let run = try await PostgresTools.run(
                "pg_dump",
                ["--format=custom", "--no-owner", "--no-privileges", "--file=\(partial)"],
                url: url
            )
            guard run.status == 0 else {
                throw PostgresTools.Failure(description: "pg_dump exited with \(run.status): \(run.standardError)")
            }
            facts = try await BackupManifest.facts(of: store, settings: settings)
        } else {
            try await store.writeSQLiteBackup(to: partial)
            var quiet = logger
            quiet.logLevel = .error
            let copy = try await SQLAccountStore.existingSQLite(path: partial, logger: quiet)
            do {
                facts = try await BackupManifest.facts(of: copy, settings: settings)
                await copy.shutdown()
            } catch {
                await copy.shutdown()
                throw error
            }
        }
        return BackupManifest(
            file: name,
            sha256: try BackupManifest.sha256(of: partial),
            engine: settings.databaseURL == nil ? "sqlite" : "postgres",
            database: settings.databaseDescription,
            takenAt: takenAt,
            siwaVersion: SiwaVersion.current,
            schemaVersion: facts.schema,
            newestAuditEvent: facts.audit,
            signingKeys: facts.keys,
            sealedItems: facts.census.byKeyText
        )
    }

    /// `20260301T020000Z`: a time in UTC as backups are named.
    static func stamp(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(
            format: "%04d%02d%02dT%02d%02d%02dZ",
            parts.year ?? 0,
            parts.month ?? 0,
            parts.day ?? 0,
            parts.hour ?? 0,
            parts.minute ?? 0,
            parts.second ?? 0
        )
    }

    /// An error in the operator's words: a store error's reason, a tool's own description.
    static func describe(_ error: any Error) -> String {
        if let error = error as? StoreError { return error.reason }
        return "\(error)"
    }
}
