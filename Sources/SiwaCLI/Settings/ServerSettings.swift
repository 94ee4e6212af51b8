import AccountStore
import AccountStoreSQL
import AppleSignIn
import ArgumentParser
import AuthServer
import Crypto
import Foundation
import Logging

/// Everything siwa reads from its settings (``SettingsSource``: environment, secret files, `.env`, configuration
/// file), validated at start: a bad value stops start-up with a message naming the variable.
struct ServerSettings {
    var host = "127.0.0.1"
    var port = 8080
    /// `SIWA_METRICS_PORT`'s default: not the emulator's 9090 (a development machine runs both) nor Prometheus's own.
    static let defaultMetricsPort = 9464
    var server = AuthServerConfiguration()
    /// The Apple side; `nil` only for a command that does not need it (``Purpose/database``) when it is not set up.
    var appleIfConfigured: AppleSignInConfiguration?
    /// `postgres://…` when set; otherwise SQLite at ``databasePath``.
    var databaseURL: String?
    var databasePath = "siwa.sqlite"
    /// `SIWA_DATABASE_MAX_CONNECTIONS`: PostgreSQL's pool limit; `nil` for the store's default.
    var databaseMaxConnections: Int?
    /// The data keys: the first seals, every one opens.
    var dataKeys: DataKeyRing
    /// The server's own TLS (`SIWA_TLS_CERTIFICATE_FILE`, `SIWA_TLS_KEY_FILE`); `nil` for plain HTTP.
    var tls: ServerTLS?
    /// `SIWA_LOG_LEVEL`.
    var logLevel = Logger.Level.info
    /// Whether `SIWA_LOG_LEVEL` was set: an operator command logs only warnings unless asked for more.
    var logLevelIsSet = false
    /// `SIWA_LOG_FORMAT`.
    var logFormat = LogFormat.text
    /// Where the data key is kept when `SIWA_DATA_KEY` is not set.
    var dataKeyFile = "siwa-data.key"
    /// Whether ``dataKeys`` were read (or created), rather than a random placeholder.
    var dataKeyFound = false
    /// Whether ``dataKeys`` were created just now, in ``dataKeyFile``.
    var dataKeyCreated = false
    /// Whether ``dataKeys`` came from `SIWA_DATA_KEY` rather than ``dataKeyFile``.
    var dataKeyFromVariable = false
    /// Whether the database location was set (`SIWA_DATABASE_URL` or `SIWA_DATABASE_PATH`) rather than defaulted.
    var databaseIsConfigured = false

    /// A setting that could not be used.
    struct Problem: Error, CustomStringConvertible {
        let variable: String
        let fix: String
        var description: String { "\(variable): \(fix)" }
    }

    /// What a command needs of the settings.
    enum Purpose {
        /// Everything `siwa serve` needs: the Apple side must be set up.
        case server
        /// The database and the data key; the Apple side only if it is set up (operator commands).
        case database
    }

    /// The Apple side, for the commands that call Apple or serve.
    var apple: AppleSignInConfiguration {
        get throws {
            guard let appleIfConfigured else {
                throw Problem(variable: "SIWA_BUNDLE_IDS", fix: "configure at least one client id")
            }
            return appleIfConfigured
        }
    }

    /// Reads the process's settings (and `configFile`, or `SIWA_CONFIG`); a bad value is reported naming its variable
    /// and exits 2.
    /// - Parameter createsDataKey: whether a missing data-key file is created (`serve`, `migrate`); an operator
    ///   command with a new key could not open what the server's key sealed.
    static func loadOrExit(
        configFile: String? = nil,
        purpose: Purpose = .server,
        createsDataKey: Bool = true
    ) async throws -> ServerSettings {
        do {
            let source = try await SettingsSource.load(configFile: configFile)
            return try load(from: source, createsDataKey: createsDataKey, purpose: purpose)
        } catch let problem as Problem {
            Terminal.error("error: \(problem)")
            throw ExitCode(2)
        }
    }

