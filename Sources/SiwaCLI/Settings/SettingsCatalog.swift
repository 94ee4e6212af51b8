import AccountStore
import AccountStoreSQL
import AppleSignIn
import AuthServer
import Foundation
import Logging

/// Every setting siwa reads, each declared once (``Setting``): key, variable, type, default, allowed values, meaning,
/// secret or not, and its parse. Sections are the nested structures and settings their properties, found by reflection
/// in declaration order (as swift-argument-parser finds a command's options), so that declaring a property is the whole
/// of adding a setting: ``SettingsSource`` reads values only through a key path into this catalogue, and
/// `siwa doctor --reference` prints it as `docs/configuration.md`, which a test compares with the file.
///
/// Defaults come from the configuration types (`AuthServerConfiguration()`) where they have one; a test sets every
/// setting to its declared default and checks that nothing changes, so a default written here cannot drift from the
/// one the server uses.
struct SettingsCatalog: Sendable {
    /// The one catalogue.
    static let declared = SettingsCatalog()

    /// The library's defaults, which the declarations take theirs from.
    private static let library = AuthServerConfiguration()

    let server = Server()
    let https = HTTPS()
    let apple = Apple()
    let storage = Storage()
    let sessions = Sessions()
    let internet = FacingTheInternet()
    let web = WebSignIn()
    let branding = Branding()
    let lifecycle = AccountLifecycle()
    let compatibility = ClientContracts()
    let openID = OpenIDProvider()
    let webhooks = Webhooks()
    let tracing = Tracing()

    struct Server: SettingsSection {
        let title = "Server"
        let host = Setting.text("host", "SIWA_HOST", default: "127.0.0.1", meaning: "The address to listen on.")
        let port = Setting.wholeNumber(
            "port",
            "SIWA_PORT",
            default: 8080,
            range: 0...65_535,
            meaning: "The port to listen on."
        )
        let publicURL = Setting<String>(
            key: "publicURL",
            variable: "SIWA_PUBLIC_URL",
            type: "URL",
            defaultValue: SettingsCatalog.library.publicURL,
            meaning:
                "The server's URL as browsers and apps reach it (behind a proxy, the proxy's https URL): the web "
                + "callback, `Secure` and `__Host-` cookies and redirects derive from it."
        ) { text throws(SettingRefusal) in
            guard let url = URL(string: text), url.scheme == "https" || url.scheme == "http", url.host != nil else {
                throw .init("expected the server's public URL such as https://auth.example.com")
            }
            return text.hasSuffix("/") ? String(text.dropLast()) : text
        }
        let logLevel = Setting.choice(
            "log.level",
            "SIWA_LOG_LEVEL",
            default: Logger.Level.info,
            allowed: [.trace, .debug, .info, .notice, .warning, .error, .critical],
            meaning:
                "At info, one access line per request (method, route, status, duration, client, user and session "
                + "or the admin API service token's name, request id); at debug it also has the path and query, credentials redacted."
        )
        let logFormat = Setting.choice(
            "log.format",
            "SIWA_LOG_FORMAT",
            default: LogFormat.text,
            allowed: [.text, .json],
            meaning:
                "text for people (local time: with TZ unset, siwa sets TZ=:/etc/localtime, the same zone read once, so "
                + "a change of it shows after a restart), json for one JSON object per line (log collectors, UTC)."
        )
        let allowUnknownSettings = Setting.flag(
            "allowUnknownSettings",
            "SIWA_ALLOW_UNKNOWN_SETTINGS",
            default: false,
            meaning:
                "true: a key of the configuration file or `.env` that is no setting is logged as a warning instead of "
                + "stopping every command (a file shared with a newer siwa). Off, a misspelt key such as "
                + "`trustedProxy` stops start-up naming the setting it resembles."
        )
        let metricsHost = Setting.text(
            "metrics.host",
            "SIWA_METRICS_HOST",
            default: "127.0.0.1",
            meaning:
                "The address of the metrics listener, which answers GET /metrics (Prometheus text) and GET /healthz "
                + "and nothing else; the public port never answers /metrics."
        )
        /// Not the emulator's 9090 (a development machine runs both) nor Prometheus's own.
        let metricsPort = Setting.wholeNumber(
            "metrics.port",
            "SIWA_METRICS_PORT",
            default: 9464,
            range: 0...65_535,
            meaning: "The metrics listener's port; 0: no listener, and nothing is counted."
        )
    }

