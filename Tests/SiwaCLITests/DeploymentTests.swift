import AuthServer
import Foundation
import SiwaTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One JSON request to a server the test started; the status and the JSON object answered.
func call(
    _ method: String,
    _ url: String,
    json: [String: Any]? = nil,
    bearer: String? = nil
) async throws -> (status: Int, body: [String: Any]) {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    if let json {
        request.httpBody = try JSONSerialization.data(withJSONObject: json)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    }
    if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
    let (data, response) = try await URLSession.shared.data(for: request)
    let body = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, body)
}

/// `docs/deploy.md`, followed: the binary started from a clean folder with only the files the guide names (the
/// configuration file of `docs/deployment/siwa.json`, the team's `.p8` key), no environment but `PATH`, signs a user in
/// with Apple (the emulator plays Apple) and keeps its files private. `SIWA_RELEASE_BINARY` names a release build to
/// test (`swift build -c release --static-swift-stdlib`); the test command uses the debug build of the same code.
@Suite("The deployment guide")
struct DeploymentTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func theGuidesFilesAloneRunSiwaFromACleanFolder() async throws {
        try await withGuidesFolder { guide in
            let doctor = try await runChildProcess(
                guide.binary,
                arguments: ["doctor", "--config", "siwa.json"],
                environment: guide.environment,
                directory: guide.folder.path
            )
            #expect(
                doctor.status != 1,
                "doctor says serve would refuse: \(String(decoding: doctor.stdout, as: UTF8.self))"
            )

            let log = try await guide.withServer { log in
                let signIn = try await guide.signIn("deployed@example.com")
                let me = try await call("GET", guide.base + "/api/me", bearer: signIn.accessToken)
                #expect(me.status == 200)
                #expect(me.body["email"] as? String == "deployed@example.com", "\(me.body)")
                // The metrics are on their own port, so the guide's nginx, which forwards every path, cannot publish
                // them.
                #expect(try await call("GET", guide.base + "/metrics").status == 404)
                let (exposition, scrape) = try await URLSession.shared.data(
                    from: try #require(URL(string: "http://127.0.0.1:\(guide.metricsPort)/metrics"))
                )
                #expect((scrape as? HTTPURLResponse)?.statusCode == 200)
                #expect(String(decoding: exposition, as: UTF8.self).contains("siwa_sign_ins_total"))
                return log
            }
            for file in ["siwa-data.key", "siwa.sqlite"] {
                #expect(try mode(guide.folder.url.appendingPathComponent(file).path) == 0o600, "\(file)")
            }
            // The operator's commands read the same file.
            let users = try await guide.siwa(["users", "list", "--config", "siwa.json"])
            #expect(users.stdout.contains("deployed@example.com"))
            // The log is JSON lines, as the guide's file asks; the first start says which data key file it created
            // and that it must be backed up.
            let text = try String(contentsOfFile: log, encoding: .utf8)
            let firstLine = text.split(separator: "\n").first ?? ""
            #expect(firstLine.hasPrefix(#"{"time":"#), "\(firstLine)")
            let keyFile = guide.folder.url.appendingPathComponent("siwa-data.key").path
            #expect(text.contains("created a new data key in \(keyFile): back that file up now"), "\(text)")
            // One access line per request, at info, naming the account the sign-in signed in.
            let access = text.split(separator: "\n").filter { $0.contains(#""route":"/auth/apple/native""#) }
            #expect(access.count == 1, "\(access)")
            #expect(access.first?.contains(#""level":"info""#) == true)
            #expect(access.first?.contains(#""user":""#) == true, "\(access)")
        }
    }

