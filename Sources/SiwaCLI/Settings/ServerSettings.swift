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
    /// Each value is read through its declaration in ``SettingsCatalog``, which holds the defaults.
    var host: String
    var port: Int
    var server: AuthServerConfiguration
    /// The Apple side; `nil` only for a command that does not need it (``Purpose/database``) when it is not set up.
    var appleIfConfigured: AppleSignInConfiguration?
    /// `postgres://…` when set; otherwise SQLite at ``databasePath``.
    var databaseURL: String?
    var databasePath: String
    /// `SIWA_DATABASE_MAX_CONNECTIONS`: PostgreSQL's pool limit; `nil` for the store's default.
    var databaseMaxConnections: Int?
    /// The data keys: the first seals, every one opens.
    var dataKeys: DataKeyRing
    /// The server's own TLS (`SIWA_TLS_CERTIFICATE_FILE`, `SIWA_TLS_KEY_FILE`); `nil` for plain HTTP.
    var tls: ServerTLS?
    /// `SIWA_LOG_LEVEL`.
    var logLevel: Logger.Level
    /// Whether `SIWA_LOG_LEVEL` was set: an operator command logs only warnings unless asked for more.
    var logLevelIsSet = false
    /// `SIWA_LOG_FORMAT`.
    var logFormat: LogFormat
    /// Where the data key is kept when `SIWA_DATA_KEY` is not set.
    var dataKeyFile: String
    /// Whether ``dataKeys`` were read (or created), rather than a random placeholder.
    var dataKeyFound = false
    /// Whether ``dataKeys`` were created just now, in ``dataKeyFile``.
    var dataKeyCreated = false
    /// Whether ``dataKeys`` came from `SIWA_DATA_KEY` rather than ``dataKeyFile``.
    var dataKeyFromVariable = false
    /// Whether the database location was set (`SIWA_DATABASE_URL`, `SIWA_DATABASE_URL_FILE` or `SIWA_DATABASE_PATH`)
    /// rather than defaulted.
    var databaseIsConfigured = false
    /// The setting ``databaseURL`` came from: `SIWA_DATABASE_URL`, or `SIWA_DATABASE_URL_FILE` naming its file.
    var databaseURLSetting = "SIWA_DATABASE_URL"
    /// The configuration file the settings were read from, if any.
    var configFile: String?
    /// `tracing.*`; `nil` without `SIWA_TRACING_ENDPOINT`: tracing off.
    var tracing: TracingSettings?

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
        from source: SettingsSource
    ) throws {
        server.connections.maximumConnections = try source.value(\.internet.maxConnections)
        server.connections.maximumConnectionsPerAddress = try source.value(\.internet.maxConnectionsPerAddress)
        server.connections.requestHeadTimeout = try source.value(\.internet.requestHeadTimeout)
        server.connections.requestBodyTimeout = try source.value(\.internet.requestBodyTimeout)
        let header = try source.value(\.internet.forwardedHeader)
        if let proxies = try source.given(\.internet.trustedProxies) {
            do throws(TrustedProxies.Failure) {
                server.trustedProxies = try TrustedProxies(proxies, header: header)
            } catch {
                throw Problem(
                    variable: SettingsCatalog.declared.internet.trustedProxies.variable,
                    fix: error.description
                )
            }
        }
        server.adminNetworks = try source.value(\.internet.adminAllowedNetworks)
        server.refreshReuseGrace = try source.value(\.sessions.refreshReuseGrace)
        server.maximumSessionsPerIdentityToken = try source.value(\.sessions.maxSessionsPerIdentityToken)
        server.maximumFlowsPerClient = try source.value(\.internet.maxFlowsPerClient)
        let rate = try source.value(\.internet.notificationRateLimit)
        server.notificationRateLimit = rate == 0 ? nil : .init(requestsPerSecond: rate, burst: max(1, rate * 10))
    }

    /// Reads the settings from `environment` alone (the demo's fixed settings, tests).
    static func load(from environment: [String: String], createsDataKey: Bool = true) throws -> ServerSettings {
        try load(from: SettingsSource(environment: environment), createsDataKey: createsDataKey)
    }

    /// Reads and validates the settings, each through its declaration in ``SettingsCatalog``.
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
        if refusesUnknownKeys, let unknown = source.unknownFileKeys.first,
            try !source.value(\.server.allowUnknownSettings)
        {
            throw Problem(variable: unknown, fix: SettingsCatalog.unknownKeyFix(unknown))
        }

        var server = AuthServerConfiguration()
        server.publicURL = try source.value(\.server.publicURL)
        server.accessTokenLifetime = try source.value(\.sessions.accessTokenLifetime)
        server.refreshTokenLifetime = try source.value(\.sessions.refreshTokenLifetime)
        server.requireServerNonce = try source.value(\.sessions.requireServerNonce)
        let rate = try source.value(\.internet.rateLimit)
        let burst = try source.given(\.internet.rateBurst) ?? max(1, rate * 2)
        server.authRateLimit = rate == 0 ? nil : .init(requestsPerSecond: rate, burst: burst)
        let idleTimeout = try source.value(\.internet.idleTimeout)
        server.idleTimeout = idleTimeout == .zero ? nil : idleTimeout
        server.maximumHeaderSize = try source.value(\.internet.maxHeaderSize)
        try loadEdgeSettings(into: &server, from: source)
        server.userCacheCapacity = try source.value(\.sessions.userCacheSize)
        server.linkAccountsByEmail = try source.value(\.sessions.linkAccountsByEmail)
        server.lifecycle.deletionMode = try source.value(\.lifecycle.deletionMode)
        server.lifecycle.appleValidationInterval = try source.value(\.lifecycle.appleValidationInterval)
        server.lifecycle.refuseRefreshWhenAppleUnavailable = try source.value(
            \.lifecycle.refuseRefreshWhenAppleUnavailable
        )
        server.housekeeping.auditRetention = Double(try source.value(\.lifecycle.auditRetentionDays)) * 86_400
        server.housekeeping.eventRetention = Double(try source.value(\.lifecycle.eventRetentionDays)) * 86_400

        try loadWebSettings(into: &server, from: source)
        try loadCompatibilitySettings(into: &server, from: source)
        if let clients = try source.given(\.openID.clients) { server.openID.clients = clients }
        if let endpoints = try source.given(\.webhooks.endpoints) { server.webhooks.endpoints = endpoints }
        server.webhooks.allowedNetworks = try source.value(\.webhooks.allowedNetworks)
        server.webhooks.allowsPlainHTTPToLoopback = try source.value(\.webhooks.allowLoopbackHTTP)
        server.webhooks.attemptTimeout = try source.value(\.webhooks.timeout)
        server.webhooks.retryFor = Double(try source.value(\.webhooks.retryHours)) * 3_600
        let disableAfter = try source.value(\.webhooks.disableAfterHours)
        server.webhooks.disableAfter = disableAfter == 0 ? nil : Double(disableAfter) * 3_600
        do throws(WebhookEndpointError) {
            try server.webhooks.checkEndpoints()
        } catch {
            throw Problem(variable: "SIWA_WEBHOOKS_ENDPOINTS", fix: error.description)
        }
        do throws(WebhookEndpointError) {
            try server.webhooks.checkEndpoints(server.openID.clients.compactMap(\.backchannelLogoutEndpoint))
        } catch {
            throw Problem(variable: "SIWA_OIDC_CLIENTS", fix: error.description)
        }

        let apple: AppleSignInConfiguration?
        do {
            apple = try loadApple(from: source)
        } catch {
            // An operator command that only needs the database runs without the Apple side.
            guard purpose == .database else { throw error }
            apple = nil
        }

        var settings = ServerSettings(
            host: try source.value(\.server.host),
            port: try source.value(\.server.port),
            server: server,
            appleIfConfigured: apple,
            databasePath: try source.value(\.storage.databasePath),
            dataKeys: DataKeyRing(key: SymmetricKey(size: .bits256)),
            logLevel: try source.value(\.server.logLevel),
            logFormat: try source.value(\.server.logFormat),
            dataKeyFile: try source.value(\.storage.dataKeyFile)
        )
        let metricsPort = try source.value(\.server.metricsPort)
        if metricsPort != 0, metricsPort == settings.port {
            throw Problem(
                variable: SettingsCatalog.declared.server.metricsPort.variable,
                fix: "the metrics listener needs a port of its own, not SIWA_PORT's \(metricsPort) (0: no listener)"
            )
        }
        settings.server.metricsListener =
            metricsPort == 0 ? nil : MetricsListener(host: try source.value(\.server.metricsHost), port: metricsPort)
        settings.tracing = try TracingSettings.load(from: source)
        try loadTLS(into: &settings, from: source)
        settings.logLevelIsSet = source.isGiven(\.server.logLevel)
        if let given = try databaseURL(from: source) {
            settings.databaseURL = given.url
            settings.databaseURLSetting = given.setting
        }
        settings.databaseIsConfigured =
            settings.databaseURL != nil || source.isGiven(\.storage.databasePath)
        settings.configFile = source.configFile
        settings.databaseMaxConnections = try source.value(\.storage.databaseMaxConnections)
        settings.server.storeRefreshInterval = try source.value(\.storage.databasePollInterval)
        let keyFile = settings.dataKeyFile
        let keysFromVariable = try source.given(\.storage.dataKey)
        let existed = keysFromVariable != nil || FileManager.default.fileExists(atPath: keyFile)
        if createsDataKey || existed {
            settings.dataKeys = try keysFromVariable ?? loadDataKeys(file: keyFile)
            settings.dataKeyFound = true
            settings.dataKeyCreated = !existed
            settings.dataKeyFromVariable = keysFromVariable != nil
        }
        return settings
    }

    /// Built-in HTTPS: both files or neither; a certificate that cannot be used stops start-up naming its setting. The
    /// public URL must then be https (it is `https://localhost:<port>` when not set), since cookies' `Secure` flag and
    /// `__Host-` prefix follow it.
    private static func loadTLS(into settings: inout ServerSettings, from source: SettingsSource) throws {
        let https = SettingsCatalog.declared.https
        settings.server.tlsReloadInterval = try source.value(\.https.reloadInterval)
        let hstsMaxAge = try source.value(\.https.hstsMaxAge)
        settings.server.hstsMaxAge = hstsMaxAge == 0 ? nil : hstsMaxAge
        let certificate = try source.given(\.https.certificateFile)
        let key = try source.given(\.https.keyFile)
        guard certificate != nil || key != nil else { return }
        guard let certificate, let key else {
            throw Problem(
                variable: certificate == nil ? https.certificateFile.variable : https.keyFile.variable,
                fix: "set SIWA_TLS_CERTIFICATE_FILE and SIWA_TLS_KEY_FILE together"
            )
        }
        do {
            settings.tls = try ServerTLS(certificateFile: certificate, keyFile: key)
        } catch {
            throw Problem(
                variable: error.file == key ? https.keyFile.variable : https.certificateFile.variable,
                fix: error.description
            )
        }
        if !source.isGiven(\.server.publicURL) {
            settings.server.publicURL = "https://localhost:\(settings.port)"
        } else if !settings.server.publicURL.hasPrefix("https://") {
            throw Problem(
                variable: SettingsCatalog.declared.server.publicURL.variable,
                fix:
                    "siwa serves https (SIWA_TLS_CERTIFICATE_FILE) but the public URL is \(settings.server.publicURL); "
                    + "set the https URL browsers use"
            )
        }
    }

    /// The Apple side: client ids, the team's credentials, Apple's base URL and the clock leeway.
    private static func loadApple(from source: SettingsSource) throws -> AppleSignInConfiguration {
        let bundleIDs = try source.value(\.apple.bundleIDs).map { ClientID($0) }
        let servicesID = try source.given(\.apple.servicesID).map { ClientID($0) }
        var credentials: ClientSecretCredentials?
        if let teamID = try source.given(\.apple.teamID) {
            guard let keyID = try source.given(\.apple.keyID) else {
                throw Problem(
                    variable: SettingsCatalog.declared.apple.keyID.variable,
                    fix: "set it with SIWA_TEAM_ID: the 10-character id of your .p8 key"
                )
            }
            guard let key = try developerKey(from: source) else {
                throw Problem(
                    variable: SettingsCatalog.declared.apple.privateKeyFile.variable,
                    fix: "set SIWA_PRIVATE_KEY_FILE (or SIWA_PRIVATE_KEY, SIWA_PRIVATE_KEY_BASE64) to your AuthKey_*.p8"
                )
            }
            do {
                credentials = try ClientSecretCredentials(teamID: teamID, keyID: keyID, privateKey: key.source)
            } catch {
                throw Problem(variable: key.variable, fix: error.reason)
            }
        }
        let configuredKeySet = try loadAppleKeySet(from: source)
        do {
            var apple = try AppleSignInConfiguration(
                bundleIDs: bundleIDs,
                servicesID: servicesID,
                credentials: credentials,
                appleBaseURL: try source.value(\.apple.appleBaseURL),
                clockLeeway: try source.value(\.apple.clockLeeway)
            )
            apple.configuredKeySet = configuredKeySet
            return apple
        } catch let error as AppleSignInError {
            // The shapes are the declarations' to check; what is left is the whole: no client id, or a Services ID
            // that is also a bundle id.
            let variable =
                error.reason.hasPrefix("servicesID")
                ? SettingsCatalog.declared.apple.servicesID.variable : SettingsCatalog.declared.apple.bundleIDs.variable
            throw Problem(variable: variable, fix: error.reason)
        }
    }

    /// The Apple developer key the settings give, and its variable: the file, else the PEM text, else the base64.
    static func developerKey(
        from source: SettingsSource
    ) throws(Problem) -> (variable: String, source: AppleDeveloperKey.Source)? {
        let apple = SettingsCatalog.declared.apple
        if let file = try source.given(\.apple.privateKeyFile) { return (apple.privateKeyFile.variable, .file(file)) }
        if let pem = try source.given(\.apple.privateKey) { return (apple.privateKey.variable, .pem(pem)) }
        if let base64 = try source.given(\.apple.privateKeyBase64) {
            return (apple.privateKeyBase64.variable, .base64(base64))
        }
        return nil
    }

    /// `SIWA_APPLE_KEY_SET` (or its `_FILE`) and `SIWA_APPLE_KEY_SET_MODE`: a copy of Apple's key set, refused whole
    /// when any key in it is unusable, since the key it lost would fail only at the sign-in that needs it.
    static func loadAppleKeySet(from source: SettingsSource) throws -> ConfiguredAppleKeySet? {
        let use = try source.value(\.apple.appleKeySetMode)
        guard let keySet = try source.given(\.apple.appleKeySet) else {
            if source.isGiven(\.apple.appleKeySetMode) {
                throw Problem(
                    variable: SettingsCatalog.declared.apple.appleKeySetMode.variable,
                    fix: "set SIWA_APPLE_KEY_SET_FILE (or SIWA_APPLE_KEY_SET) to a copy of Apple's /auth/keys too"
                )
            }
            return nil
        }
        return ConfiguredAppleKeySet(keySet: keySet, use: use)
    }

    /// The tutorials' client contracts: `SIWA_COMPAT`, `SIWA_ADMIN_USERS` and `SIWA_SERVICESTACK_TOKEN_COOKIES`.
    private static func loadCompatibilitySettings(
        into server: inout AuthServerConfiguration,
        from source: SettingsSource
    ) throws {
        for contract in try source.value(\.compatibility.compat) {
            switch contract {
            case "all":
                server.compatibility.serviceStack = true
                server.compatibility.vaporTutorial = true
                server.compatibility.rentManager = true
            case "servicestack": server.compatibility.serviceStack = true
            case "vapor": server.compatibility.vaporTutorial = true
            default: server.compatibility.rentManager = true
            }
        }
        server.compatibility.adminUsers = Set(try source.value(\.compatibility.adminUsers))
        server.compatibility.serviceStackTokenCookies = try source.value(\.compatibility.servicestackTokenCookies)
    }

    /// `SIWA_OIDC_CLIENTS`: the OpenID provider's relying parties, a JSON array of objects (docs/oidc.md).
    static func openIDClients(_ text: String) throws -> [OpenIDClient] {
        func problem(_ fix: String) -> Problem { Problem(variable: "SIWA_OIDC_CLIENTS", fix: fix) }
        guard let list = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Any] else {
            throw problem("expected a JSON array of client objects (docs/oidc.md)")
        }
        let known: Set<String> = [
            "id", "secretSHA256", "public", "redirectURIs", "scopes", "postLogoutRedirectURIs",
            "idTokenSignedResponseAlg", "name", "backchannelLogoutURI", "backchannelLogoutSessionRequired",
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
            var client = OpenIDClient(
                id: id,
                secretHash: secretHash,
                redirectURIs: redirectURIs,
                scopes: scopes,
                postLogoutRedirectURIs: logoutURIs,
                idTokenSigningAlgorithm: algorithm,
                name: name
            )
            if let value = object["backchannelLogoutURI"] {
                // OpenID Connect Back-Channel Logout 1.0 §2.2: an absolute URI without a fragment. Where it may point
                // (https, the refused ranges) is checked with the webhooks' rules once every setting is read.
                guard let text = value as? String, text.utf8.count <= 2048, !text.contains("#"),
                    let url = URL(string: text), url.scheme != nil, url.host?.isEmpty == false
                else {
                    throw problem(
                        "client \(id): \"backchannelLogoutURI\" must be an absolute https URL without a fragment"
                    )
                }
                client.backchannelLogoutURI = url
            }
            if let value = object["backchannelLogoutSessionRequired"] {
                guard let flag = value as? Bool else {
                    throw problem("client \(id): \"backchannelLogoutSessionRequired\" must be true or false")
                }
                client.backchannelLogoutSessionRequired = flag
            }
            clients.append(client)
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
        from source: SettingsSource
    ) throws {
        server.web.callbackURL = try source.given(\.web.callbackURL)
        server.web.allowedReturnOrigins = try source.value(\.web.allowedReturnOrigins)
        server.web.allowedAndroidPackages = try source.value(\.web.allowedAndroidPackages)
        server.web.stateLifetime = try source.value(\.web.stateLifetime)
        server.web.sessionCookieName = try source.value(\.web.sessionCookie)
        server.web.refreshCookieName = try source.value(\.web.refreshCookie)
        guard server.web.sessionCookieName != server.web.refreshCookieName else {
            throw Problem(
                variable: SettingsCatalog.declared.web.refreshCookie.variable,
                fix: "the two cookie names must differ"
            )
        }
        server.web.secureCookies = try source.given(\.web.secureCookies)
        server.web.domainAssociation = try source.given(\.web.domainAssociationFile)
        server.branding.productName = try source.given(\.branding.productName)
        server.branding.logo = try source.given(\.branding.logoFile)
        server.branding.buttonStyle = try source.value(\.branding.buttonStyle)
        server.branding.supportURL = try source.given(\.branding.supportURL)
        server.branding.afterSignInURL = try source.given(\.branding.afterSignInURL)
    }

    /// The data keys of the key file, created on first start with one new key (0600).
    /// Reads the data-key file, creating it when missing, unless the keys were read already: what `siwa migrate` does
    /// once it knows that it will migrate.
    mutating func readOrCreateDataKeys() throws {
        guard !dataKeyFound else { return }
        let existed = FileManager.default.fileExists(atPath: dataKeyFile)
        dataKeys = try Self.loadDataKeys(file: dataKeyFile)
        dataKeyFound = true
        dataKeyCreated = !existed
    }

    static func loadDataKeys(file: String) throws -> DataKeyRing {
        if let ring = try DataKeyFile.read(file) { return ring }
        return try DataKeyFile.create(file)
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

    /// The configuration of a service installed as `docs/deploy.md` says: an operator command given neither it nor a
    /// database refuses to guess while it exists.
    static let serviceConfigurationFile = "/etc/siwa/siwa.json"

    /// The database of an operator command: `--database` when given; else the configured one; else `siwa.sqlite`,
    /// or the demo's file when only that exists in this folder (so that `siwa users list` after `siwa demo` lists the
    /// demo's users). A SQLite file that does not exist is refused unless `createsDatabase`. Never a default when a
    /// configuration is given, or `serviceConfiguration` exists: that would be another database than the service's.
    mutating func chooseOperatorDatabase(
        _ flag: String?,
        createsDatabase: Bool,
        serviceConfiguration: String = Self.serviceConfigurationFile
    ) throws {
        if let flag, !flag.isEmpty {
            if flag.hasPrefix("postgres://") || flag.hasPrefix("postgresql://") {
                databaseURL = flag
                databaseURLSetting = "--database"
            } else {
                databaseURL = nil
                databasePath = flag
            }
            databaseIsConfigured = true
        } else if !databaseIsConfigured, let configFile {
            // The service's database is whatever its configuration names; a guess here would act on another one.
            throw Problem(
                variable: "--config",
                fix:
                    "\(configFile) names no database (database.path, database.url or database.urlFile), so this "
                    + "command would act on \(DataKeyFile.absolute(databasePath)), which need not be the service's: "
                    + "name the database in the configuration (siwa serve reads the same), or pass --database"
            )
        } else if !databaseIsConfigured, FileManager.default.fileExists(atPath: serviceConfiguration) {
            throw Problem(
                variable: "--config",
                fix:
                    "\(serviceConfiguration) exists, and this command was given no configuration and no database: "
                    + "pass --config \(serviceConfiguration) to act on the service's database, or --database for "
                    + "another"
            )
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
    /// The PostgreSQL URL the settings give, and the setting that gave it: `database.url`, or the file that
    /// `database.urlFile` names (read here, as the user the command runs as). `nil` for SQLite.
    /// - Throws: ``Problem`` naming the setting: both given, a file this user cannot read, or no URL in it (whose
    ///   content is never repeated: it holds the password).
    static func databaseURL(from source: SettingsSource) throws(Problem) -> (url: String, setting: String)? {
        let declared = SettingsCatalog.declared.storage
        let url = try source.given(\.storage.databaseURL)
        guard let file = try source.given(\.storage.databaseURLFile) else {
            return url.map { ($0, declared.databaseURL.variable) }
        }
        let variable = declared.databaseURLFile.variable
        guard url == nil else {
            throw Problem(
                variable: variable,
                fix: "\(declared.databaseURL.variable) is set too: set the URL or its file, not both"
            )
        }
        guard let data = FileManager.default.contents(atPath: file) else {
            let reason =
                access(file, F_OK) == 0
                ? "\(file) exists, but \(Self.userName) cannot read it: run the command as the user siwa serve runs "
                    + "as (runuser -u siwa -- siwa …), with the file owned by root, group siwa, mode 0640"
                : "there is no file \(file)"
            throw Problem(variable: variable, fix: reason)
        }
        var text = String(decoding: data, as: UTF8.self)
        while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
        text = text.trimmingCharacters(in: .whitespaces)
        guard declared.databaseURL.refusal(of: text) == nil, !text.contains("\n") else {
            throw Problem(
                variable: variable,
                fix:
                    "\(file) must hold one line, postgres://user:password@host:port/database (its content is not shown)"
            )
        }
        return (text, variable)
    }

    /// The user this process runs as, for messages.
    private static var userName: String {
        getpwuid(geteuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } } ?? "uid \(geteuid())"
    }

    /// The setting that names the database: `SIWA_DATABASE_PATH`, or the one the PostgreSQL URL came from.
    var databaseSettingName: String { databaseURL == nil ? "SIWA_DATABASE_PATH" : databaseURLSetting }

    /// The database the settings name, for the first line of an operator command and for doctor: the engine, where
    /// it is (a PostgreSQL URL without its password) and the setting that named it.
    var databaseDescription: String {
        if let databaseURL {
            return "PostgreSQL \(Self.shown(postgresURL: databaseURL)) (\(databaseURLSetting))"
        }
        let path = DataKeyFile.absolute(databasePath)
        return "SQLite \(path) (\(databaseIsConfigured ? "SIWA_DATABASE_PATH" : "the default, in this folder"))"
    }

    /// A PostgreSQL URL as it may be printed: user, host, port and database, never the password or the query.
    static func shown(postgresURL url: String) -> String {
        guard let components = URLComponents(string: url), let host = components.host else { return "(URL not shown)" }
        let user = components.user.map { "\($0)@" } ?? ""
        let port = components.port.map { ":\($0)" } ?? ""
        return "\(user)\(host)\(port)\(components.path)"
    }

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