    struct HTTPS: SettingsSection {
        let title = "HTTPS"
        let certificateFile = Setting.text(
            "tls.certificateFile",
            "SIWA_TLS_CERTIFICATE_FILE",
            type: "path",
            meaning:
                "PEM certificate chain: siwa serves https itself (TLS 1.2 and newer). Leave it unset behind a proxy "
                + "that terminates TLS."
        )
        let keyFile = Setting.text(
            "tls.keyFile",
            "SIWA_TLS_KEY_FILE",
            type: "path",
            meaning: "The certificate's PEM private key."
        )
        let reloadInterval = Setting.duration(
            "tls.reloadInterval",
            "SIWA_TLS_RELOAD_INTERVAL",
            default: SettingsCatalog.library.tlsReloadInterval,
            range: 1...86_400,
            meaning: "Seconds between checks for a renewed certificate (SIGHUP reloads at once)."
        )
        /// Whole seconds: the header's max-age takes no fraction.
        let hstsMaxAge = Setting.wholeNumber(
            "tls.hstsMaxAge",
            "SIWA_TLS_HSTS_MAX_AGE",
            type: "whole seconds",
            default: SettingsCatalog.library.hstsMaxAge ?? 0,
            range: 0...63_072_000,
            meaning:
                "Seconds browsers keep to https (`Strict-Transport-Security: max-age=…` on every answer) when siwa "
                + "serves https itself; 0: not sent. Behind a proxy that terminates TLS, the proxy sends it "
                + "(docs/deployment/nginx-tls.conf)."
        )
    }

    struct Apple: SettingsSection {
        let title = "Apple"
        let bundleIDs = Setting.list(
            "bundleIDs",
            "SIWA_BUNDLE_IDS",
            meaning: "The apps' bundle ids: the audiences of native identity tokens."
        ) { ids throws(SettingRefusal) in
            for (index, id) in ids.enumerated() {
                do throws(AppleSignInError) {
                    _ = try ClientID(validating: id, setting: "bundleIDs[\(index)]")
                } catch {
                    throw .init(error.reason)
                }
            }
        }
        let servicesID = Setting.text(
            "servicesID",
            "SIWA_SERVICES_ID",
            meaning: "The Services ID of web sign-in; without it web sign-in is off."
        ) { id throws(SettingRefusal) in
            do throws(AppleSignInError) { _ = try ClientID(validating: id, setting: "servicesID") } catch {
                throw .init(error.reason)
            }
        }
        let teamID = Setting.text(
            "teamID",
            "SIWA_TEAM_ID",
            meaning: "Your 10-character Team ID; with the key, siwa exchanges codes and revokes tokens."
        ) { id throws(SettingRefusal) in
            do throws(AppleSignInError) { _ = try TeamID(id) } catch { throw .init(error.reason) }
        }
        let keyID = Setting.text(
            "keyID",
            "SIWA_KEY_ID",
            meaning: "The 10-character id of the Sign in with Apple key (AuthKey_<KeyID>.p8)."
        ) { id throws(SettingRefusal) in
            do throws(AppleSignInError) { _ = try KeyID(id) } catch { throw .init(error.reason) }
        }
        let privateKeyFile = Setting.text(
            "privateKeyFile",
            "SIWA_PRIVATE_KEY_FILE",
            type: "path",
            meaning: "The .p8 key file."
        )
        let privateKey = Setting.text(
            "privateKey",
            "SIWA_PRIVATE_KEY",
            isSecret: true,
            meaning: "The .p8 key's PEM text, instead of a file."
        )
        let privateKeyBase64 = Setting.text(
            "privateKeyBase64",
            "SIWA_PRIVATE_KEY_BASE64",
            isSecret: true,
            meaning: "The .p8 key as base64, instead of a file."
        )
        let appleBaseURL = Setting<AppleBaseURL>(
            key: "appleBaseURL",
            variable: "SIWA_APPLE_BASE_URL",
            type: "URL",
            defaultValue: .apple,
            meaning: "Apple's endpoints; the emulator's URL in development."
        ) { text throws(SettingRefusal) in
            do throws(AppleSignInError) { return try AppleBaseURL(text) } catch { throw .init(error.reason) }
        }
        let appleKeySet = Setting<AppleKeySet>(
            key: "appleKeySet",
            variable: "SIWA_APPLE_KEY_SET",
            type: "JSON",
            meaning:
                "A copy of Apple's key set (the JSON of https://appleid.apple.com/auth/keys), usually given as a file: "
                + "SIWA_APPLE_KEY_SET_FILE. Every key must be an RSA RS256 key with a kid. Used as "
                + "SIWA_APPLE_KEY_SET_MODE says; siwa doctor --apple warns when it lacks a key Apple publishes."
        ) { text throws(SettingRefusal) in
            do throws(AppleSignInError) {
                return try AppleKeySet(configuredJWKS: Array(text.utf8))
            } catch {
                throw .init("\(error.reason); expected a copy of Apple's key set, {\"keys\": [...]} from /auth/keys")
            }
        }
        let appleKeySetMode = Setting.choice(
            "appleKeySetMode",
            "SIWA_APPLE_KEY_SET_MODE",
            default: ConfiguredAppleKeySet.Use.fallback,
            allowed: [.fallback, .instead],
            meaning:
                "fallback: Apple's key endpoint first, SIWA_APPLE_KEY_SET only while it cannot be reached (at start or "
                + "later); instead: SIWA_APPLE_KEY_SET only, Apple's key endpoint is never called (air-gapped or "
                + "pinned deployments; update the copy when Apple rotates its keys)."
        )
        let clockLeeway = Setting.number(
            "clockLeeway",
            "SIWA_CLOCK_LEEWAY",
            type: "seconds",
            default: 60,
            range: 0...300,
            meaning: "Seconds of clock difference tolerated on token times."
        )
    }