    /// Section 6's drill, with the guide's own lines: back up while serving, rotate and retire the data key, and
    /// restore the backup from before the retirement. The restore refuses, naming the kept key, until it is back; then
    /// it lists what it undid, and the session from before the backup refreshes.
    @Test func aBackupFromBeforeARetirementRestoresWithTheKeptKey() async throws {
        let createBackupFolder = try Self.guideLine("install -d -m 0700 -o siwa -g siwa /var/backups/siwa")
        let backUp = try Self.guideLine("siwa backup --output /var/backups/siwa --config")
        let restore = try Self.guideLine("siwa restore /var/backups/siwa/siwa-20250301T020000Z.sqlite")
        let doctor = try Self.guideLine("runuser -u siwa -- siwa doctor --config /etc/siwa/siwa.json")
        let addKeptKey = try Self.guideLine("cat /var/lib/siwa/retired-data-keys/")
        let resume = try Self.guideLine("siwa keys rotate-data-key --resume")
        let retire = try Self.guideLine("siwa keys retire-data-key 0123456789abcdef")

        try await withGuidesFolder { guide in
            let keyFile = guide.folder.url.appendingPathComponent("siwa-data.key").path
            let backupFolder = guide.folder.path + "/backups/siwa"
            var names = ["/var/lib/siwa": guide.folder.path, "/var/backups/siwa": backupFolder]
            let before = try await guide.withServer { _ in
                let before = try await guide.signIn("before@example.com")
                #expect(try await guide.shell(createBackupFolder, names).status == 0)
                let backedUp = try await guide.shell(backUp, names)
                #expect(backedUp.status == 0, "\(backedUp.stderr)")
                #expect(backedUp.stdout.contains("backed up SQLite"), "\(backedUp.stdout)")
                return before
            }
            let backup = try #require(
                try FileManager.default.contentsOfDirectory(atPath: backupFolder).first { $0.hasSuffix(".sqlite") }
            )
            #expect(try mode(backupFolder) == 0o700, "the backup folder")
            #expect(try mode(backupFolder + "/" + backup) == 0o600, "the backup")
            #expect(try mode(backupFolder + "/" + backup + ".json") == 0o600, "the manifest")
            names["siwa-20250301T020000Z.sqlite"] = backup

            // Rotate and retire with the server running; a user signs up after.
            let old = try #require(try DataKeyRing.read(file: keyFile)).primary.id
            try await guide.withServer { _ in
                let rotated = try await guide.siwa(["keys", "rotate-data-key", "--yes", "--config", "siwa.json"])
                #expect(rotated.status == 0, "\(rotated.stderr)")
                let retired = try await guide.shell(retire.replacing("0123456789abcdef", with: old.description), names)
                #expect(retired.status == 0, "\(retired.stderr)")
                _ = try await guide.signIn("after@example.com")
            }
            #expect(try #require(try DataKeyRing.read(file: keyFile)).key(old) == nil, "the key file lost the old key")
            let kept = try #require(
                try FileManager.default.contentsOfDirectory(atPath: guide.folder.path + "/retired-data-keys").first
            )
            let keptPath = guide.folder.path + "/retired-data-keys/" + kept
            names["/var/lib/siwa/retired-data-keys/0123456789abcdef-2025-03-02.key"] = keptPath

