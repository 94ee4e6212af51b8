import AccountStore
import AccountStoreSQL
import AppleSignIn
import ArgumentParser
import AuthServer
import Foundation
import Logging

/// `siwa doctor`: checks a configuration, with `--apple` also live at Apple, and says what to change.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check siwa's settings (with --apple, live at Apple): each finding says what to change.",
        discussion: """
            Reads the settings exactly as siwa serve does (SIWA_* variables, <VARIABLE>_FILE secret files, a .env \
            file, --config FILE), then checks each, and whether the data keys open what the database holds sealed \
            (it reads the database, never creates or migrates it). Exit status: 0 when all is right, 1 when siwa \
            serve would refuse to start, 3 when it would start but a finding needs attention (a missing Apple key, \
            say), 2 when the settings cannot be read at all. --reference prints every setting \
            (docs/configuration.md).

            --apple also calls Apple (or the emulator SIWA_APPLE_BASE_URL names): for each client id it sends a \
            client secret with an authorization code that cannot be valid, and reports whether Apple accepts the \
            secret (invalid_grant) or refuses it (invalid_client, with the likely cause); it fetches Apple's keys \
            (naming each kid SIWA_APPLE_KEY_SET lacks) and compares the clocks. A refusal exits 3. The secret and the \
            key are never printed.

            Example:
              siwa doctor --config siwa.json
              siwa doctor --apple
            """
    )

    @Option(help: "A configuration file (.json, .yaml, or KEY=value lines); SIWA_* variables override it.")
    var config: String?

    @Flag(help: "Print JSON: {\"ok\", \"serveRefuses\", \"findings\": [{\"setting\", \"ok\", \"message\"}]}.")
    var json = false

    @Flag(help: "Print the reference of every setting as Markdown and exit.")
    var reference = false

    @Flag(
        help: "Also check the Apple credentials live: one call per client id to Apple's token endpoint, and its keys."
    )
    var apple = false

    /// One check's result.
    struct Finding: Encodable {
        var setting: String
        var ok: Bool
        var message: String
        /// `true` for a remark that needs no change (absent from the JSON otherwise).
        var note: Bool? = nil
        /// `true` for a problem that stops `siwa serve` (absent from the JSON otherwise); a finding that is not `ok`
        /// without it is a warning, which `serve` logs at start in the same words.
        var refuses: Bool? = nil

        /// A problem that stops `siwa serve`.
        static func refusal(_ setting: String, _ message: String) -> Finding {
            Finding(setting: setting, ok: false, message: message, refuses: true)
        }
    }

    /// Who reads the findings.
    enum Reader {
        /// `siwa doctor`: every check, the database's connection and its sealed data included.
        case doctor
        /// `siwa serve` at start, once its settings have been read: the checks that need no store, and the pool's
        /// size. The store's own opening checks the rest (the connection, the data key against the signing keys).
        case serve
    }

    func run() async throws {
        if reference {
            print(SettingsCatalog.markdownReference, terminator: "")
            return
        }
        let source: SettingsSource
        do {
            source = try await SettingsSource.load(configFile: config)
        } catch let problem as ServerSettings.Problem {
            Terminal.report(.invalidConfiguration(problem.variable, problem.fix), json: json)
            throw ExitCode(2)
        }
        var findings = await Self.review(source, for: .doctor)
        if apple {
            let settings = try? ServerSettings.load(
                from: source,
                createsDataKey: false,
                purpose: .database,
                refusesUnknownKeys: false
            )
            findings += await Self.checkApple(settings, environment: Self.environment(of: source))
        }
        let serveRefuses = findings.contains { $0.refuses == true }
        if json {
            struct Report: Encodable {
                var ok: Bool
                var serveRefuses: Bool
                var findings: [Finding]
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(
                String(
                    decoding: try encoder.encode(
                        Report(ok: findings.allSatisfy(\.ok), serveRefuses: serveRefuses, findings: findings)
                    ),
                    as: UTF8.self
                )
            )
        } else {
            let terminal = Terminal()
            for finding in findings {
                let mark =
                    finding.note == true
                    ? terminal.dim("•")
                    : finding.ok
                        ? terminal.green("✓") : finding.refuses == true ? terminal.red("✗") : terminal.yellow("!")
                print("\(mark) \(finding.setting): \(finding.message)")
            }
            let problems = findings.filter { $0.refuses == true }.count
            let warnings = findings.filter { !$0.ok && $0.refuses != true }.count
            if problems + warnings == 0 {
                print(terminal.green("configuration looks right"))
            } else if problems > 0 {
                print(
                    terminal.red(
                        "siwa serve would refuse to start: \(problems) problem(s) (✗) to fix"
                            + (warnings > 0 ? ", and \(warnings) warning(s) (!)" : "")
                    )
                )
            } else {
                print(
                    terminal.yellow("siwa serve would start and log \(warnings) warning(s) (!): each needs attention")
                )
            }
        }
        if serveRefuses { throw ExitCode(1) }
        if findings.contains(where: { !$0.ok }) { throw ExitCode(3) }
    }

    /// Every finding about the settings `source` holds: what `siwa doctor` prints, and what `siwa serve` refuses or
    /// warns about at start, so that the two cannot disagree.
    static func review(_ source: SettingsSource, for reader: Reader) async -> [Finding] {
        let environment = Self.environment(of: source)
        var findings = Self.check(environment)
        if reader == .doctor { findings.append(Self.checkServeReads(source)) }
        let allowsUnknown =
            environment["SIWA_ALLOW_UNKNOWN_SETTINGS"].map { ["1", "true", "yes", "on"].contains($0.lowercased()) }
            ?? false
        let file = source.configFile ?? "the configuration file"
        for key in source.unknownFileKeys {
            let origin = key.hasPrefix("SIWA_") && source.configFile == nil ? ".env" : file
            findings.append(
                Finding(
                    setting: key,
                    ok: false,
                    message: "\(origin) sets \(SettingsCatalog.unknownKeyFix(key))",
                    refuses: allowsUnknown ? nil : true
                )
            )
        }
        for variable in source.unknownVariables {
            findings.append(
                Finding(
                    setting: variable,
                    ok: false,
                    message: "the environment sets \(SettingsCatalog.unknownKeyFix(variable))"
                )
            )
        }
        findings += Self.checkFolders(environment)
        if reader == .doctor {
            for variable in source.fromSecretFiles.sorted() {
                findings.append(
                    Finding(setting: variable, ok: true, message: "read from \(variable)_FILE (not shown)", note: true)
                )
            }
        }
        // The database as serve reads its settings (`nil` when they are refused: that is a finding already).
        let databaseSettings = try? ServerSettings.load(
            from: source,
            createsDataKey: false,
            purpose: .database,
            refusesUnknownKeys: false
        )
        let poolSize = databaseSettings.map { $0.databaseMaxConnections ?? SQLAccountStore.defaultMaximumConnections }
        var database = await Self.checkDatabase(environment, poolSize: poolSize)
        if reader == .serve {
            // A SQLite file serve cannot create or open stops it before anything is written; PostgreSQL's connection
            // is serve's store's to try (and name), as it starts.
            database = database.filter {
                $0.setting == "SIWA_DATABASE_MAX_CONNECTIONS" || $0.setting == "SIWA_DATABASE_PATH" && !$0.ok
            }
        }
        findings += database
        if reader == .doctor, let databaseSettings, database.allSatisfy(\.ok) {
            let sealed = await Self.checkSealedData(databaseSettings)
            findings += sealed.findings.map { finding in
                var finding = finding
                if sealed.serveRefuses && !finding.ok { finding.refuses = true }
                return finding
            }
        }
        return findings
    }

    /// The settings as serve resolved them, wherever each came from, by variable: what the checks look at.
    static func environment(of source: SettingsSource) -> [String: String] {
        var environment: [String: String] = [:]
        for variable in SettingsCatalog.byVariable.keys {
            if let value = source.value(variable) { environment[variable] = value }
        }
        return environment
    }

    /// The folder of the data-key file when the file does not exist yet: serve creates the key, not its folder, and
    /// would stop on that first write (the database's folder is ``checkDatabase(_:poolSize:)``'s).
    static func checkFolders(_ environment: [String: String]) -> [Finding] {
        func value(_ name: String) -> String? {
            environment[name].map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        var findings: [Finding] = []
        func requireFolder(of path: String, _ setting: String, _ what: String) {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            var isDirectory: ObjCBool = false
            guard !FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) || !isDirectory.boolValue
            else { return }
            findings.append(
                .refusal(
                    setting,
                    "the folder \(folder) does not exist: siwa serve creates \(what), not its folder; create it, "
                        + "owned by the user siwa runs as (`install -d -m 0700 -o siwa \(folder)`)"
                )
            )
        }
        if value("SIWA_DATA_KEY") == nil {
            let file = value("SIWA_DATA_KEY_FILE") ?? "siwa-data.key"
            if !FileManager.default.fileExists(atPath: file) {
                requireFolder(of: file, "SIWA_DATA_KEY_FILE", "the data key")
            }
        }
        return findings
    }

    /// Whether `siwa serve` itself accepts these settings: the very reader `serve` uses, so that doctor can never call
    /// a configuration right that `serve` refuses (a range, a list, a name it does not know).
    static func checkServeReads(_ source: SettingsSource) -> Finding {
        do {
            _ = try ServerSettings.load(from: source, createsDataKey: false, refusesUnknownKeys: false)
            return Finding(setting: "siwa serve", ok: true, message: "reads every SIWA_* setting given")
        } catch let problem as ServerSettings.Problem {
            return .refusal(problem.variable, "siwa serve refuses it: \(problem.fix)")
        } catch {
            return .refusal("siwa serve", "siwa serve refuses these settings: \(error)")
        }
    }

    /// Every check, independently, so that one run lists every problem.
    static func check(_ environment: [String: String]) -> [Finding] {
        func value(_ name: String) -> String? {
            environment[name].map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        var findings: [Finding] = []
        func record(_ setting: String, _ body: () throws(AppleSignInError) -> String) {
            do {
                findings.append(Finding(setting: setting, ok: true, message: try body()))
            } catch {
                // A value of the wrong shape: serve's reader refuses it too.
                findings.append(.refusal(setting, error.reason))
            }
        }

        // Team, key id and key.
        if let teamID = value("SIWA_TEAM_ID") {
            record("SIWA_TEAM_ID") { () throws(AppleSignInError) in "\(try TeamID(teamID)) has Apple's shape" }
        } else {
            findings.append(
                .init(
                    setting: "SIWA_TEAM_ID",
                    ok: false,
                    message:
                        "missing: your 10-character Team ID (Membership details at developer.apple.com/account); without it siwa cannot exchange codes or revoke tokens"
                )
            )
        }
        if let keyID = value("SIWA_KEY_ID") {
            record("SIWA_KEY_ID") { () throws(AppleSignInError) in "\(try KeyID(keyID)) has Apple's shape" }
        } else {
            findings.append(
                .init(
                    setting: "SIWA_KEY_ID",
                    ok: false,
                    message: "missing: the 10-character id of your Sign in with Apple key (AuthKey_<KeyID>.p8)"
                )
            )
        }
        let keySource: (String, AppleDeveloperKey.Source)? =
            value("SIWA_PRIVATE_KEY_FILE").map { ("SIWA_PRIVATE_KEY_FILE", .file($0)) }
            ?? value("SIWA_PRIVATE_KEY").map { ("SIWA_PRIVATE_KEY", .pem($0)) }
            ?? value("SIWA_PRIVATE_KEY_BASE64").map { ("SIWA_PRIVATE_KEY_BASE64", .base64($0)) }
        if let (setting, source) = keySource {
            record(setting) { () throws(AppleSignInError) in
                _ = try AppleDeveloperKey(source, setting: setting)
                return "parses as a P-256 PKCS#8 key"
            }
            if let keyID = value("SIWA_KEY_ID"), let file = value("SIWA_PRIVATE_KEY_FILE"),
                file.contains("AuthKey_"), !file.contains("AuthKey_\(keyID)")
            {
                findings.append(
                    .init(
                        setting: "SIWA_KEY_ID",
                        ok: false,
                        message:
                            "the key file is named \(URL(fileURLWithPath: file).lastPathComponent) but SIWA_KEY_ID is \(keyID): Apple names the file after its key id, so one of them is wrong"
                    )
                )
            }
        } else {
            findings.append(
                .init(
                    setting: "SIWA_PRIVATE_KEY_FILE",
                    ok: false,
                    message:
                        "missing: set it to your AuthKey_<KeyID>.p8 (or SIWA_PRIVATE_KEY / SIWA_PRIVATE_KEY_BASE64)"
                )
            )
        }

        // Client ids.
        let bundleIDs = (value("SIWA_BUNDLE_IDS") ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        .filter { !$0.isEmpty }
        let servicesID = value("SIWA_SERVICES_ID")
        if bundleIDs.isEmpty && servicesID == nil {
            findings.append(
                .refusal(
                    "SIWA_BUNDLE_IDS",
                    "no client id: set your app's bundle id (SIWA_BUNDLE_IDS) and/or your Services ID (SIWA_SERVICES_ID)"
                )
            )
        }
        for (index, id) in bundleIDs.enumerated() {
            record("SIWA_BUNDLE_IDS") { () throws(AppleSignInError) in
                "\(try ClientID(validating: id, setting: "SIWA_BUNDLE_IDS[\(index)]")) is well formed"
            }
        }
        if Set(bundleIDs).count != bundleIDs.count {
            findings.append(.init(setting: "SIWA_BUNDLE_IDS", ok: false, message: "a bundle id is listed twice"))
        }
        if let servicesID {
            record("SIWA_SERVICES_ID") { () throws(AppleSignInError) in
                "\(try ClientID(validating: servicesID, setting: "SIWA_SERVICES_ID")) is well formed"
            }
            if bundleIDs.contains(servicesID) {
                findings.append(
                    .refusal(
                        "SIWA_SERVICES_ID",
                        "the Services ID equals a bundle id: web sign-in needs its own Services ID (Identifiers > "
                            + "Services IDs), and codes of one cannot be exchanged as the other"
                    )
                )
            }
        }

        // The OpenID provider's relying parties sign users in through the web sign-in, which needs the Services ID.
        if let text = value("SIWA_OIDC_CLIENTS"), let clients = try? ServerSettings.openIDClients(text),
            !clients.isEmpty
        {
            let ids = clients.map(\.id).joined(separator: ", ")
            findings.append(
                .init(
                    setting: "SIWA_OIDC_CLIENTS",
                    ok: servicesID != nil,
                    message: servicesID == nil
                        ? "relying parties \(ids), but no Services ID: they sign users in through the web sign-in, "
                            + "which is off; set SIWA_SERVICES_ID"
                        : "relying parties: \(ids) (docs/oidc.md)"
                )
            )
        }

        // Public URL and the web callback Apple must accept.
        let publicURL = value("SIWA_PUBLIC_URL") ?? "http://localhost:8080"
        if let url = URL(string: publicURL), let host = url.host, let scheme = url.scheme {
            let isIP =
                host.split(separator: ".").count == 4 && host.split(separator: ".").allSatisfy { UInt8($0) != nil }
                || host.contains(":")
            let callback = "\(publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL)/auth/apple/callback"
            if servicesID != nil && (scheme != "https" || host == "localhost" || isIP) {
                findings.append(
                    .init(
                        setting: "SIWA_PUBLIC_URL",
                        ok: false,
                        message:
                            "the web callback would be \(callback): Apple accepts only https redirect URIs on a domain name (not localhost or an IP address); use your public https domain (for local work, the emulator accepts it)"
                    )
                )
            } else {
                findings.append(
                    .init(
                        setting: "SIWA_PUBLIC_URL",
                        ok: true,
                        message: servicesID == nil
                            ? "\(publicURL) (no Services ID: no web callback to check)"
                            : "register \(callback) as a Return URL of \(servicesID!)"
                    )
                )
            }
            // Everything the developer portal asks for, in one place (docs/deploy.md, section 9).
            let base = publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL
            var portal: [String] = []
            if !bundleIDs.isEmpty {
                portal.append(
                    "App ID \(bundleIDs.joined(separator: ", ")): enable Sign in with Apple; Server-to-Server "
                        + "Notification Endpoint \(base)/auth/apple/notifications"
                )
            }
            if let servicesID {
                portal.append(
                    "Services ID \(servicesID): Domains and Subdomains \(host); Return URLs \(callback)"
                )
            }
            if !portal.isEmpty {
                findings.append(
                    .init(
                        setting: "developer portal",
                        ok: true,
                        message: portal.joined(separator: "; "),
                        note: true
                    )
                )
            }
        } else {
            findings.append(
                .init(
                    setting: "SIWA_PUBLIC_URL",
                    ok: false,
                    message: "expected an absolute URL such as https://auth.example.com"
                )
            )
        }

        // Browsers keep a `Secure` cookie off plain http (localhost aside), the web flow's cookie included.
        if let secure = value("SIWA_SECURE_COOKIES"), ["1", "true", "yes", "on"].contains(secure.lowercased()),
            let url = URL(string: publicURL), url.scheme == "http", url.host != "localhost"
        {
            findings.append(
                .init(
                    setting: "SIWA_SECURE_COOKIES",
                    ok: false,
                    message:
                        "cookies are marked Secure but SIWA_PUBLIC_URL is http: browsers drop Secure cookies on http, "
                        + "the web sign-in's flow cookie with them, so every web sign-in would fail; serve over https "
                        + "(SIWA_PUBLIC_URL https://…) or leave SIWA_SECURE_COOKIES unset"
                )
            )
        }

        // Apple's base URL and the database.
        if let base = value("SIWA_APPLE_BASE_URL") {
            record("SIWA_APPLE_BASE_URL") { () throws(AppleSignInError) in
                let url = try AppleBaseURL(base, setting: "SIWA_APPLE_BASE_URL")
                return url.scheme == "http" ? "\(url) (a local emulator, not Apple)" : "\(url)"
            }
        }
        if let databaseURL = value("SIWA_DATABASE_URL"), !isPostgresURL(databaseURL) {
            // A PostgreSQL URL is checked by connecting (`checkDatabase`).
            findings.append(.refusal("SIWA_DATABASE_URL", "expected postgres://user:password@host:port/database"))
        }
        if let dataKey = value("SIWA_DATA_KEY") {
            do {
                let keys = try DataKeyRing.parse(list: dataKey)
                findings.append(.init(setting: "SIWA_DATA_KEY", ok: true, message: Self.describe(keys)))
            } catch {
                findings.append(
                    .refusal(
                        "SIWA_DATA_KEY",
                        "\(error); the value is a comma-separated list of keys, the first sealing"
                    )
                )
            }
        } else {
            let file = value("SIWA_DATA_KEY_FILE") ?? "siwa-data.key"
            do {
                if let keys = try DataKeyRing.read(file: file) {
                    findings.append(
                        .init(setting: "SIWA_DATA_KEY_FILE", ok: true, message: "\(file): \(Self.describe(keys))")
                    )
                }
            } catch {
                findings.append(
                    .refusal("SIWA_DATA_KEY_FILE", "\(error); the file holds one key a line, the first sealing")
                )
            }
        }
        return findings
    }

    /// How many data keys, and which seals (ids only).
    private static func describe(_ keys: DataKeyRing) -> String {
        keys.keys.count == 1
            ? "a 256-bit key (id \(keys.primary.id))"
            : "\(keys.keys.count) 256-bit keys; \(keys.primary.id) seals, the others only open"
    }

    private static func isPostgresURL(_ url: String) -> Bool {
        url.hasPrefix("postgres://") || url.hasPrefix("postgresql://")
    }

    /// Whether the database the settings name connects: PostgreSQL when `SIWA_DATABASE_URL` is set, else the SQLite
    /// file (`SIWA_DATABASE_PATH`, default `siwa.sqlite`). Opens one connection and runs a trivial query: never
    /// creates the SQLite file, never migrates. Nothing when the URL is malformed (`check` reports that).
    ///
    /// On PostgreSQL it also compares `poolSize`, one instance's pool as serve reads `SIWA_DATABASE_MAX_CONNECTIONS`,
    /// with the connections the server lets this login open (``checkPoolSize(_:capacity:)``).
    static func checkDatabase(_ environment: [String: String], poolSize: Int?) async -> [Finding] {
        func value(_ name: String) -> String? {
            environment[name].map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        guard let connection = await checkDatabaseConnection(environment) else { return [] }
        guard connection.ok, connection.setting == "SIWA_DATABASE_URL", let url = value("SIWA_DATABASE_URL"),
            let poolSize
        else {
            return [connection]
        }
        var logger = Logger(label: "siwa.doctor")
        logger.logLevel = .error
        do {
            let capacity = try await SQLAccountStore.connectionCapacity(postgresURL: url, logger: logger)
            return [connection, checkPoolSize(poolSize, capacity: capacity)]
        } catch {
            // It connected: a login that may not read the limits is no reason to fail the check.
            return [
                connection,
                Finding(
                    setting: "SIWA_DATABASE_MAX_CONNECTIONS",
                    ok: true,
                    message: "could not compare with PostgreSQL's connection limits: \(error.reason)",
                    note: true
                ),
            ]
        }
    }

    /// Whether an instance with a pool of `pool` connections (and its listening one) fits in what PostgreSQL allows
    /// this login.
    ///
    /// A pool larger than the whole allowance is a problem: once the instance opened that many, its requests would
    /// fail with 503. A pool larger than what is free now is a note, since what is open now includes the running
    /// instances' own pools; otherwise a note of how many instances of that size the allowance holds.
    static func checkPoolSize(_ pool: Int, capacity: SQLAccountStore.PostgresConnectionCapacity) -> Finding {
        let setting = "SIWA_DATABASE_MAX_CONNECTIONS"
        // `siwa serve` holds one connection beside its pool, listening for what other instances end and change.
        let poolSize = pool + 1
        var limits = ["max_connections \(capacity.maxConnections)"]
        if capacity.reserved > 0 { limits.append("\(capacity.reserved) reserved") }
        if let limit = capacity.roleLimit { limits.append("the login's CONNECTION LIMIT \(limit)") }
        if let limit = capacity.databaseLimit { limits.append("the database's CONNECTION LIMIT \(limit)") }
        let allowance =
            "PostgreSQL allows this login \(capacity.available) connections (\(limits.joined(separator: ", ")))"
        let others = capacity.open - 1
        let hidden =
            capacity.hidden > 0
            ? "; \(capacity.hidden) of them are other logins' sessions this one may not see (grant it pg_monitor to see "
                + "them), counted as open"
            : ""
        if poolSize > capacity.available {
            return Finding(
                setting: setting,
                ok: false,
                message:
                    "each instance may open \(poolSize) connections (\(pool) pooled, 1 listening), but \(allowance): lower "
                    + "SIWA_DATABASE_MAX_CONNECTIONS or raise the limit"
            )
        }
        if poolSize > capacity.free {
            return Finding(
                setting: setting,
                ok: true,
                message:
                    "each instance may open \(poolSize) connections (\(pool) pooled, 1 listening) and \(allowance), but "
                    + "only \(capacity.free) "
                    + "are free now: \(others) are open by other clients (running instances of siwa included)\(hidden)",
                note: true
            )
        }
        return Finding(
            setting: setting,
            ok: true,
            message: "up to \(poolSize) connections per instance (\(pool) pooled, 1 listening): \(allowance), room for "
                + "\(capacity.available / poolSize) instance(s) with no other client; \(others) open now by other "
                + "clients\(hidden)"
        )
    }

    /// The connection check of ``checkDatabase(_:poolSize:)``.
    private static func checkDatabaseConnection(_ environment: [String: String]) async -> Finding? {
        func value(_ name: String) -> String? {
            environment[name].map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        var logger = Logger(label: "siwa.doctor")
        logger.logLevel = .error
        if let url = value("SIWA_DATABASE_URL") {
            guard isPostgresURL(url) else { return nil }
            do {
                _ = try await SQLAccountStore.checkConnection(postgresURL: url, logger: logger)
                return Finding(setting: "SIWA_DATABASE_URL", ok: true, message: "PostgreSQL: connects and answers")
            } catch {
                return .refusal("SIWA_DATABASE_URL", "cannot connect: \(error.reason)")
            }
        }
        let path = value("SIWA_DATABASE_PATH") ?? "siwa.sqlite"
        do {
            switch try await SQLAccountStore.checkConnection(sqlitePath: path, logger: logger) {
            case .connected:
                return Finding(setting: "SIWA_DATABASE_PATH", ok: true, message: "SQLite: \(path) opens and answers")
            case .notCreatedYet:
                return Finding(
                    setting: "SIWA_DATABASE_PATH",
                    ok: true,
                    message: "\(path): the SQLite file does not exist yet; `siwa migrate` creates it",
                    note: true
                )
            }
        } catch {
            return .refusal("SIWA_DATABASE_PATH", "SQLite: \(error.reason)")
        }
    }
}