    struct Storage: SettingsSection {
        let title = "Storage and keys"
        let databaseURL = Setting.text(
            "database.url",
            "SIWA_DATABASE_URL",
            type: "URL",
            isSecret: true,
            meaning: "postgres://user:password@host:port/database; when set, PostgreSQL instead of SQLite."
        ) { url throws(SettingRefusal) in
            guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
                throw .init("expected postgres://user:password@host:port/database")
            }
        }
        let databaseURLFile = Setting.text(
            "database.urlFile",
            "SIWA_DATABASE_URL_FILE",
            type: "path",
            meaning:
                "A file holding database.url, so that its password is in no configuration file: one line, owned by "
                + "root, group siwa, 0640. Named in siwa.json, siwa serve and every operator command run as the siwa "
                + "user read the same database."
        )
        let databasePath = Setting.text(
            "database.path",
            "SIWA_DATABASE_PATH",
            type: "path",
            default: "siwa.sqlite",
            meaning: "The SQLite file (created 0600)."
        )
        let databaseMaxConnections = Setting.wholeNumber(
            "database.maxConnections",
            "SIWA_DATABASE_MAX_CONNECTIONS",
            default: SQLAccountStore.defaultMaximumConnections,
            range: SQLAccountStore.maximumConnectionsRange,
            meaning:
                "PostgreSQL: the most connections this process opens, on demand. Added up over every instance and "
                + "running siwa command, keep it under the server's max_connections: a connection the server refuses "
                + "fails its request with 503."
        )
        let databasePollInterval = Setting.duration(
            "database.pollInterval",
            "SIWA_DATABASE_POLL_INTERVAL",
            default: SettingsCatalog.library.storeRefreshInterval,
            range: 1...3600,
            meaning:
                "Seconds between each instance's reads of the ended sessions and signing keys, in case an "
                + "announcement was missed. On PostgreSQL every instance applies them as they commit (LISTEN/NOTIFY) "
                + "and this read is the fallback after a lost listening connection; SQLite relies on it for other "
                + "processes' changes."
        )
        let dataKey = Setting<DataKeyRing>(
            key: "dataKey",
            variable: "SIWA_DATA_KEY",
            type: "keys",
            isSecret: true,
            meaning:
                "The data keys that seal Apple refresh tokens and signing keys in the database: base64 of 32 bytes "
                + "each, comma-separated, the first sealing and the others only opening (siwa keys rotate-data-key). "
                + "Read at start."
        ) { text throws(SettingRefusal) in
            do {
                return try DataKeyRing.parse(list: text)
            } catch {
                throw .init("\(error); the value is a comma-separated list of keys, the first sealing")
            }
        }
        let dataKeyFile = Setting.text(
            "dataKeyFile",
            "SIWA_DATA_KEY_FILE",
            type: "path",
            default: "siwa-data.key",
            meaning:
                "The file of the data keys when SIWA_DATA_KEY is not set: one base64 key a line, the first sealing, # "
                + "comments; created 0600 with one key on first start, re-read when it changes."
        )
    }

    struct Sessions: SettingsSection {
        let title = "Sessions"
        let accessTokenLifetime = Setting.number(
            "accessTokenLifetime",
            "SIWA_ACCESS_TOKEN_LIFETIME",
            type: "seconds",
            default: SettingsCatalog.library.accessTokenLifetime,
            range: 60...86_400,
            meaning: "Seconds an access token lives."
        )
        let refreshTokenLifetime = Setting.number(
            "refreshTokenLifetime",
            "SIWA_REFRESH_TOKEN_LIFETIME",
            type: "seconds",
            default: SettingsCatalog.library.refreshTokenLifetime,
            range: 3600...(365 * 86_400),
            meaning: "Seconds a refresh token lives unused."
        )
        let refreshReuseGrace = Setting.number(
            "refreshReuseGrace",
            "SIWA_REFRESH_REUSE_GRACE",
            type: "seconds",
            default: SettingsCatalog.library.refreshReuseGrace,
            range: 0...60,
            meaning:
                "Seconds in which a just-rotated refresh token may be presented again (a lost answer) without ending "
                + "the session."
        )
        let requireServerNonce = Setting.flag(
            "requireServerNonce",
            "SIWA_REQUIRE_SERVER_NONCE",
            default: SettingsCatalog.library.requireServerNonce,
            meaning: "Require native sign-ins to carry a nonce issued by POST /auth/apple/nonce."
        )
        let maxSessionsPerIdentityToken = Setting.wholeNumber(
            "maxSessionsPerIdentityToken",
            "SIWA_MAX_SESSIONS_PER_IDENTITY_TOKEN",
            default: SettingsCatalog.library.maximumSessionsPerIdentityToken,
            range: 0...SessionBound.maximumLimit,
            meaning: "Sessions one identity token may open while valid (0: unbounded)."
        )
        let userCacheSize = Setting.wholeNumber(
            "userCacheSize",
            "SIWA_USER_CACHE_SIZE",
            default: SettingsCatalog.library.userCacheCapacity,
            range: 1...10_000_000,
            meaning: "Accounts kept in memory for /api/me."
        )
        let linkAccountsByEmail = Setting.flag(
            "linkAccountsByEmail",
            "SIWA_LINK_ACCOUNTS_BY_EMAIL",
            default: SettingsCatalog.library.linkAccountsByEmail,
            meaning: "Link a new Apple ID to an existing account with the same verified email."
        )
    }

    struct FacingTheInternet: SettingsSection {
        let title = "Facing the internet"
        let rateLimit = Setting.number(
            "rateLimit",
            "SIWA_RATE_LIMIT",
            type: "per second",
            default: SettingsCatalog.library.authRateLimit?.requestsPerSecond ?? 0,
            range: 0...1_000_000,
            meaning: "Sign-in and refresh requests per second per client address (0: off)."
        )
        let rateBurst = Setting.number(
            "rateBurst",
            "SIWA_RATE_BURST",
            default: nil,
            defaultText: "twice the rate",
            range: 1...1_000_000,
            meaning: "The burst of that limit."
        )
        let notificationRateLimit = Setting.number(
            "notificationRateLimit",
            "SIWA_NOTIFICATION_RATE_LIMIT",
            type: "per second",
            default: SettingsCatalog.library.notificationRateLimit?.requestsPerSecond ?? 0,
            range: 0...1_000_000,
            meaning: "Apple notifications per second per client address (0: off); the burst is ten times the rate."
        )
        let maxConnections = Setting.wholeNumber(
            "maxConnections",
            "SIWA_MAX_CONNECTIONS",
            default: SettingsCatalog.library.connections.maximumConnections,
            range: 16...1_000_000,
            meaning: "Connections open at once; more are closed when accepted."
        )
        let maxConnectionsPerAddress = Setting.wholeNumber(
            "maxConnectionsPerAddress",
            "SIWA_MAX_CONNECTIONS_PER_ADDRESS",
            default: SettingsCatalog.library.connections.maximumConnectionsPerAddress,
            range: 1...1_000_000,
            meaning:
                "Connections open at once from one client address, an IPv6 address's /64 (trusted proxies excepted)."
        )
        let requestHeadTimeout = Setting.duration(
            "requestHeadTimeout",
            "SIWA_REQUEST_HEAD_TIMEOUT",
            default: SettingsCatalog.library.connections.requestHeadTimeout,
            range: 1...3600,
            meaning: "Seconds from a request's first byte to its complete head."
        )
        let requestBodyTimeout = Setting.duration(
            "requestBodyTimeout",
            "SIWA_REQUEST_BODY_TIMEOUT",
            default: SettingsCatalog.library.connections.requestBodyTimeout,
            range: 1...3600,
            meaning: "Seconds from a request's head to the end of its body."
        )
        let idleTimeout = Setting.duration(
            "idleTimeout",
            "SIWA_IDLE_TIMEOUT",
            default: SettingsCatalog.library.idleTimeout ?? .zero,
            range: 0...3600,
            meaning: "Seconds an idle connection stays open (0: no limit)."
        )
        let maxHeaderSize = Setting.wholeNumber(
            "maxHeaderSize",
            "SIWA_MAX_HEADER_SIZE",
            type: "bytes",
            default: SettingsCatalog.library.maximumHeaderSize,
            range: 4096...1_048_576,
            meaning: "Bytes of request headers accepted."
        )
        /// The addresses, checked here; the reader pairs them with ``forwardedHeader``.
        let trustedProxies = Setting.list(
            "trustedProxies",
            "SIWA_TRUSTED_PROXIES",
            meaning:
                "Addresses or CIDR ranges of the proxies in front of siwa; only their forwarding header names the "
                + "client."
        ) { list throws(SettingRefusal) in
            do throws(TrustedProxies.Failure) { _ = try TrustedProxies(list) } catch { throw .init(error.description) }
        }
        let forwardedHeader = Setting.choice(
            "forwardedHeader",
            "SIWA_FORWARDED_HEADER",
            default: TrustedProxies.Header.xForwardedFor,
            allowed: [.xForwardedFor, .forwarded],
            hint: "(the header your proxy writes)",
            meaning: "The header the proxies write."
        )
        let adminAllowedNetworks = Setting.list(
            "admin.allowedNetworks",
            "SIWA_ADMIN_ALLOWED_NETWORKS",
            default: SettingsCatalog.library.adminNetworks,
            defaultText: "any",
            meaning:
                "Addresses or CIDR ranges that the console (/admin) and admin API (/admin/api/) answer, by the "
                + "client's address as the rate limits read it; others get 403."
        ) { list throws(SettingRefusal) in
            do throws(AddressRanges.Failure) { return try AddressRanges(list) } catch { throw .init(error.description) }
        }
        let maxFlowsPerClient = Setting.wholeNumber(
            "maxFlowsPerClient",
            "SIWA_MAX_FLOWS_PER_CLIENT",
            default: SettingsCatalog.library.maximumFlowsPerClient,
            range: 1...1_000_000,
            meaning: "Web flows one client address may start per state lifetime."
        )
    }

    struct WebSignIn: SettingsSection {
        let title = "Web sign-in"
        let callbackURL = Setting.text(
            "web.callbackURL",
            "SIWA_WEB_CALLBACK_URL",
            type: "URL",
            defaultText: "the public URL + /auth/apple/callback",
            meaning: "The Return URL registered for the Services ID."
        ) { url throws(SettingRefusal) in
            guard ReturnURLPolicy.origin(of: url) != nil else {
                throw .init(
                    "expected the https URL registered for the Services ID, such as "
                        + "https://auth.example.com/auth/apple/callback"
                )
            }
        }
        let allowedReturnOrigins = Setting.list(
            "allowedReturnOrigins",
            "SIWA_ALLOWED_RETURN_ORIGINS",
            meaning: "Other origins a web sign-in may return to."
        ) { origins throws(SettingRefusal) in
            do throws(AppleSignInError) { _ = try ReturnURLPolicy(allowedOrigins: origins) } catch {
                throw .init(error.reason)
            }
        }
        let allowedAndroidPackages = Setting.list(
            "allowedAndroidPackages",
            "SIWA_ALLOWED_ANDROID_PACKAGES",
            meaning: "Android packages a web sign-in may return to."
        ) { packages throws(SettingRefusal) in
            do throws(AppleSignInError) { _ = try ReturnURLPolicy(allowedAndroidPackages: packages) } catch {
                throw .init(error.reason)
            }
        }
        let stateLifetime = Setting.number(
            "web.stateLifetime",
            "SIWA_WEB_STATE_LIFETIME",
            type: "seconds",
            default: SettingsCatalog.library.web.stateLifetime,
            range: 60...3600,
            meaning: "Seconds a started web sign-in stays valid."
        )
        let sessionCookie = Setting.text(
            "sessionCookie",
            "SIWA_SESSION_COOKIE",
            default: SettingsCatalog.library.web.sessionCookieName,
            meaning: "The session cookie's name.",
            check: Self.checkCookieName
        )
        let refreshCookie = Setting.text(
            "refreshCookie",
            "SIWA_REFRESH_COOKIE",
            default: SettingsCatalog.library.web.refreshCookieName,
            meaning: "The refresh cookie's name.",
            check: Self.checkCookieName
        )
        let secureCookies = Setting.flag(
            "secureCookies",
            "SIWA_SECURE_COOKIES",
            default: nil,
            defaultText: "true on an https public URL",
            meaning: "Mark cookies Secure."
        )
        /// The value is the file's text.
        let domainAssociationFile = Setting<String>(
            key: "domainAssociationFile",
            variable: "SIWA_DOMAIN_ASSOCIATION_FILE",
            type: "path",
            meaning: "Apple's apple-developer-domain-association.txt, served under /.well-known/."
        ) { file throws(SettingRefusal) in
            guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8)
            else {
                throw .init("cannot read \(file): expected the apple-developer-domain-association.txt Apple gave you")
            }
            return text
        }

        @Sendable private static func checkCookieName(_ name: String) throws(SettingRefusal) {
            guard name.utf8.count <= 64,
                name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
            else { throw .init("expected a cookie name of letters, digits, '_' and '-'") }
        }
    }

    struct Branding: SettingsSection {
        let title = "Branding"
        let productName = Setting.text(
            "branding.productName",
            "SIWA_BRANDING_PRODUCT_NAME",
            meaning: "The product's name as users know it, on the sign-in and error pages (\"Sign in to Acme\")."
        ) { name throws(SettingRefusal) in
            guard name.count <= 60, !name.contains(where: { $0.isNewline }) else {
                throw .init("expected a name of one line, at most 60 characters")
            }
        }
        /// The value is the file's contents.
        let logoFile = Setting<BrandingConfiguration.Logo>(
            key: "branding.logoFile",
            variable: "SIWA_BRANDING_LOGO_FILE",
            type: "path",
            meaning:
                "The product's logo (PNG, SVG, JPEG or WebP, at most 256 KiB), read at start, served at "
                + "/branding/logo and shown 56 px high above the sign-in and error pages."
        ) { file throws(SettingRefusal) in
            guard let type = BrandingConfiguration.Logo.contentType(ofFile: file) else {
                throw .init("expected a .png, .svg, .jpg or .webp file, got '\(file)'")
            }
            guard let data = FileManager.default.contents(atPath: file) else {
                throw .init("cannot read \(file)")
            }
            guard data.count <= BrandingConfiguration.Logo.maximumSize else {
                throw .init("\(file) has \(data.count) bytes; a logo may have at most 256 KiB")
            }
            return BrandingConfiguration.Logo(bytes: Array(data), contentType: type)
        }
        let buttonStyle = Setting.choice(
            "branding.buttonStyle",
            "SIWA_BRANDING_BUTTON_STYLE",
            default: SettingsCatalog.library.branding.buttonStyle,
            allowed: BrandingConfiguration.ButtonStyle.allCases,
            meaning:
                "The Sign in with Apple button's style, as Apple's Human Interface Guidelines allow: black, white "
                + "(on a dark stage) or white with an outline."
        )
        let supportURL = Setting.text(
            "branding.supportURL",
            "SIWA_BRANDING_SUPPORT_URL",
            type: "URL",
            meaning: "Where users get help (https:// or mailto:), linked from the sign-in and error pages."
        ) { url throws(SettingRefusal) in
            guard url.hasPrefix("https://") || url.hasPrefix("mailto:") else {
                throw .init("expected an https:// URL or a mailto: address, got '\(url)'")
            }
        }
        let afterSignInURL = Setting.text(
            "web.afterSignInURL",
            "SIWA_WEB_AFTER_SIGN_IN_URL",
            type: "URL",
            defaultText: "/login, which then shows the account",
            meaning:
                "Where a browser goes after signing in from /login: a path of this server (/welcome) or a URL whose "
                + "origin is the public URL's or in SIWA_ALLOWED_RETURN_ORIGINS."
        ) { url throws(SettingRefusal) in
            let isPath = url.hasPrefix("/") && !url.hasPrefix("//")
            guard isPath || ReturnURLPolicy.origin(of: url) != nil else {
                throw .init("expected a path such as /welcome or an https URL, got '\(url)'")
            }
        }
    }

    struct AccountLifecycle: SettingsSection {
        let title = "Account lifecycle"
        let deletionMode = Setting.choice(
            "accountDeletionMode",
            "SIWA_ACCOUNT_DELETION_MODE",
            default: SettingsCatalog.library.lifecycle.deletionMode,
            allowed: [AccountDeletionMode.delete, .anonymise],
            meaning: "What happens when a user or Apple deletes an account."
        )
        let appleValidationInterval = Setting.number(
            "appleValidationInterval",
            "SIWA_APPLE_VALIDATION_INTERVAL",
            type: "seconds",
            default: SettingsCatalog.library.lifecycle.appleValidationInterval,
            range: 3600...(90 * 86_400),
            meaning: "Seconds between checks of a user's Apple refresh token at Apple."
        )
        let refuseRefreshWhenAppleUnavailable = Setting.flag(
            "refuseRefreshWhenAppleUnavailable",
            "SIWA_REFUSE_REFRESH_WHEN_APPLE_UNAVAILABLE",
            default: SettingsCatalog.library.lifecycle.refuseRefreshWhenAppleUnavailable,
            meaning: "Refuse refreshes while Apple cannot confirm the user's consent."
        )
        let auditRetentionDays = Setting.wholeNumber(
            "auditRetentionDays",
            "SIWA_AUDIT_RETENTION_DAYS",
            type: "days",
            default: Int(SettingsCatalog.library.housekeeping.auditRetention / 86_400),
            range: 1...3650,
            meaning: "Days the audit log keeps an event; housekeeping purges older ones."
        )
        let eventRetentionDays = Setting.wholeNumber(
            "eventRetentionDays",
            "SIWA_EVENT_RETENTION_DAYS",
            type: "days",
            default: Int(SettingsCatalog.library.housekeeping.eventRetention / 86_400),
            range: 1...365,
            meaning: "Days the events feed keeps a lifecycle event; housekeeping purges older ones."
        )
    }

    struct ClientContracts: SettingsSection {
        let title = "The tutorials' client contracts"
        let compat = Setting.list(
            "compat",
            "SIWA_COMPAT",
            allowed: "servicestack, vapor, rentmanager, all",
            lowercased: true,
            meaning: "The contracts served besides siwa's own."
        ) { contracts throws(SettingRefusal) in
            for contract in contracts where !["all", "servicestack", "vapor", "rentmanager"].contains(contract) {
                throw .init("expected a list of servicestack, vapor, rentmanager or all, got '\(contract)'")
            }
        }
        let adminUsers = Setting.list(
            "adminUsers",
            "SIWA_ADMIN_USERS",
            lowercased: true,
            meaning: "siwa user ids or Apple user ids (sub) with the Admin role; never emails."
        ) { admins throws(SettingRefusal) in
            if let email = admins.first(where: { $0.contains("@") }) {
                throw .init(
                    "'\(email)' is an email: roles are granted by siwa user id or Apple user id (sub) only, since an "
                        + "email can be unverified or shared by several Apple IDs; `siwa users list` shows both ids"
                )
            }
        }
        let servicestackTokenCookies = Setting.flag(
            "servicestackTokenCookies",
            "SIWA_SERVICESTACK_TOKEN_COOKIES",
            default: SettingsCatalog.library.compatibility.serviceStackTokenCookies,
            meaning: "Also set ServiceStack's ss-tok and ss-reftok cookies."
        )
    }

    struct OpenIDProvider: SettingsSection {
        let title = "OpenID provider"
        let clients = Setting<[OpenIDClient]>(
            key: "oidc.clients",
            variable: "SIWA_OIDC_CLIENTS",
            type: "JSON",
            meaning:
                "The relying parties (docs/oidc.md): a JSON array of {\"id\", \"secretSHA256\" or \"public\": true, "
                + "\"redirectURIs\", \"scopes\", \"postLogoutRedirectURIs\", \"backchannelLogoutURI\"}; `siwa oidc new-client` prints one. In a "
                + "JSON configuration file an array; usually SIWA_OIDC_CLIENTS_FILE names a file that holds it."
        ) { text throws(SettingRefusal) in
            do {
                return try ServerSettings.openIDClients(text)
            } catch let problem as ServerSettings.Problem {
                throw .init(problem.fix)
            } catch {
                throw .init("\(error)")
            }
        }
    }
}