    /// What facing the internet needs: connection caps, request deadlines, trusted proxies and session bounds.
    private static func loadEdgeSettings(
        into server: inout AuthServerConfiguration,
        value: (String) -> String?,
        number: (String, ClosedRange<Double>) throws -> Double?
    ) throws {
        if let count = try number("SIWA_MAX_CONNECTIONS", 16...1_000_000) {
            server.connections.maximumConnections = Int(count)
        }
        if let count = try number("SIWA_MAX_CONNECTIONS_PER_ADDRESS", 1...1_000_000) {
            server.connections.maximumConnectionsPerAddress = Int(count)
        }
        if let seconds = try number("SIWA_REQUEST_HEAD_TIMEOUT", 1...3600) {
            server.connections.requestHeadTimeout = .milliseconds(Int64(seconds * 1000))
        }
        if let seconds = try number("SIWA_REQUEST_BODY_TIMEOUT", 1...3600) {
            server.connections.requestBodyTimeout = .milliseconds(Int64(seconds * 1000))
        }
        var header = TrustedProxies.Header.xForwardedFor
        if let name = value("SIWA_FORWARDED_HEADER") {
            guard let parsed = TrustedProxies.Header(rawValue: name.lowercased()) else {
                throw Problem(
                    variable: "SIWA_FORWARDED_HEADER",
                    fix: "expected x-forwarded-for or forwarded (the header your proxy writes), got '\(name)'"
                )
            }
            header = parsed
        }
        if let list = value("SIWA_TRUSTED_PROXIES") {
            do {
                server.trustedProxies = try TrustedProxies(list.split(separator: ",").map(String.init), header: header)
            } catch {
                throw Problem(variable: "SIWA_TRUSTED_PROXIES", fix: error.description)
            }
        }
        if let list = value("SIWA_ADMIN_ALLOWED_NETWORKS") {
            do {
                server.adminNetworks = try AddressRanges(list.split(separator: ",").map(String.init))
            } catch {
                throw Problem(variable: "SIWA_ADMIN_ALLOWED_NETWORKS", fix: error.description)
            }
        }
        if let seconds = try number("SIWA_REFRESH_REUSE_GRACE", 0...60) { server.refreshReuseGrace = seconds }
        if let count = try number("SIWA_MAX_SESSIONS_PER_IDENTITY_TOKEN", 0...1_000_000) {
            server.maximumSessionsPerIdentityToken = Int(count)
        }
        if let count = try number("SIWA_MAX_FLOWS_PER_CLIENT", 1...1_000_000) {
            server.maximumFlowsPerClient = Int(count)
        }
        if let rate = try number("SIWA_NOTIFICATION_RATE_LIMIT", 0...1_000_000) {
            server.notificationRateLimit = rate == 0 ? nil : .init(requestsPerSecond: rate, burst: max(1, rate * 10))
        }
    }

    /// Reads the settings from `environment` alone (the demo's fixed settings, tests).
    static func load(from environment: [String: String], createsDataKey: Bool = true) throws -> ServerSettings {
        try load(from: SettingsSource(environment: environment), createsDataKey: createsDataKey)
    }

