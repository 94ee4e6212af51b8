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

        /// A database finding that `siwa serve` applies too before it opens the store (a schema it must not
        /// write); not in the JSON.
        var beforeOpening = false

        /// A problem that stops `siwa serve`.
        static func refusal(_ setting: String, _ message: String) -> Finding {
            Finding(setting: setting, ok: false, message: message, refuses: true)
        }

        private enum CodingKeys: String, CodingKey {
            case setting, ok, message, note, refuses
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
            findings += await Self.checkApple(settings, keyFile: try? source.given(\.apple.privateKeyFile))
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
        var findings = Self.checkDeclared(source)
        findings += Self.check(source)
        if reader == .doctor { findings.append(Self.checkServeReads(source)) }
        let allowsUnknown = (try? source.value(\.server.allowUnknownSettings)) ?? false
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
        findings += Self.checkFolders(source)
        // The database as serve reads its settings (`nil` when they are refused: that is a finding already).
        let databaseSettings = try? ServerSettings.load(
            from: source,
            createsDataKey: false,
            purpose: .database,
            refusesUnknownKeys: false
        )
        let poolSize = databaseSettings.map { $0.databaseMaxConnections ?? SQLAccountStore.defaultMaximumConnections }
        var database = await Self.checkDatabase(source, poolSize: poolSize)
        if reader == .serve {
            // A SQLite file serve cannot create or open, and a schema from a newer siwa, stop it before anything is
            // written; PostgreSQL's connection is serve's store's to try (and name), as it starts.
            database = database.filter {
                $0.setting == "SIWA_DATABASE_MAX_CONNECTIONS" || $0.setting == "SIWA_DATABASE_PATH" && !$0.ok
                    || $0.beforeOpening && !$0.ok
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
        if reader == .doctor, let databaseSettings { findings += await Self.checkListeners(databaseSettings) }
        if reader == .doctor { findings += Self.shownValues(source, besides: findings) }
        return findings
    }

    /// Whether `siwa serve` could listen where the settings say: each address is bound for a moment. A port held by a
    /// siwa that answers there is a remark (the running service, when these are its settings); held by any other
    /// process, a problem, as serve would stop on it.
    static func checkListeners(_ settings: ServerSettings) async -> [Finding] {
        var findings: [Finding] = []
        for listener in ListenerProbe.listeners(of: settings) where listener.port != 0 {
            let address = "\(listener.host):\(listener.port)"
            guard let error = await ListenerProbe.bindError(listener) else {
                findings.append(
                    Finding(
                        setting: listener.settings,
                        ok: true,
                        message: "\(listener.name) can listen on \(address)",
                        note: true
                    )
                )
                continue
            }
            let https = settings.tls != nil && listener.probePath == "/readyz"
            if await ListenerProbe.siwaAnswers(at: listener, https: https) {
                findings.append(
                    Finding(
                        setting: listener.settings,
                        ok: true,
                        message:
                            "\(address) is held by a running siwa (it answers \(listener.probePath)): the service itself "
                            + "when these are its settings; a second siwa serve with them would not start",
                        note: true
                    )
                )
            } else {
                findings.append(.refusal(listener.settings, ListenerProbe.describe(listener, error)))
            }
        }
        return findings
    }

    /// Each setting given, read through its declaration: a value it refuses is a problem, in the declaration's words
    /// (every one, where serve stops at the first).
    static func checkDeclared(_ source: SettingsSource) -> [Finding] {
        SettingsCatalog.all.compactMap { setting in
            source.text(of: setting).flatMap(setting.refusal(of:)).map { .refusal(setting.variable, $0) }
        }
    }

    /// The value of each setting given that no finding of `findings` names, as a note; a secret only by where it came
    /// from, always.
    static func shownValues(_ source: SettingsSource, besides findings: [Finding]) -> [Finding] {
        let named = Set(findings.map(\.setting))
        return SettingsCatalog.all.compactMap { setting in
            guard let text = source.text(of: setting) else { return nil }
            let shown: String
            if setting.isSecret {
                guard source.fromSecretFiles.contains(setting.variable) || !named.contains(setting.variable) else {
                    return nil
                }
                shown =
                    source.fromSecretFiles.contains(setting.variable)
                    ? "read from \(setting.variable)_FILE (not shown)" : "set (not shown)"
            } else {
                guard !named.contains(setting.variable) else { return nil }
                shown = setting.type == "JSON" ? "set (\(text.count) characters)" : text
            }
            return Finding(setting: setting.variable, ok: true, message: shown, note: true)
        }
    }

    /// The folder of the data-key file when the file does not exist yet: serve creates the key, not its folder, and
    /// would stop on that first write (the database's folder is ``checkDatabase(_:poolSize:)``'s).
    static func checkFolders(_ source: SettingsSource) -> [Finding] {
        guard !source.isGiven(\.storage.dataKey), let file = try? source.value(\.storage.dataKeyFile),
            !FileManager.default.fileExists(atPath: file)
        else { return [] }
        let folder = URL(fileURLWithPath: file).deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard !FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) || !isDirectory.boolValue
        else { return [] }
        return [
            .refusal(
                SettingsCatalog.declared.storage.dataKeyFile.variable,
                "the folder \(folder) does not exist: siwa serve creates the data key, not its folder; create it, "
                    + "owned by the user siwa runs as (`install -d -m 0700 -o siwa \(folder)`)"
            )
        ]
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

    /// The checks of settings together, and what a value means for Apple's developer portal; a value its declaration
    /// refuses is left out here (``checkDeclared(_:showsValues:)`` names it).
    static func check(_ source: SettingsSource) -> [Finding] {
        func given<Value>(_ setting: KeyPath<SettingsCatalog, Setting<Value>>) -> Value? {
            try? source.given(setting)
        }
        var findings: [Finding] = []

        // Team, key id and key.
        if !source.isGiven(\.apple.teamID) {
            findings.append(
                .init(
                    setting: "SIWA_TEAM_ID",
                    ok: false,
                    message:
                        "missing: your 10-character Team ID (Membership details at developer.apple.com/account); without it siwa cannot exchange codes or revoke tokens"
                )
            )
        }
        if !source.isGiven(\.apple.keyID) {
            findings.append(
                .init(
                    setting: "SIWA_KEY_ID",
                    ok: false,
                    message: "missing: the 10-character id of your Sign in with Apple key (AuthKey_<KeyID>.p8)"
                )
            )
        }
        if let key = try? ServerSettings.developerKey(from: source) {
            do {
                _ = try AppleDeveloperKey(key.source, setting: key.variable)
                findings.append(Finding(setting: key.variable, ok: true, message: "parses as a P-256 PKCS#8 key"))
            } catch {
                // A key of the wrong shape: serve's reader refuses it too.
                findings.append(.refusal(key.variable, error.reason))
            }
            if let keyID = given(\.apple.keyID), case .file(let file) = key.source, file.contains("AuthKey_"),
                !file.contains("AuthKey_\(keyID)")
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
        let bundleIDs = given(\.apple.bundleIDs) ?? []
        let servicesID = given(\.apple.servicesID)
        if !source.isGiven(\.apple.bundleIDs) && !source.isGiven(\.apple.servicesID) {
            findings.append(
                .refusal(
                    "SIWA_BUNDLE_IDS",
                    "no client id: set your app's bundle id (SIWA_BUNDLE_IDS) and/or your Services ID (SIWA_SERVICES_ID)"
                )
            )
        }
        if Set(bundleIDs).count != bundleIDs.count {
            findings.append(.init(setting: "SIWA_BUNDLE_IDS", ok: false, message: "a bundle id is listed twice"))
        }
        if let servicesID, bundleIDs.contains(servicesID) {
            findings.append(
                .refusal(
                    "SIWA_SERVICES_ID",
                    "the Services ID equals a bundle id: web sign-in needs its own Services ID (Identifiers > "
                        + "Services IDs), and codes of one cannot be exchanged as the other"
                )
            )
        }

        // The OpenID provider's relying parties sign users in through the web sign-in, which needs the Services ID.
        if let clients = given(\.openID.clients), !clients.isEmpty {
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

        // The data keys, by id only.
        if let keys = given(\.storage.dataKey) {
            findings.append(.init(setting: "SIWA_DATA_KEY", ok: true, message: Self.describe(keys)))
        } else if !source.isGiven(\.storage.dataKey), let file = try? source.value(\.storage.dataKeyFile) {
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

        // Public URL and the web callback Apple must accept.
        guard let publicURL = try? source.value(\.server.publicURL), let url = URL(string: publicURL),
            let host = url.host, let scheme = url.scheme
        else { return findings }
        let isIP =
            host.split(separator: ".").count == 4 && host.split(separator: ".").allSatisfy { UInt8($0) != nil }
            || host.contains(":")
        let callback = "\(publicURL)/auth/apple/callback"
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
                    message: servicesID.map { "register \(callback) as a Return URL of \($0)" }
                        ?? "\(publicURL) (no Services ID: no web callback to check)"
                )
            )
        }
        // Everything the developer portal asks for, in one place (docs/deploy.md, section 9).
        var portal: [String] = []
        if !bundleIDs.isEmpty {
            portal.append(
                "App ID \(bundleIDs.joined(separator: ", ")): enable Sign in with Apple; Server-to-Server "
                    + "Notification Endpoint \(publicURL)/auth/apple/notifications"
            )
        }
        if let servicesID {
            portal.append("Services ID \(servicesID): Domains and Subdomains \(host); Return URLs \(callback)")
        }
        if !portal.isEmpty {
            findings.append(
                .init(setting: "developer portal", ok: true, message: portal.joined(separator: "; "), note: true)
            )
        }

        // Browsers keep a `Secure` cookie off plain http (localhost aside), the web flow's cookie included: every web
        // sign-in would fail, so this stops serve.
        if given(\.web.secureCookies) == true, scheme == "http", host != "localhost" {
            findings.append(
                .refusal(
                    "SIWA_SECURE_COOKIES",
                    "cookies are marked Secure but SIWA_PUBLIC_URL is http: browsers drop Secure cookies on http, "
                        + "the web sign-in's flow cookie with them, so every web sign-in would fail; serve over https "
                        + "(SIWA_PUBLIC_URL https://…) or leave SIWA_SECURE_COOKIES unset"
                )
            )
        }

        return findings
    }

    /// How many data keys, and which seals (ids only).
    private static func describe(_ keys: DataKeyRing) -> String {
        keys.keys.count == 1
            ? "a 256-bit key (id \(keys.primary.id))"
            : "\(keys.keys.count) 256-bit keys; \(keys.primary.id) seals, the others only open"
    }

    /// Whether the database the settings name connects: PostgreSQL when `SIWA_DATABASE_URL` is set, else the SQLite
    /// file (`SIWA_DATABASE_PATH`). Opens one connection and runs a trivial query: never
    /// creates the SQLite file, never migrates. Nothing when the URL is malformed (its declaration refuses it).
    ///
    /// On PostgreSQL it also compares `poolSize`, one instance's pool as serve reads `SIWA_DATABASE_MAX_CONNECTIONS`,
    /// with the connections the server lets this login open (``checkPoolSize(_:capacity:)``).
    static func checkDatabase(_ source: SettingsSource, poolSize: Int?) async -> [Finding] {
        let connection = await checkDatabaseConnection(source)
        guard connection.allSatisfy(\.ok), let url = (try? ServerSettings.databaseURL(from: source))??.url, let poolSize
        else {
            return connection
        }
        var logger = Logger(label: "siwa.doctor")
        logger.logLevel = .error
        do {
            let capacity = try await SQLAccountStore.connectionCapacity(postgresURL: url, logger: logger)
            return connection + [checkPoolSize(poolSize, capacity: capacity)]
        } catch {
            // It connected: a login that may not read the limits is no reason to fail the check.
            return connection + [
                Finding(
                    setting: "SIWA_DATABASE_MAX_CONNECTIONS",
                    ok: true,
                    message: "could not compare with PostgreSQL's connection limits: \(error.reason)",
                    note: true
                )
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
    private static func checkDatabaseConnection(_ source: SettingsSource) async -> [Finding] {
        var logger = Logger(label: "siwa.doctor")
        logger.logLevel = .error
        let given: (url: String, setting: String)?
        do {
            given = try ServerSettings.databaseURL(from: source)
        } catch {
            return [.refusal(error.variable, error.fix)]
        }
        if let given {
            do {
                let check = try await SQLAccountStore.checkConnection(postgresURL: given.url, logger: logger)
                let shown = ServerSettings.shown(postgresURL: given.url)
                return [Finding(setting: given.setting, ok: true, message: "PostgreSQL \(shown): connects and answers")]
                    + checkSchema(check, setting: given.setting)
            } catch {
                return [.refusal(given.setting, "cannot connect: \(error.reason)")]
            }
        }
        // A URL its declaration refuses is named already.
        guard !source.isGiven(\.storage.databaseURL), let path = try? source.value(\.storage.databasePath) else {
            return []
        }
        var findings: [Finding] = []
        if !source.isGiven(\.storage.databasePath), let file = source.configFile {
            findings.append(
                Finding(
                    setting: "SIWA_DATABASE_PATH",
                    ok: false,
                    message:
                        "\(file) names no database: siwa serve uses \(path) in the folder it runs in, and the operator "
                        + "commands refuse to guess; name it (database.path, or database.url or database.urlFile)"
                )
            )
        }
        do {
            let check = try await SQLAccountStore.checkConnection(sqlitePath: path, logger: logger)
            switch check {
            case .connected:
                findings.append(
                    Finding(setting: "SIWA_DATABASE_PATH", ok: true, message: "SQLite: \(path) opens and answers")
                )
                findings += checkSchema(check, setting: "SIWA_DATABASE_PATH")
            case .notCreatedYet:
                findings.append(
                    Finding(
                        setting: "SIWA_DATABASE_PATH",
                        ok: true,
                        message: "\(path): the SQLite file does not exist yet; `siwa migrate` creates it",
                        note: true
                    )
                )
            }
        } catch {
            findings.append(.refusal("SIWA_DATABASE_PATH", "SQLite: \(error.reason)"))
        }
        return findings
    }

    /// The schema version the database holds against this siwa's: a newer one stops `siwa serve` (a newer release
    /// upgraded it), an older one is upgraded as serve starts.
    static func checkSchema(_ check: SQLAccountStore.ConnectionCheck, setting: String) -> [Finding] {
        guard case .connected(let found) = check else { return [] }
        let current = SQLAccountStore.schemaVersion
        if found > current {
            var refusal = Finding.refusal(setting, SQLAccountStore.newerSchemaReason(found))
            refusal.beforeOpening = true
            return [refusal]
        }
        if found == current {
            return [
                Finding(setting: setting, ok: true, message: "the schema is current, version \(current)", note: true)
            ]
        }
        let versions = found + 1 == current ? "version \(current)" : "versions \(found + 1) to \(current)"
        return [
            Finding(
                setting: setting,
                ok: true,
                message:
                    "the schema is at version \(found): siwa serve (or siwa migrate) applies \(versions) as it starts "
                    + "(siwa migrate --dry-run lists them); take a backup first",
                note: true
            )
        ]
    }
}