extension SettingsCatalog {
    /// The webhooks to the app's backend (`docs/events.md`).
    struct Webhooks: SettingsSection {
        let title = "Webhooks"
        private static let library = WebhookConfiguration()
        let endpoints = Setting<[WebhookEndpoint]>(
            key: "webhooks.endpoints",
            variable: "SIWA_WEBHOOKS_ENDPOINTS",
            type: "JSON",
            isSecret: true,
            meaning:
                "The app backend's webhook endpoints (docs/events.md): a JSON array of {\"name\", \"url\", \"secrets\": "
                + "[\"whsec_…\"] (two during a rotation), \"events\": [types, all when left out]}. It holds the "
                + "secrets: usually SIWA_WEBHOOKS_ENDPOINTS_FILE names a file that holds it."
        ) { text throws(SettingRefusal) in
            do throws(WebhookEndpointError) {
                return try WebhookEndpoint.list(json: text)
            } catch {
                throw .init(error.description)
            }
        }
        let allowedNetworks = Setting.list(
            "webhooks.allowedNetworks",
            "SIWA_WEBHOOKS_ALLOWED_NETWORKS",
            default: AddressRanges.none,
            defaultText: "none",
            meaning:
                "Addresses or CIDR ranges a webhook may go to although they are loopback, private, link-local or "
                + "reserved (an app backend on the operator's own network); every other such address is refused, "
                + "checked for each address a name resolves to before each attempt."
        ) { list throws(SettingRefusal) in
            do throws(AddressRanges.Failure) { return try AddressRanges(list) } catch { throw .init(error.description) }
        }
        let allowLoopbackHTTP = Setting.flag(
            "webhooks.allowLoopbackHTTP",
            "SIWA_WEBHOOKS_ALLOW_LOOPBACK_HTTP",
            default: Self.library.allowsPlainHTTPToLoopback,
            meaning: "Development only: allow http:// endpoints on 127.0.0.1 or [::1]; every other endpoint is https."
        )
        let timeout = Setting.duration(
            "webhooks.timeout",
            "SIWA_WEBHOOKS_TIMEOUT",
            default: Self.library.attemptTimeout,
            range: 1...60,
            meaning: "The most one attempt may take, connecting included; a slower answer counts as a failure."
        )
        let retryHours = Setting.wholeNumber(
            "webhooks.retryHours",
            "SIWA_WEBHOOKS_RETRY_HOURS",
            type: "hours",
            default: Int(Self.library.retryFor / 3_600),
            range: 1...720,
            meaning:
                "Hours a delivery is retried (waits from 5 s doubling to an hour, with jitter) before it is given up; "
                + "an operator can still redeliver it."
        )
        let disableAfterHours = Setting.wholeNumber(
            "webhooks.disableAfterHours",
            "SIWA_WEBHOOKS_DISABLE_AFTER_HOURS",
            type: "hours",
            default: Int((Self.library.disableAfter ?? 0) / 3_600),
            range: 0...8_760,
            meaning:
                "Hours an endpoint may fail every attempt before siwa disables it (an error in the log, the audit "
                + "log's webhook_endpoint_disabled, siwa_webhook_endpoint_disabled 1, a banner in the console); its "
                + "deliveries then wait for `siwa webhooks enable`. 0: never disabled."
        )
    }