    /// Reads and validates the settings.
    /// - Parameters:
    ///   - createsDataKey: `false` (for `siwa doctor`) reads an existing data-key file but creates none.
    ///   - purpose: `.database` tolerates an Apple side that is not set up.
    ///   - refusesUnknownKeys: `false` (for `siwa doctor`, which lists them all) reads past keys of the configuration
    ///     or `.env` file that are no setting; otherwise the first stops here, before anything else is checked, since
    ///     a misspelt key is the likeliest cause of what would fail next.
    static func load(
        from source: SettingsSource,
        createsDataKey: Bool = true,
        purpose: Purpose = .server,
        refusesUnknownKeys: Bool = true
    ) throws -> ServerSettings {
        func value(_ name: String) -> String? { source.value(name) }
        func number(_ name: String, _ range: ClosedRange<Double>) throws -> Double? {
            guard let text = value(name) else { return nil }
            guard let number = Double(text), range.contains(number) else {
                throw Problem(
                    variable: name,
                    fix:
                        "expected a number from \(Self.plain(range.lowerBound)) to \(Self.plain(range.upperBound)), got '\(text)'"
                )
            }
            return number
        }
        func wholeNumber(_ name: String, _ range: ClosedRange<Int>) throws -> Int? {
            guard let number = try number(name, Double(range.lowerBound)...Double(range.upperBound)) else { return nil }
            guard number == number.rounded() else {
                throw Problem(
                    variable: name,
                    fix:
                        "expected a whole number from \(range.lowerBound) to \(range.upperBound), got '\(Self.plain(number))'"
                )
            }
            return Int(number)
        }
        func flag(_ name: String) throws -> Bool? {
            guard let text = value(name)?.lowercased() else { return nil }
            switch text {
            case "1", "true", "yes", "on": return true
            case "0", "false", "no", "off": return false
            default: throw Problem(variable: name, fix: "expected true or false, got '\(text)'")
            }
        }

        if refusesUnknownKeys, let unknown = source.unknownFileKeys.first,
            try flag("SIWA_ALLOW_UNKNOWN_SETTINGS") != true
        {
            throw Problem(variable: unknown, fix: SettingsCatalog.unknownKeyFix(unknown))
        }

        var server = AuthServerConfiguration()
        if let publicURL = value("SIWA_PUBLIC_URL") {
            guard let url = URL(string: publicURL), url.scheme == "https" || url.scheme == "http", url.host != nil
            else {
                throw Problem(
                    variable: "SIWA_PUBLIC_URL",
                    fix: "expected the server's public URL such as https://auth.example.com"
                )
            }
            server.publicURL = publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL
        }
        if let seconds = try number("SIWA_ACCESS_TOKEN_LIFETIME", 60...86_400) { server.accessTokenLifetime = seconds }
        if let seconds = try number("SIWA_REFRESH_TOKEN_LIFETIME", 3600...(365 * 86_400)) {
            server.refreshTokenLifetime = seconds
        }
        if let required = try flag("SIWA_REQUIRE_SERVER_NONCE") { server.requireServerNonce = required }
        if let rate = try number("SIWA_RATE_LIMIT", 0...1_000_000) {
            let burst = try number("SIWA_RATE_BURST", 1...1_000_000) ?? max(1, rate * 2)
            server.authRateLimit = rate == 0 ? nil : .init(requestsPerSecond: rate, burst: burst)
        }
        if let seconds = try number("SIWA_IDLE_TIMEOUT", 0...3600) {
            server.idleTimeout = seconds == 0 ? nil : .milliseconds(Int64(seconds * 1000))
        }
        if let bytes = try number("SIWA_MAX_HEADER_SIZE", 4096...1_048_576) { server.maximumHeaderSize = Int(bytes) }
        try loadEdgeSettings(into: &server, value: value, number: number)
        if let count = try number("SIWA_USER_CACHE_SIZE", 1...10_000_000) { server.userCacheCapacity = Int(count) }
        if let link = try flag("SIWA_LINK_ACCOUNTS_BY_EMAIL") { server.linkAccountsByEmail = link }
        if let mode = value("SIWA_ACCOUNT_DELETION_MODE") {
            guard let parsed = AccountDeletionMode(rawValue: mode.lowercased()) else {
                throw Problem(
                    variable: "SIWA_ACCOUNT_DELETION_MODE",
                    fix: "expected delete or anonymise, got '\(mode)'"
                )
            }
            server.lifecycle.deletionMode = parsed
        }
        if let seconds = try number("SIWA_APPLE_VALIDATION_INTERVAL", 3600...(90 * 86_400)) {
            server.lifecycle.appleValidationInterval = seconds
        }
        if let refuse = try flag("SIWA_REFUSE_REFRESH_WHEN_APPLE_UNAVAILABLE") {
            server.lifecycle.refuseRefreshWhenAppleUnavailable = refuse
        }
        if let days = try number("SIWA_AUDIT_RETENTION_DAYS", 1...3650) {
            server.housekeeping.auditRetention = Double(Int(days)) * 86_400
        }

        try loadWebSettings(into: &server, value: value, number: number, flag: flag)
        try loadCompatibilitySettings(into: &server, value: value, flag: flag)
        if let clients = value("SIWA_OIDC_CLIENTS") { server.openID.clients = try Self.openIDClients(clients) }

        let apple: AppleSignInConfiguration?
        do {
            apple = try loadApple(value: value, number: number)
        } catch {
            // An operator command that only needs the database runs without the Apple side.
            guard purpose == .database else { throw error }
            apple = nil
        }

        var settings = ServerSettings(
            server: server,
            appleIfConfigured: apple,
            dataKeys: DataKeyRing(key: SymmetricKey(size: .bits256))
        )
        if let host = value("SIWA_HOST") { settings.host = host }
        if let port = try wholeNumber("SIWA_PORT", 0...65_535) { settings.port = port }
        let metricsPort = try wholeNumber("SIWA_METRICS_PORT", 0...65_535) ?? Self.defaultMetricsPort
        if metricsPort != 0, metricsPort == settings.port {
            throw Problem(
                variable: "SIWA_METRICS_PORT",
                fix: "the metrics listener needs a port of its own, not SIWA_PORT's \(metricsPort) (0: no listener)"
            )
        }
        settings.server.metricsListener =
            metricsPort == 0 ? nil : MetricsListener(host: value("SIWA_METRICS_HOST") ?? "127.0.0.1", port: metricsPort)
        try loadTLS(into: &settings, publicURLIsSet: value("SIWA_PUBLIC_URL") != nil, value: value, number: number)
        if let level = value("SIWA_LOG_LEVEL") {
            guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
                throw Problem(
                    variable: "SIWA_LOG_LEVEL",
                    fix: "expected trace, debug, info, notice, warning, error or critical, got '\(level)'"
                )
            }
            settings.logLevel = parsed
            settings.logLevelIsSet = true
        }
        if let format = value("SIWA_LOG_FORMAT") {
            guard let parsed = LogFormat(rawValue: format.lowercased()) else {
                throw Problem(variable: "SIWA_LOG_FORMAT", fix: "expected text or json, got '\(format)'")
            }
            settings.logFormat = parsed
        }
        if let url = value("SIWA_DATABASE_URL") {
            guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
                throw Problem(
                    variable: "SIWA_DATABASE_URL",
                    fix: "expected postgres://user:password@host:port/database"
                )
            }
            settings.databaseURL = url
            settings.databaseIsConfigured = true
        }
        if let path = value("SIWA_DATABASE_PATH") {
            settings.databasePath = path
            settings.databaseIsConfigured = true
        }
        if let seconds = try number("SIWA_DATABASE_POLL_INTERVAL", 1...3600) {
            settings.server.storeRefreshInterval = .milliseconds(Int64(seconds * 1000))
        }
        if let count = try wholeNumber("SIWA_DATABASE_MAX_CONNECTIONS", SQLAccountStore.maximumConnectionsRange) {
            settings.databaseMaxConnections = count
        }
        let keyFile = value("SIWA_DATA_KEY_FILE") ?? "siwa-data.key"
        settings.dataKeyFile = keyFile
        if createsDataKey || value("SIWA_DATA_KEY") != nil || FileManager.default.fileExists(atPath: keyFile) {
            let existed = value("SIWA_DATA_KEY") != nil || FileManager.default.fileExists(atPath: keyFile)
            settings.dataKeys = try loadDataKeys(value("SIWA_DATA_KEY"), file: keyFile)
            settings.dataKeyFound = true
            settings.dataKeyCreated = !existed
            settings.dataKeyFromVariable = value("SIWA_DATA_KEY") != nil
        }
        return settings
    }

    /// Built-in HTTPS: both files or neither; a certificate that cannot be used stops start-up naming its setting. The
    /// public URL must then be https (it is `https://localhost:<port>` when not set), since cookies' `Secure` flag and
    /// `__Host-` prefix follow it.
    private static func loadTLS(
        into settings: inout ServerSettings,
        publicURLIsSet: Bool,
        value: (String) -> String?,
        number: (String, ClosedRange<Double>) throws -> Double?
    ) throws {
        if let seconds = try number("SIWA_TLS_RELOAD_INTERVAL", 1...86_400) {
            settings.server.tlsReloadInterval = .milliseconds(Int64(seconds * 1000))
        }
        // Whole seconds: the header's max-age takes no fraction.
        if let seconds = try number("SIWA_TLS_HSTS_MAX_AGE", 0...63_072_000) {
            guard seconds == seconds.rounded() else {
                throw Problem(
                    variable: "SIWA_TLS_HSTS_MAX_AGE",
                    fix: "expected whole seconds, got '\(Self.plain(seconds))'"
                )
            }
            settings.server.hstsMaxAge = seconds == 0 ? nil : Int(seconds)
        }
        let certificate = value("SIWA_TLS_CERTIFICATE_FILE")
        let key = value("SIWA_TLS_KEY_FILE")
        guard certificate != nil || key != nil else { return }
        guard let certificate, let key else {
            throw Problem(
                variable: certificate == nil ? "SIWA_TLS_CERTIFICATE_FILE" : "SIWA_TLS_KEY_FILE",
                fix: "set SIWA_TLS_CERTIFICATE_FILE and SIWA_TLS_KEY_FILE together"
            )
        }
        do {
            settings.tls = try ServerTLS(certificateFile: certificate, keyFile: key)
        } catch {
            throw Problem(
                variable: error.file == key ? "SIWA_TLS_KEY_FILE" : "SIWA_TLS_CERTIFICATE_FILE",
                fix: error.description
            )
        }
        if !publicURLIsSet {
            settings.server.publicURL = "https://localhost:\(settings.port)"
        } else if !settings.server.publicURL.hasPrefix("https://") {
            throw Problem(
                variable: "SIWA_PUBLIC_URL",
                fix:
                    "siwa serves https (SIWA_TLS_CERTIFICATE_FILE) but the public URL is \(settings.server.publicURL); "
                    + "set the https URL browsers use"
            )
        }
    }

    /// The Apple side: client ids, the team's credentials, Apple's base URL and the clock leeway.
    private static func loadApple(
        value: (String) -> String?,
        number: (String, ClosedRange<Double>) throws -> Double?
    ) throws -> AppleSignInConfiguration {
        let bundleIDs = (value("SIWA_BUNDLE_IDS") ?? "").split(separator: ",").map {
            ClientID(String($0).trimmingCharacters(in: .whitespaces))
        }
        let servicesID = value("SIWA_SERVICES_ID").map { ClientID($0) }
        var credentials: ClientSecretCredentials?
        if let teamID = value("SIWA_TEAM_ID") {
            guard let keyID = value("SIWA_KEY_ID") else {
                throw Problem(
                    variable: "SIWA_KEY_ID",
                    fix: "set it with SIWA_TEAM_ID: the 10-character id of your .p8 key"
                )
            }
            let key: AppleDeveloperKey.Source
            if let file = value("SIWA_PRIVATE_KEY_FILE") {
                key = .file(file)
            } else if let pem = value("SIWA_PRIVATE_KEY") {
                key = .pem(pem)
            } else if let base64 = value("SIWA_PRIVATE_KEY_BASE64") {
                key = .base64(base64)
            } else {
                throw Problem(
                    variable: "SIWA_PRIVATE_KEY_FILE",
                    fix: "set SIWA_PRIVATE_KEY_FILE (or SIWA_PRIVATE_KEY, SIWA_PRIVATE_KEY_BASE64) to your AuthKey_*.p8"
                )
            }
            do {
                credentials = try ClientSecretCredentials(teamID: teamID, keyID: keyID, privateKey: key)
            } catch {
                throw Problem(variable: "SIWA_" + Self.environmentName(error.reason), fix: error.reason)
            }
        }
        let configuredKeySet = try loadAppleKeySet(value: value)
        do {
            var apple = try AppleSignInConfiguration(
                bundleIDs: bundleIDs,
                servicesID: servicesID,
                credentials: credentials,
                appleBaseURL: try AppleBaseURL(value("SIWA_APPLE_BASE_URL") ?? "https://appleid.apple.com"),
                clockLeeway: try number("SIWA_CLOCK_LEEWAY", 0...300) ?? 60
            )
            apple.configuredKeySet = configuredKeySet
            return apple
        } catch let error as AppleSignInError {
            throw Problem(variable: "SIWA_" + Self.environmentName(error.reason), fix: error.reason)
        }
    }

    /// `SIWA_APPLE_KEY_SET` (or its `_FILE`) and `SIWA_APPLE_KEY_SET_MODE`: a copy of Apple's key set, refused whole
    /// when any key in it is unusable, since the key it lost would fail only at the sign-in that needs it.
    static func loadAppleKeySet(value: (String) -> String?) throws -> ConfiguredAppleKeySet? {
        let mode = value("SIWA_APPLE_KEY_SET_MODE")
        var use = ConfiguredAppleKeySet.Use.fallback
        if let mode {
            guard let parsed = ConfiguredAppleKeySet.Use(rawValue: mode.lowercased()) else {
                throw Problem(variable: "SIWA_APPLE_KEY_SET_MODE", fix: "expected fallback or instead, got '\(mode)'")
            }
            use = parsed
        }
        guard let text = value("SIWA_APPLE_KEY_SET"), !text.isEmpty else {
            if mode != nil {
                throw Problem(
                    variable: "SIWA_APPLE_KEY_SET_MODE",
                    fix: "set SIWA_APPLE_KEY_SET_FILE (or SIWA_APPLE_KEY_SET) to a copy of Apple's /auth/keys too"
                )
            }
            return nil
        }
        do {
            return ConfiguredAppleKeySet(keySet: try AppleKeySet(configuredJWKS: Array(text.utf8)), use: use)
        } catch {
            throw Problem(
                variable: "SIWA_APPLE_KEY_SET",
                fix: "\(error.reason); expected a copy of Apple's key set, {\"keys\": [...]} from /auth/keys"
            )
        }
    }

    /// The tutorials' client contracts: `SIWA_COMPAT` (a comma-separated list of servicestack, vapor, rentmanager, or
    /// all), `SIWA_ADMIN_USERS` (siwa user ids or Apple user ids with the Admin role), `SIWA_SERVICESTACK_TOKEN_COOKIES`.
    private static func loadCompatibilitySettings(
        into server: inout AuthServerConfiguration,
        value: (String) -> String?,
        flag: (String) throws -> Bool?
    ) throws {
        let contracts = (value("SIWA_COMPAT") ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }.filter { !$0.isEmpty }
        for contract in contracts {
            switch contract {
            case "all":
                server.compatibility.serviceStack = true
                server.compatibility.vaporTutorial = true
                server.compatibility.rentManager = true
            case "servicestack": server.compatibility.serviceStack = true
            case "vapor": server.compatibility.vaporTutorial = true
            case "rentmanager": server.compatibility.rentManager = true
            default:
                throw Problem(
                    variable: "SIWA_COMPAT",
                    fix: "expected a list of servicestack, vapor, rentmanager or all, got '\(contract)'"
                )
            }
        }
        let admins = (value("SIWA_ADMIN_USERS") ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }.filter { !$0.isEmpty }
        if let email = admins.first(where: { $0.contains("@") }) {
            throw Problem(
                variable: "SIWA_ADMIN_USERS",
                fix:
                    "'\(email)' is an email: roles are granted by siwa user id or Apple user id (sub) only, since an email "
                    + "can be unverified or shared by several Apple IDs; `siwa users list` shows both ids"
            )
        }
        server.compatibility.adminUsers = Set(admins)
        if let cookies = try flag("SIWA_SERVICESTACK_TOKEN_COOKIES") {
            server.compatibility.serviceStackTokenCookies = cookies
        }
    }

    /// `SIWA_OIDC_CLIENTS`: the OpenID provider's relying parties, a JSON array of objects (docs/oidc.md).
    static func openIDClients(_ text: String) throws -> [OpenIDClient] {
        func problem(_ fix: String) -> Problem { Problem(variable: "SIWA_OIDC_CLIENTS", fix: fix) }
        guard let list = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Any] else {
            throw problem("expected a JSON array of client objects (docs/oidc.md)")
        }
        let known: Set<String> = [
            "id", "secretSHA256", "public", "redirectURIs", "scopes", "postLogoutRedirectURIs",
            "idTokenSignedResponseAlg", "name",
        ]
        var clients: [OpenIDClient] = []
        for (index, element) in list.enumerated() {
            guard let object = element as? [String: Any] else { throw problem("client \(index + 1) is not an object") }
            guard let id = object["id"] as? String, OpenIDClient.isValidID(id) else {
                throw problem("client \(index + 1): \"id\" must be 1 to 128 characters of A-Z a-z 0-9 . _ ~ -")
            }
            if let unknown = object.keys.filter({ !known.contains($0) }).sorted().first {
                throw problem(
                    "client \(id): unknown field \"\(unknown)\" (expected \(known.sorted().joined(separator: ", ")))"
                )
            }
            guard !clients.contains(where: { $0.id == id }) else { throw problem("client \(id) is listed twice") }
            let isPublic = object["public"] as? Bool ?? false
            var secretHash: [UInt8]?
            switch (object["secretSHA256"], isPublic) {
            case (let hex as String, false):
                guard let bytes = Self.hexBytes(hex), bytes.count == 32 else {
                    throw problem(
                        "client \(id): \"secretSHA256\" must be 64 hex digits (siwa oidc new-client prints it)"
                    )
                }
                secretHash = bytes
            case (nil, true):
                secretHash = nil
            case (nil, false):
                throw problem("client \(id): give \"secretSHA256\" (a confidential client) or \"public\": true")
            default:
                throw problem("client \(id): a public client has no \"secretSHA256\"")
            }
            func uris(_ field: String, required: Bool) throws -> [String] {
                guard let value = object[field] else {
                    if required { throw problem("client \(id): \"\(field)\" is missing") }
                    return []
                }
                guard let list = value as? [String], !required || !list.isEmpty else {
                    throw problem("client \(id): \"\(field)\" must be a non-empty array of URLs")
                }
                for uri in list where !Self.isValidRedirectURI(uri) {
                    throw problem(
                        "client \(id): \(field) '\(uri)' must be an absolute https URL (http only on localhost or "
                            + "127.0.0.1, or an app's own scheme such as com.example.app:/callback) without a fragment"
                    )
                }
                return list
            }
            let redirectURIs = try uris("redirectURIs", required: true)
            let logoutURIs = try uris("postLogoutRedirectURIs", required: false)
            var scopes = Set(OpenIDConfiguration.supportedScopes)
            if let value = object["scopes"] {
                guard let list = value as? [String] else { throw problem("client \(id): \"scopes\" must be an array") }
                if let unknown = list.first(where: { !OpenIDConfiguration.supportedScopes.contains($0) }) {
                    throw problem(
                        "client \(id): scope '\(unknown)' is not one of "
                            + OpenIDConfiguration.supportedScopes.joined(separator: ", ")
                    )
                }
                scopes = Set(list)
            }
            var algorithm = OpenIDClient.IDTokenSigningAlgorithm.rs256
            if let value = object["idTokenSignedResponseAlg"] {
                guard let name = value as? String, let chosen = OpenIDClient.IDTokenSigningAlgorithm(rawValue: name)
                else {
                    throw problem(
                        "client \(id): \"idTokenSignedResponseAlg\" must be "
                            + OpenIDClient.IDTokenSigningAlgorithm.allCases.map(\.rawValue).joined(separator: " or ")
                    )
                }
                algorithm = chosen
            }
            var name: String?
            if let value = object["name"] {
                guard let text = value as? String, OpenIDClient.isValidName(text) else {
                    throw problem("client \(id): \"name\" must be 1 to 64 characters (what users call the app)")
                }
                name = text
            }
            clients.append(
                OpenIDClient(
                    id: id,
                    secretHash: secretHash,
                    redirectURIs: redirectURIs,
                    scopes: scopes,
                    postLogoutRedirectURIs: logoutURIs,
                    idTokenSigningAlgorithm: algorithm,
                    name: name
                )
            )
        }
        return clients
    }

    /// https, http on a loopback host (development), or an app's private-use scheme (RFC 8252 §7.1: a reverse
    /// domain name); never a fragment.
    static func isValidRedirectURI(_ uri: String) -> Bool {
        guard !uri.contains("#"), uri.utf8.count <= 2048, let url = URL(string: uri),
            let scheme = url.scheme?.lowercased()
        else { return false }
        switch scheme {
        case "https": return url.host?.isEmpty == false
        case "http": return ["localhost", "127.0.0.1", "::1", "[::1]"].contains(url.host ?? "")
        default: return scheme.contains(".")
        }
    }

    private static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.lowercased().utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        return bytes
    }

    /// The web sign-in settings: callback URL, allowed return origins and Android packages, state lifetime, cookie
    /// names and flags, and the domain-association file.
    private static func loadWebSettings(
        into server: inout AuthServerConfiguration,
        value: (String) -> String?,
        number: (String, ClosedRange<Double>) throws -> Double?,
        flag: (String) throws -> Bool?
    ) throws {
        func list(_ name: String) -> [String] {
            (value(name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty
            }
        }
        if let callback = value("SIWA_WEB_CALLBACK_URL") {
            guard ReturnURLPolicy.origin(of: callback) != nil else {
                throw Problem(
                    variable: "SIWA_WEB_CALLBACK_URL",
                    fix:
                        "expected the https URL registered for the Services ID, such as https://auth.example.com/auth/apple/callback"
                )
            }
            server.web.callbackURL = callback
        }
        server.web.allowedReturnOrigins = list("SIWA_ALLOWED_RETURN_ORIGINS")
        server.web.allowedAndroidPackages = list("SIWA_ALLOWED_ANDROID_PACKAGES")
        do {
            _ = try ReturnURLPolicy(allowedOrigins: server.web.allowedReturnOrigins)
        } catch {
            throw Problem(variable: "SIWA_ALLOWED_RETURN_ORIGINS", fix: error.reason)
        }
        do {
            _ = try ReturnURLPolicy(allowedAndroidPackages: server.web.allowedAndroidPackages)
        } catch {
            throw Problem(variable: "SIWA_ALLOWED_ANDROID_PACKAGES", fix: error.reason)
        }
        if let seconds = try number("SIWA_WEB_STATE_LIFETIME", 60...3600) { server.web.stateLifetime = seconds }
        for (variable, keyPath) in [
            ("SIWA_SESSION_COOKIE", \WebSignInConfiguration.sessionCookieName),
            ("SIWA_REFRESH_COOKIE", \WebSignInConfiguration.refreshCookieName),
        ] {
            guard let name = value(variable) else { continue }
            guard !name.isEmpty, name.utf8.count <= 64,
                name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
            else {
                throw Problem(variable: variable, fix: "expected a cookie name of letters, digits, '_' and '-'")
            }
            server.web[keyPath: keyPath] = name
        }
        guard server.web.sessionCookieName != server.web.refreshCookieName else {
            throw Problem(variable: "SIWA_REFRESH_COOKIE", fix: "the two cookie names must differ")
        }
        if let secure = try flag("SIWA_SECURE_COOKIES") { server.web.secureCookies = secure }
        if let file = value("SIWA_DOMAIN_ASSOCIATION_FILE") {
            guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8)
            else {
                throw Problem(
                    variable: "SIWA_DOMAIN_ASSOCIATION_FILE",
                    fix: "cannot read \(file): expected the apple-developer-domain-association.txt Apple gave you"
                )
            }
            server.web.domainAssociation = text
        }
    }

    /// A bound as people write it: `65535`, not `65535.0`.
    static func plain(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }

    /// The data keys from `SIWA_DATA_KEY` (comma-separated base64 of 32 bytes each, the first sealing), or from the
    /// key file, created on first start with one new key (0600).
    static func loadDataKeys(_ list: String?, file: String) throws -> DataKeyRing {
        if let list {
            do {
                return try DataKeyRing.parse(list: list)
            } catch {
                throw Problem(
                    variable: "SIWA_DATA_KEY",
                    fix: "\(error); the value is a comma-separated list of keys, the first sealing"
                )
            }
        }
        if let ring = try DataKeyFile.read(file) { return ring }
        return try DataKeyFile.create(file)
    }

    /// `teamID: …` → `TEAM_ID`, naming the environment variable from a setting in an error reason.
    private static func environmentName(_ reason: String) -> String {
        let setting = reason.split(separator: ":").first.map(String.init) ?? ""
        switch setting {
        case "teamID": return "TEAM_ID"
        case "keyID": return "KEY_ID"
        case "privateKey": return "PRIVATE_KEY_FILE"
        case "servicesID": return "SERVICES_ID"
        case "appleBaseURL": return "APPLE_BASE_URL"
        default: return "BUNDLE_IDS"
        }
    }
}