            // systemctl stop siwa: the server above has stopped. The backup needs the retired key: nothing replaced.
            let refused = try await guide.shell(restore, names)
            #expect(refused.status == 2, "\(refused.stdout)\(refused.stderr)")
            #expect(
                refused.stderr.contains("sealed under data key \(old), which \(keyFile) lacks")
                    && refused.stderr.contains("cat \(keptPath) >> \(keyFile)"),
                "\(refused.stderr)"
            )
            let users = try await guide.siwa(["users", "list", "--config", "siwa.json"])
            #expect(users.stdout.contains("after@example.com"), "the refused restore replaced nothing")

            #expect(try await guide.shell(addKeptKey, names).status == 0)
            let restored = try await guide.shell(restore, names)
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(restored.stdout.contains("1 account(s) created: gone"), "\(restored.stdout)")
            // Two accounts' creations were handed sequences 1 and 2; the backup has only the first.
            #expect(
                restored.stdout.contains("lifecycle events continue after sequence 2"),
                "\(restored.stdout)"
            )
            #expect(try mode(guide.folder.url.appendingPathComponent("siwa.sqlite").path) == 0o600)
            let accepted = try await guide.shell(doctor, names)
            #expect(accepted.status != 1, "\(accepted.stdout)")
            #expect(
                accepted.stdout.contains("✓ SIWA_DATA_KEY_FILE: the keys open the database's"),
                "\(accepted.stdout)"
            )

            // systemctl start siwa: the session from before the backup refreshes, and its user signs in again.
            try await guide.withServer { _ in
                let refreshed = try await call(
                    "POST",
                    guide.base + "/auth/refresh",
                    json: ["refreshToken": before.refreshToken]
                )
                #expect(refreshed.status == 200, "\(refreshed.body)")
                let again = try await guide.signIn("before@example.com")
                let me = try await call("GET", guide.base + "/api/me", bearer: again.accessToken)
                #expect(me.body["email"] as? String == "before@example.com", "\(me.body)")
                let resumed = try await guide.shell(resume, names)
                #expect(resumed.status == 0, "\(resumed.stderr)")

                // A backend that read the events feed up to 2 before the restore misses no later event.
                _ = try await guide.signIn("after-restore@example.com")
                let token = try await guide.siwa([
                    "admin", "tokens", "create", "--name", "feed", "--scope", "read", "--config", "siwa.json",
                ])
                let secret = token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                let feed = try await call("GET", guide.base + "/admin/api/events?after=2", bearer: secret)
                let events = feed.body["events"] as? [[String: Any]] ?? []
                #expect(events.compactMap { $0["sequence"] as? Int } == [3], "\(feed.body)")
                #expect(events.first?["type"] as? String == "user.created")
            }
            let census = try await guide.siwa(["keys", "data-keys", "--json", "--config", "siwa.json"])
            let report = try JSONSerialization.jsonObject(with: Data(census.stdout.utf8)) as? [String: Any]
            let keys = try #require(report?["keys"] as? [[String: Any]])
            #expect(keys.last?["id"] as? String == old.description && keys.last?["retirable"] as? Bool == true)
        }
    }

    /// A restore refuses under a serving siwa, and a siwa does not start under a restore: the lock beside the file.
    @Test func aSQLiteRestoreRefusesUnderARunningSiwa() async throws {
        let backUp = try Self.guideLine("siwa backup --output /var/backups/siwa --config")
        let restore = try Self.guideLine("siwa restore /var/backups/siwa/siwa-20250301T020000Z.sqlite")
        try await withGuidesFolder { guide in
            let backupFolder = guide.folder.path + "/backups/siwa"
            var names = ["/var/lib/siwa": guide.folder.path, "/var/backups/siwa": backupFolder]
            try await guide.withServer { _ in
                #expect(try await guide.shell(backUp, names).status == 0)
                let backup = try #require(
                    try FileManager.default.contentsOfDirectory(atPath: backupFolder).first { $0.hasSuffix(".sqlite") }
                )
                names["siwa-20250301T020000Z.sqlite"] = backup
                let refused = try await guide.shell(restore, names)
                #expect(refused.status == 2, "\(refused.stderr)")
                #expect(refused.stderr.contains("siwa serve is running on"), "\(refused.stderr)")
            }
            #expect(try await guide.shell(restore, names).status == 0)
        }
    }

    /// The guide names the files the test above and the proxy tests use, so that it cannot describe others.
    @Test func theGuideNamesTheTestedFiles() throws {
        let guide = try String(contentsOf: Self.root.appendingPathComponent("docs/deploy.md"), encoding: .utf8)
        for name in [
            "deployment/siwa.json", "deployment/siwa.service", "deployment/nginx-proxy.conf",
            "deployment/nginx-tls.conf", "swift build -c release --static-swift-stdlib", "LimitNOFILE",
            "scripts/release", "podman run",
            "siwa migrate", "siwa backup", "siwa restore", "pg_dump",
        ] {
            #expect(guide.contains(name), "docs/deploy.md does not mention \(name)")
        }
        let unit = try String(
            contentsOf: Self.root.appendingPathComponent("docs/deployment/siwa.service"),
            encoding: .utf8
        )
        #expect(unit.contains("ExecStart=/usr/local/bin/siwa serve --config /etc/siwa/siwa.json"))
    }

    // MARK: Helpers

    /// The server's folder as the guide leaves it, with Apple played by the emulator.
    struct GuidesFolder {
        let folder: TemporaryFolder
        /// The `siwa` under test.
        let binary: String
        /// No environment but `PATH`.
        let environment: [String: String]
        let port: Int
        /// The operator port, where `/metrics` is answered (the guide's file names one).
        let metricsPort: Int
        let emulatorPort: Int
        var base: String { "http://127.0.0.1:\(port)" }

        /// Runs `siwa` in the folder.
        func siwa(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
            let result = try await runChildProcess(
                binary,
                arguments: arguments,
                environment: environment,
                directory: folder.path
            )
            return (
                result.status, String(decoding: result.stdout, as: UTF8.self),
                String(decoding: result.stderr, as: UTF8.self)
            )
        }

        /// Runs one of the guide's command lines with `sh`, its paths replaced by `names` (the guide's path: this
        /// test's), as the `siwa` user would: `runuser -u siwa --` and `-o siwa -g siwa` are dropped, and `siwa` is the
        /// binary under test.
        func shell(
            _ line: String,
            _ names: [String: String]
        ) async throws -> (status: Int32, stdout: String, stderr: String) {
            var command = line.replacingOccurrences(of: "runuser -u siwa -- ", with: "")
                .replacingOccurrences(of: " -o siwa -g siwa", with: "")
                .replacingOccurrences(of: " -g siwa", with: "")
                .replacingOccurrences(of: "/etc/siwa/siwa.json", with: folder.path + "/siwa.json")
            // The longest first, so that a folder does not replace part of a file's path in it.
            for (guide, here) in names.sorted(by: { $0.key.count > $1.key.count }) {
                command = command.replacingOccurrences(of: guide, with: here)
            }
            let binaries = URL(fileURLWithPath: binary).deletingLastPathComponent().path
            var environment = environment
            environment["PATH"] = binaries + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
            let result = try await runChildProcess(
                "/bin/sh",
                arguments: ["-c", command],
                environment: environment,
                directory: folder.path
            )
            return (
                result.status, String(decoding: result.stdout, as: UTF8.self),
                String(decoding: result.stderr, as: UTF8.self)
            )
        }

        /// Runs `siwa serve --config siwa.json` while `body` runs, then stops it (SIGTERM) and waits for it.
        func withServer<R>(_ body: (_ log: String) async throws -> R) async throws -> R {
            let log = folder.url.appendingPathComponent("serve-\(UUID().uuidString).log").path
            let server = try ChildProcess(
                binary,
                arguments: ["serve", "--config", "siwa.json"],
                environment: environment,
                directory: folder.path,
                stdout: log,
                stderr: log
            )
            defer { server.terminate(signal: SIGTERM) }
            try #require(
                try await SiwaProcess.waitUntilServing(port: port),
                "siwa serve did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")"
            )
            #expect(try await call("GET", base + "/readyz").status == 200)
            return try await body(log)
        }

        /// Signs `email` in natively, the emulator playing Apple; the session's tokens.
        func signIn(_ email: String) async throws -> (accessToken: String, refreshToken: String) {
            let credential = try await call(
                "POST",
                "http://127.0.0.1:\(emulatorPort)/emulator/native-sign-in",
                json: ["clientId": "com.example.siwa.demo", "email": email, "givenName": "Dee"]
            )
            try #require(credential.status == 200, "\(credential.body)")
            let signIn = try await call(
                "POST",
                base + "/auth/apple/native",
                json: [
                    "identityToken": try #require(credential.body["identityToken"] as? String),
                    "authorizationCode": try #require(credential.body["authorizationCode"] as? String),
                ]
            )
            try #require(signIn.status == 200, "\(signIn.body)")
            return (
                try #require(signIn.body["accessToken"] as? String),
                try #require(signIn.body["refreshToken"] as? String)
            )
        }
    }

    /// An empty server folder with only what the guide names, `siwa.json` (the guide's, with this machine's values)
    /// and the team's key, while the emulator plays Apple.
    /// - Parameter database: the configuration's `database` object; by default a SQLite file in the folder.
    func withGuidesFolder(
        database: [String: Any]? = nil,
        _ body: (GuidesFolder) async throws -> Void
    ) async throws {
        // Apple: the emulator's demo team (DEMOTEAM01, key DEMOKEY001, com.example.siwa.demo).
        try await withTemporaryFolder("siwa-deploy-apple") { apple in
            let (emulator, emulatorPort) = try await SiwaProcess.startEmulator(in: apple.url)
            defer { SiwaProcess.stopEmulator(emulator) }
            try await withTemporaryFolder("siwa-deploy") { folder in
                let keyFile = folder.url.appendingPathComponent("AuthKey_DEMOKEY001.p8").path
                try FileManager.default.copyItem(
                    atPath: apple.url.appendingPathComponent("siwa-emulator/AuthKey_DEMOKEY001.p8").path,
                    toPath: keyFile
                )
                let example = try Data(contentsOf: Self.root.appendingPathComponent("docs/deployment/siwa.json"))
                var configuration = try #require(try JSONSerialization.jsonObject(with: example) as? [String: Any])
                let port = try freeLoopbackPort(in: 10_000..<20_000)
                let metricsPort = try freeLoopbackPort(in: 10_000..<20_000)
                // The guide's file with this machine's values: the team, its key, Apple's address, the folders, and
                // ports nothing else here uses.
                let metrics = try #require(configuration["metrics"] as? [String: Any], "the guide's file has metrics")
                configuration.merge([
                    "port": port, "metrics": metrics.merging(["port": metricsPort]) { $1 },
                    "appleBaseURL": "http://127.0.0.1:\(emulatorPort)", "teamID": "DEMOTEAM01",
                    "keyID": "DEMOKEY001", "privateKeyFile": keyFile, "bundleIDs": ["com.example.siwa.demo"],
                    "servicesID": "com.example.siwa.demo.web",
                    "dataKeyFile": folder.url.appendingPathComponent("siwa-data.key").path,
                    "database": database ?? ["path": folder.url.appendingPathComponent("siwa.sqlite").path],
                ]) { $1 }
                try JSONSerialization.data(withJSONObject: configuration)
                    .write(to: folder.url.appendingPathComponent("siwa.json"))
                try await body(
                    GuidesFolder(
                        folder: folder,
                        binary: ProcessInfo.processInfo.environment["SIWA_RELEASE_BINARY"]
                            ?? SiwaProcess.executable.path,
                        environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"],
                        port: port,
                        metricsPort: metricsPort,
                        emulatorPort: emulatorPort
                    )
                )
            }
        }
    }

    /// The line of `document` (in `docs/`) that holds `fragment`: a code block's whole line without its trailing
    /// `# comment`, or the inline code span around it. The tests run the guide's lines as written, never retyped.
    static func guideLine(_ fragment: String, in document: String = "deploy.md") throws -> String {
        let text = try String(contentsOf: root.appendingPathComponent("docs/" + document), encoding: .utf8)
        var inBlock = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("```") {
                inBlock.toggle()
                continue
            }
            guard line.contains(fragment) else { continue }
            if inBlock {
                return line.replacing(/\s{2,}#\s.*$/, with: "")
            }
            for span in line.split(separator: "`", omittingEmptySubsequences: false).enumerated()
            where span.offset % 2 == 1 && span.element.contains(fragment) {
                return String(span.element)
            }
        }
        throw GuideLineMissing(fragment: fragment, document: document)
    }

    struct GuideLineMissing: Error, CustomStringConvertible {
        let fragment: String
        let document: String
        var description: String { "docs/\(document) has no line with \(fragment)" }
    }

    func mode(_ path: String) throws -> Int? {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
    }
}