    /// Where `siwa serve` sends its traces; the endpoint alone turns tracing on (``TracingSettings``).
    struct Tracing: SettingsSection {
        let title = "Tracing"
        let endpoint = Setting.text(
            "tracing.endpoint",
            "SIWA_TRACING_ENDPOINT",
            type: "URL",
            meaning:
                "An OpenTelemetry collector's OTLP/HTTP traces URL (protobuf), such as http://127.0.0.1:4318 (a URL "
                + "without a path gets /v1/traces). Set, `siwa serve` sends a span per request, its stages as "
                + "children (token verification, store calls, Apple's endpoints), and continues a caller's W3C "
                + "`traceparent`; unset, nothing is traced."
        ) { text throws(SettingRefusal) in
            // The text is not repeated: a URL with a user may hold a password.
            guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil,
                url.query == nil, url.user == nil
            else {
                throw .init(
                    "expected the collector's OTLP/HTTP URL such as http://127.0.0.1:4318 or "
                        + "https://collector.example.com/v1/traces, with no user and no query"
                )
            }
        }
        let serviceName = Setting.text(
            "tracing.serviceName",
            "SIWA_TRACING_SERVICE_NAME",
            default: "siwa",
            meaning: "The `service.name` of siwa's spans."
        ) { text throws(SettingRefusal) in
            guard text.count <= 128, !text.contains(where: \.isNewline) else {
                throw .init("expected a name of 1 to 128 characters on one line")
            }
        }
        let sampleRatio = Setting.number(
            "tracing.sampleRatio",
            "SIWA_TRACING_SAMPLE_RATIO",
            default: 1,
            range: 0...1,
            meaning:
                "The share of the traces siwa starts that it records; a caller's `traceparent` decides for the "
                + "caller's traces."
        )
    }
}

/// A section of the reference: a title, and settings as its properties.
protocol SettingsSection: Sendable {
    var title: String { get }
}

extension SettingsCatalog {
    /// The reference's sections, in declaration order.
    static let sections: [(title: String, settings: [any AnySetting])] = Mirror(reflecting: declared).children
        .compactMap {
            guard let section = $0.value as? any SettingsSection else { return nil }
            return (section.title, Mirror(reflecting: section).children.compactMap { $0.value as? any AnySetting })
        }

    /// Every setting, in declaration order.
    static let all: [any AnySetting] = sections.flatMap(\.settings)

    /// Every setting by its environment variable.
    static let byVariable: [String: any AnySetting] = Dictionary(uniqueKeysWithValues: all.map { ($0.variable, $0) })

    /// Every setting by its key in a configuration file.
    static let byKey: [String: any AnySetting] = Dictionary(uniqueKeysWithValues: all.map { ($0.key, $0) })
}