extension ServerSettings {
    /// The team's Apple client (code exchange, validation, revocation, team transfer) for the operator commands;
    /// `nil` without credentials.
    /// - Parameter observer: told of Apple's answers (`siwa doctor --apple` reads Apple's clock from them).
    func makeAppleClient(
        transport: any HTTPTransport,
        clock: any WallClock = SystemWallClock(),
        logger: Logger,
        observer: (any AppleAPICallObserver)? = nil
    ) -> AppleAPIClient? {
        guard let apple = appleIfConfigured else { return nil }
        return apple.credentials.map { credentials in
            AppleAPIClient(
                configuration: apple,
                transport: transport,
                verifier: IdentityTokenVerifier(
                    configuration: apple,
                    keys: AppleKeyCache(
                        source: apple.keySource(
                            fetching: AppleKeysEndpoint(
                                baseURL: apple.appleBaseURL,
                                transport: transport,
                                logger: logger
                            ),
                            logger: logger
                        ),
                        clock: clock,
                        logger: logger
                    ),
                    clock: clock
                ),
                clientSecrets: ClientSecretFactory(
                    credentials: credentials,
                    lifetime: apple.clientSecretLifetime,
                    clock: clock
                ),
                logger: logger,
                observer: observer
            )
        }
    }
}

extension ServerSettings {
    /// The SQLite file `siwa demo` creates in its folder.
    static let demoDatabasePath = "siwa-demo.sqlite"

