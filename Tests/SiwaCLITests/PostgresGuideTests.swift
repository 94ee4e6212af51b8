import AccountStore
import AuthServer
import Foundation
import Logging
import SiwaTesting
import Testing

@testable import AccountStoreSQL
@testable import SiwaCLI

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Day two on PostgreSQL, with the guide's own lines (`DeploymentTests.guideLine`): the URL in the file `siwa.json`
/// names, as section 5 sets it up, then doctor, migrate, the admin role and service tokens of admin.md, a signing-key
/// rotation, a data-key rotation and retirement, a backup, a restore with what it undid re-applied, and an upgrade
/// with its rollback.
extension DeploymentTests {
    @Test(.enabled(if: testPostgresURL != nil, "needs scripts/with-postgres"))
    func theGuidesCommandsRunAsWrittenOnPostgreSQL() async throws {
        let writeURL = try Self.guideLine("install -m 0640 -g siwa /dev/stdin /etc/siwa/database-url")
        let databaseLine = try Self.guideLine(#""database": {"urlFile": "/etc/siwa/database-url"}"#)
        let migrate = try Self.guideLine("runuser -u siwa -- siwa migrate --config /etc/siwa/siwa.json")
        let doctor = try Self.guideLine("runuser -u siwa -- siwa doctor --config /etc/siwa/siwa.json")
        let grantAdmin = try Self.guideLine("siwa users grant-admin ID", in: "admin.md")
        let createToken = try Self.guideLine("siwa admin tokens create --name nightly-report", in: "admin.md")
        let revokeToken = try Self.guideLine("siwa admin tokens revoke nightly-report", in: "admin.md")
        let rotateSigningKey = try Self.guideLine("runuser -u siwa -- siwa keys rotate --config")
        let dataKeys = try Self.guideLine("runuser -u siwa -- siwa keys data-keys --config")
        let rotateDataKey = try Self.guideLine("runuser -u siwa -- siwa keys rotate-data-key --config")
        let retire = try Self.guideLine("siwa keys retire-data-key 0123456789abcdef")
        let createBackupFolder = try Self.guideLine("install -d -m 0700 -o siwa -g siwa /var/backups/siwa")
        let backUp = try Self.guideLine("siwa backup --output /var/backups/siwa --config")
        let restore = try Self.guideLine("siwa restore /var/backups/siwa/siwa-20250301T020000Z.sqlite")
        let reapply = try Self.guideLine("siwa restore --reapply /var/backups/siwa/siwa-undone-")

        try await withFreshPostgresDatabase(testPostgresURL!, prefix: "siwa_guide_") { url in
            let password = try #require(URLComponents(string: url)?.password)
            // Section 5's line of siwa.json, with this test's paths.
            let fragment = try #require(
                try JSONSerialization.jsonObject(
                    with: Data("{\(databaseLine.trimmingCharacters(in: .whitespaces).dropLast())}".utf8)
                )
                    as? [String: Any]
            )
            let configured = try #require(fragment["database"] as? [String: String])
            try await withTemporaryFolder("siwa-guide-etc") { etc in
                let urlFile = etc.path + "/database-url"
                let database = configured.mapValues { $0.replacing("/etc/siwa/database-url", with: urlFile) }
                try await withGuidesFolder(database: database) { guide in
                    var names = [
                        "/etc/siwa/database-url": urlFile, "/var/lib/siwa": guide.folder.path,
                        "/var/backups/siwa": guide.folder.path + "/backups/siwa",
                        "postgres://siwa:PASSWORD@127.0.0.1:5432/siwa": url,
                    ]
                    func run(
                        _ line: String,
                        _ extra: [String: String] = [:]
                    ) async throws -> (
                        status: Int32, stdout: String, stderr: String
                    ) {
                        let result = try await guide.shell(line, names.merging(extra) { $1 })
                        #expect(!(result.stdout + result.stderr).contains(password), "\(line) printed the password")
                        return result
                    }
                    #expect(try await run(writeURL).status == 0)
                    #expect(try mode(urlFile) == 0o640)
                    let place = "PostgreSQL " + ServerSettings.shown(postgresURL: url) + " (SIWA_DATABASE_URL_FILE)"

                    let checked = try await run(doctor)
                    #expect(checked.status != 1, "\(checked.stdout)")
                    #expect(checked.stdout.contains("✓ SIWA_DATABASE_URL_FILE: PostgreSQL"), "\(checked.stdout)")
                    let migrated = try await run(migrate)
                    #expect(migrated.status == 0, "\(migrated.stderr)")
                    #expect(migrated.stderr.hasPrefix("database: \(place)\n"), "\(migrated.stderr)")
                    #expect(!FileManager.default.fileExists(atPath: guide.folder.path + "/siwa.sqlite"))

                    let keyFile = guide.folder.path + "/siwa-data.key"
                    let old = try #require(try DataKeyRing.read(file: keyFile)).primary.id
                    let (before, token) = try await guide.withServer { _ in
                        let before = try await guide.signIn("before@example.com")
                        let me = try await call("GET", guide.base + "/api/me", bearer: before.accessToken)
                        let id = try #require(me.body["id"] as? String)
                        let granted = try await run(grantAdmin.replacing(" ID ", with: " \(id) "))
                        #expect(granted.status == 0, "\(granted.stderr)")
                        let created = try await run(createToken)
                        #expect(created.status == 0, "\(created.stderr)")
                        let token = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                        #expect(token.hasPrefix("siwa_at_"), "\(created.stdout)")
                        #expect(try await call("GET", guide.base + "/admin/api/users", bearer: token).status == 200)

                        let rotated = try await run(rotateSigningKey)
                        #expect(rotated.status == 0 && rotated.stdout.contains("current key:"), "\(rotated.stderr)")
                        // The data key, as section 7 runs it (a script says --yes, as its comment says).
                        #expect(try await run(dataKeys).stdout.contains(old.description))
                        let resealed = try await run(rotateDataKey + " --yes")
                        #expect(resealed.status == 0, "\(resealed.stderr)")
                        let counted = try await run(dataKeys)
                        #expect(counted.stdout.contains("can be retired"), "\(counted.stdout)")
                        let retired = try await run(retire.replacing("0123456789abcdef", with: old.description))
                        #expect(retired.status == 0, "\(retired.stderr)")
                        // PostgreSQL's items are all under the new key: this is the database the server uses.
                        let signedIn = try await guide.signIn("during@example.com")
                        #expect(
                            try await call("GET", guide.base + "/api/me", bearer: signedIn.accessToken).status == 200
                        )
                        return (before, token)
                    }

                    // Section 6: a backup while serving; then a revocation, a sign-out and a new account.
                    let backedUp = try await guide.withServer { _ in
                        #expect(try await run(createBackupFolder).status == 0)
                        let backedUp = try await run(backUp)
                        #expect(backedUp.status == 0, "\(backedUp.stderr)")
                        #expect(try await run(revokeToken).status == 0)
                        #expect(try await call("GET", guide.base + "/admin/api/users", bearer: token).status == 401)
                        let ended = try await call(
                            "POST",
                            guide.base + "/auth/logout",
                            json: ["refreshToken": before.refreshToken]
                        ).status
                        #expect(ended == 200 || ended == 204, "logout: \(ended)")
                        _ = try await guide.signIn("after@example.com")
                        return backedUp
                    }
                    let folder = guide.folder.path + "/backups/siwa"
                    let dump = try #require(
                        try FileManager.default.contentsOfDirectory(atPath: folder).first { $0.hasSuffix(".dump") },
                        "\(backedUp.stdout)"
                    )
                    #expect(try mode(folder + "/" + dump) == 0o600)
                    names["siwa-20250301T020000Z.sqlite"] = dump

                    // Refused under a serving instance, then with siwa stopped: what it undid, and re-applied.
                    try await guide.withServer { _ in
                        let refused = try await run(restore)
                        #expect(refused.status == 2, "\(refused.stderr)")
                        #expect(refused.stderr.contains("connection(s) of siwa serve are open"), "\(refused.stderr)")
                    }
                    let restored = try await run(restore)
                    #expect(restored.status == 0, "\(restored.stderr)")
                    for line in [
                        "1 account(s) created: gone", "1 service token(s) revoked: valid again until re-applied",
                        "1 session(s) ended",
                    ] {
                        #expect(restored.stdout.contains(line), "\(restored.stdout)")
                    }
                    let undone = try #require(
                        try FileManager.default.contentsOfDirectory(atPath: folder).first {
                            $0.hasPrefix("siwa-undone-")
                        }
                    )
                    try await guide.withServer { _ in
                        let answer = try await call("GET", guide.base + "/admin/api/users", bearer: token)
                        #expect(answer.status == 200, "the revocation after the backup is undone")
                    }
                    let reapplied = try await run(reapply, ["siwa-undone-20250302T090000Z.jsonl": undone])
                    #expect(reapplied.status == 0, "\(reapplied.stderr)")
                    #expect(reapplied.stdout.contains("1 service token(s) revoked"), "\(reapplied.stdout)")
                    #expect(reapplied.stdout.contains("1 session(s) ended"), "\(reapplied.stdout)")
                    #expect(try await run(doctor).status != 1)
                    try await guide.withServer { _ in
                        #expect(try await call("GET", guide.base + "/admin/api/users", bearer: token).status == 401)
                        let refresh = try await call(
                            "POST",
                            guide.base + "/auth/refresh",
                            json: ["refreshToken": before.refreshToken]
                        ).status
                        #expect(refresh == 401, "the sign-out after the backup is re-applied")
                    }
                }
            }
        }
    }

    /// Section 8 on PostgreSQL: a database an older release left (this build's migrations stopped at version 8, with
    /// that release's backup of it), the guide's upgrade lines, and its rollback: the restore of the pre-upgrade
    /// backup brings version 8 back, and doctor says serve would upgrade it again. This build plays both binaries.
    @Test(.enabled(if: testPostgresURL != nil, "needs scripts/with-postgres"))
    func anUpgradeRollsBackAsTheGuideSays() async throws {
        let lines = try [
            "install -m 0755 /usr/local/bin/siwa /usr/local/bin/siwa-previous",
            "install -m 0755 siwa /usr/local/bin/siwa-next", "siwa-next migrate --dry-run",
            "install -m 0755 /usr/local/bin/siwa-next /usr/local/bin/siwa",
            "runuser -u siwa -- siwa migrate --config /etc/siwa/siwa.json",
        ].map { try Self.guideLine($0) }
        let restore = try Self.guideLine("siwa restore /var/backups/siwa/siwa-20250301T020000Z.sqlite")
        let putBack = try Self.guideLine("install -m 0755 /usr/local/bin/siwa-previous /usr/local/bin/siwa")
        let doctor = try Self.guideLine("runuser -u siwa -- siwa doctor --config /etc/siwa/siwa.json")

        try await withFreshPostgresDatabase(testPostgresURL!, prefix: "siwa_upgrade_") { url in
            try await withGuidesFolder(database: ["url": url]) { guide in
                let bin = guide.folder.path + "/bin"
                try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
                try FileManager.default.copyItem(atPath: guide.binary, toPath: bin + "/siwa")
                try FileManager.default.copyItem(atPath: guide.binary, toPath: guide.folder.path + "/siwa")
                let backups = guide.folder.path + "/backups"
                try FileManager.default.createDirectory(atPath: backups, withIntermediateDirectories: true)
                var names = ["/usr/local/bin": bin, "/var/backups/siwa": backups, "/var/lib/siwa": guide.folder.path]

                // The older release's database, and its backup taken before the upgrade.
                let settings = try ServerSettings.load(
                    from: SettingsSource(environment: [
                        "SIWA_DATABASE_URL": url, "SIWA_DATA_KEY_FILE": guide.folder.path + "/siwa-data.key",
                        "SIWA_BUNDLE_IDS": "com.example.siwa.demo",
                    ]),
                    createsDataKey: true,
                    purpose: .database
                )
                let name = "siwa-20250301T020000Z.dump"
                try await SQLSchema.$migrationTarget.withValue(8) {
                    let store = try await SQLAccountStore.postgres(url: url, logger: Logger(label: "test"))
                    do {
                        let manifest = try await BackupCommand.backUp(
                            store,
                            to: backups + "/" + name,
                            name: name,
                            settings: settings,
                            logger: Logger(label: "test")
                        )
                        try manifest.write(to: BackupManifest.path(of: backups + "/" + name))
                        #expect(manifest.schemaVersion == 8)
                    } catch {
                        await store.shutdown()
                        throw error
                    }
                    await store.shutdown()
                }
                names["siwa-20250301T020000Z.sqlite"] = name

                let installed = try await guide.shell(lines[0], names)
                #expect(installed.status == 0, "\(installed.stderr)")
                #expect(try await guide.shell(lines[1], names).status == 0)
                let dry = try await guide.shell(
                    lines[2].replacing("-- siwa-next ", with: "-- \(bin)/siwa-next "),
                    names
                )
                #expect(dry.stdout.contains("would upgrade the schema from version 8 to"), "\(dry.stdout)\(dry.stderr)")
                #expect(try await guide.shell(lines[3], names).status == 0)
                let upgraded = try await guide.shell(lines[4], names)
                #expect(upgraded.stdout.contains("upgraded the schema from version 8"), "\(upgraded.stdout)")

                // The rollback: the pre-upgrade backup, then the previous binary.
                let rolledBack = try await guide.shell(restore, names)
                #expect(rolledBack.status == 0, "\(rolledBack.stderr)")
                #expect(rolledBack.stdout.contains("(schema version 8)"), "\(rolledBack.stdout)")
                #expect(try await guide.shell(putBack, names).status == 0)
                let checked = try await guide.shell(doctor, names)
                #expect(checked.stdout.contains("the schema is at version 8"), "\(checked.stdout)")
            }
        }
    }
}