    /// The database of an operator command: `--database` when given; else the configured one; else `siwa.sqlite`,
    /// or the demo's file when only that exists in this folder (so that `siwa users list` after `siwa demo` lists the
    /// demo's users). A SQLite file that does not exist is refused unless `createsDatabase`.
    mutating func chooseOperatorDatabase(_ flag: String?, createsDatabase: Bool) throws {
        if let flag, !flag.isEmpty {
            if flag.hasPrefix("postgres://") || flag.hasPrefix("postgresql://") {
                databaseURL = flag
            } else {
                databaseURL = nil
                databasePath = flag
            }
        } else if !databaseIsConfigured, !FileManager.default.fileExists(atPath: databasePath),
            FileManager.default.fileExists(atPath: Self.demoDatabasePath)
        {
            databasePath = Self.demoDatabasePath
            Terminal.error("using \(Self.demoDatabasePath), the database siwa demo left here (--database chooses)")
        }
        if databaseURL == nil, appleIfConfigured == nil { appleIfConfigured = Self.demoApple(for: databasePath) }
        guard databaseURL == nil, !createsDatabase, !FileManager.default.fileExists(atPath: databasePath) else {
            return
        }
        throw Problem(
            variable: flag == nil ? "SIWA_DATABASE_PATH" : "--database",
            fix:
                "there is no database at \(databasePath): point --database (or SIWA_DATABASE_PATH, SIWA_DATABASE_URL) "
                + "at the one siwa serve uses, or create it with siwa migrate"
        )
    }
}

extension ServerSettings {
    /// Where `siwa demo` writes the Apple side it runs with (`KEY=value` lines), beside the demo team's key.
    static let demoAppleSettingsFile = "siwa-emulator/demo-server.env"

    /// The Apple side of the `siwa demo` that ran in this folder on `databasePath`, for an operator command with none
    /// of its own: deleting a demo user then revokes at the demo's emulator (or queues it for the demo to retry)
    /// rather than finding no Apple credentials.
    static func demoApple(for databasePath: String) -> AppleSignInConfiguration? {
        guard let text = try? String(contentsOfFile: demoAppleSettingsFile, encoding: .utf8) else { return nil }
        let variables = SettingsSource.parseEnvFile(text)
        guard let path = variables["SIWA_DATABASE_PATH"],
            DataKeyFile.absolute(path) == DataKeyFile.absolute(databasePath)
        else { return nil }
        return try? load(from: SettingsSource(environment: variables), createsDataKey: false, purpose: .database)
            .appleIfConfigured
    }

    /// The setting the data keys came from.
    var dataKeySetting: String { dataKeyFromVariable ? "SIWA_DATA_KEY" : "SIWA_DATA_KEY_FILE" }

    /// Where the data keys came from, for messages: `SIWA_DATA_KEY` or the key file's path.
    var dataKeySource: String { dataKeyFromVariable ? "SIWA_DATA_KEY" : dataKeyFile }

    /// What to do about data sealed under `id` when the ring lacks it (a database restored from before the key's
    /// retirement): add the key back as one that only opens, from its kept copy when one is beside the key file.
    func missingKeyAdvice(_ id: DataKeyID) -> String {
        if dataKeyFromVariable {
            return "list that key in SIWA_DATA_KEY after the sealing one (from where you kept it when it was retired) "
                + "and restart"
        }
        let file = DataKeyFile.absolute(dataKeyFile)
        if let kept = DataKeyFile.keptCopies(of: id, beside: dataKeyFile).last {
            return "restore the kept key file: add it to the key file, with siwa stopped: cat \(kept) >> \(file)"
        }
        return "add that key back to \(file) as a later line, from your backup of the key file or of "
            + "\(DataKeyFile.retiredFolder(beside: dataKeyFile))/"
    }

    /// Logs, at the first start, that a new data key was made and where: without a copy of it, nothing the database
    /// holds sealed (Apple's refresh tokens, the signing keys) can be opened again.
    func logCreatedDataKey(_ logger: Logger) {
        guard dataKeyCreated else { return }
        logger.warning(
            """
            created a new data key in \(DataKeyFile.absolute(dataKeyFile)): back that file up now, apart from the \
            database's backups, and again after each rotation; without it the data siwa seals cannot be opened
            """,
            metadata: ["data_key": "\(dataKeys.primary.id)"]
        )
    }

    /// The sealer of the data keys; keys from the file are re-read when it changes.
    func makeDataSealer(clock: any WallClock = SystemWallClock(), logger: Logger) -> DataSealer {
        DataSealer(
            keys: dataKeys,
            source: dataKeyFromVariable ? .setting("SIWA_DATA_KEY") : .file(dataKeyFile),
            clock: clock,
            logger: logger
        )
    }

    /// Before anything is served: the data keys open what the database holds sealed (its access-token signing keys,
    /// sealed with the same keys as Apple's refresh tokens). A key file that was missing, and so was created just now,
    /// or keys that are not the database's, stop start-up naming the setting; a key file created for nothing is
    /// removed again, so that restoring the right one is not blocked by it.
    func checkDataKey(opens store: any AccountStore) async throws {
        let sealer = DataSealer(keys: dataKeys, source: .setting(dataKeySetting))
        for key in try await store.signingKeys() {
            do {
                _ = try sealer.open(key.sealedPrivateKey)
            } catch {
                if dataKeyCreated { try? FileManager.default.removeItem(atPath: dataKeyFile) }
                let held = dataKeys.ids.map(\.description).joined(separator: ", ")
                let fix =
                    if dataKeyCreated {
                        "\(dataKeyFile) does not exist, and the database holds data sealed with a data key: restore "
                            + "that key file from your backup (or set SIWA_DATA_KEY to the key); a new key cannot open "
                            + "the data"
                    } else if let id = error.keyID, dataKeys.key(id) == nil {
                        "the database holds data sealed under data key \(id), which \(dataKeySource) lacks (it holds "
                            + "\(held)): it is not the key this database was set up with, or \(id) was retired after "
                            + "this database was backed up; \(missingKeyAdvice(id))"
                    } else {
                        "the data keys (\(dataKeySource)) do not open the data the database holds sealed: it is not "
                            + "the key this database was set up with\(error.keyID.map { "; the data names data key \($0)" } ?? ""); "
                            + "restore that key"
                    }
                throw Problem(variable: dataKeySetting, fix: fix)
            }
        }
    }
}
