/// Every setting siwa reads, in one table: its key in a configuration file, its environment variable, its default and
/// what it means. ``SettingsSource`` looks values up through it (a variable missing here is a programming error), and
/// `siwa doctor --reference` prints it as `docs/configuration.md`, which a test compares with the file, so the reader
/// and the reference cannot drift.
enum SettingsCatalog {
    /// One setting.
    struct Setting: Sendable {
        /// The key in a configuration file: `port` is `{"port": 8080}`, `database.path` is
        /// `{"database": {"path": "..."}}`.
        let key: String
        /// The environment variable, `SIWA_` and the key in upper snake case (`database.path` is
        /// `SIWA_DATABASE_PATH`). Also accepted as `<variable>_FILE`, naming a file that holds the value.
        let variable: String
        /// The default, as an operator would write it; empty when there is none.
        let defaultValue: String
        /// What it means, in one or two sentences.
        let meaning: String
        /// A value that must never be printed: it is read as secret and doctor shows only where it came from.
        var isSecret = false
    }

    /// The reference's sections, in order.
    static let sections: [(title: String, settings: [Setting])] = [
        (
            "Server",
            [
                .init(
                    key: "host",
                    variable: "SIWA_HOST",
                    defaultValue: "127.0.0.1",
                    meaning: "The address to listen on."
                ),
                .init(key: "port", variable: "SIWA_PORT", defaultValue: "8080", meaning: "The port to listen on."),
                .init(
                    key: "publicURL",
                    variable: "SIWA_PUBLIC_URL",
                    defaultValue: "http://localhost:8080",
                    meaning:
                        "The server's URL as browsers and apps reach it (behind a proxy, the proxy's https URL): the "
                        + "web callback, `Secure` and `__Host-` cookies and redirects derive from it."
                ),
                .init(
                    key: "log.level",
                    variable: "SIWA_LOG_LEVEL",
                    defaultValue: "info",
                    meaning:
                        "trace, debug, info, notice, warning, error or critical. At info, one access line per request "
                        + "(method, route, status, duration, client, user and session, request id); at debug it also "
                        + "has the path and query, credentials redacted."
                ),
                .init(
                    key: "log.format",
                    variable: "SIWA_LOG_FORMAT",
                    defaultValue: "text",
                    meaning:
                        "text for people (local time: with TZ unset, siwa sets TZ=:/etc/localtime, the same zone read "
                        + "once, so a change of it shows after a restart), json for one JSON object per line (log "
                        + "collectors, UTC)."
                ),
                .init(
                    key: "allowUnknownSettings",
                    variable: "SIWA_ALLOW_UNKNOWN_SETTINGS",
                    defaultValue: "false",
                    meaning:
                        "true: a key of the configuration file or `.env` that is no setting is logged as a warning "
                        + "instead of stopping every command (a file shared with a newer siwa). Off, a misspelt key "
                        + "such as `trustedProxy` stops start-up naming the setting it resembles."
                ),
                .init(
                    key: "metrics.host",
                    variable: "SIWA_METRICS_HOST",
                    defaultValue: "127.0.0.1",
                    meaning:
                        "The address of the metrics listener, which answers GET /metrics (Prometheus text) and "
                        + "GET /healthz and nothing else; the public port never answers /metrics."
                ),
                .init(
                    key: "metrics.port",
                    variable: "SIWA_METRICS_PORT",
                    defaultValue: "9464",
                    meaning: "The metrics listener's port; 0: no listener, and nothing is counted."
                ),
            ]
        ),
        (
            "HTTPS",
            [
                .init(
                    key: "tls.certificateFile",
                    variable: "SIWA_TLS_CERTIFICATE_FILE",
                    defaultValue: "",
                    meaning:
                        "PEM certificate chain: siwa serves https itself (TLS 1.2 and newer). Leave it unset behind a "
                        + "proxy that terminates TLS."
                ),
                .init(
                    key: "tls.keyFile",
                    variable: "SIWA_TLS_KEY_FILE",
                    defaultValue: "",
                    meaning: "The certificate's PEM private key."
                ),
                .init(
                    key: "tls.reloadInterval",
                    variable: "SIWA_TLS_RELOAD_INTERVAL",
                    defaultValue: "30",
                    meaning: "Seconds between checks for a renewed certificate (SIGHUP reloads at once)."
                ),
                .init(
                    key: "tls.hstsMaxAge",
                    variable: "SIWA_TLS_HSTS_MAX_AGE",
                    defaultValue: "31536000",
                    meaning:
                        "Seconds browsers keep to https (`Strict-Transport-Security: max-age=…` on every answer) when "
                        + "siwa serves https itself; 0: not sent. Behind a proxy that terminates TLS, the proxy sends "
                        + "it (docs/deployment/nginx-tls.conf)."
                ),
            ]
        ),
        (
            "Apple",
            [
                .init(
                    key: "bundleIDs",
                    variable: "SIWA_BUNDLE_IDS",
                    defaultValue: "",
                    meaning: "The apps' bundle ids (a list): the audiences of native identity tokens."
                ),
                .init(
                    key: "servicesID",
                    variable: "SIWA_SERVICES_ID",
                    defaultValue: "",
                    meaning: "The Services ID of web sign-in; without it web sign-in is off."
                ),
                .init(
                    key: "teamID",
                    variable: "SIWA_TEAM_ID",
                    defaultValue: "",
                    meaning: "Your 10-character Team ID; with the key, siwa exchanges codes and revokes tokens."
                ),
                .init(
                    key: "keyID",
                    variable: "SIWA_KEY_ID",
                    defaultValue: "",
                    meaning: "The 10-character id of the Sign in with Apple key (AuthKey_<KeyID>.p8)."
                ),
                .init(
                    key: "privateKeyFile",
                    variable: "SIWA_PRIVATE_KEY_FILE",
                    defaultValue: "",
                    meaning: "The path of the .p8 key file."
                ),
                .init(
                    key: "privateKey",
                    variable: "SIWA_PRIVATE_KEY",
                    defaultValue: "",
                    meaning: "The .p8 key's PEM text, instead of a file.",
                    isSecret: true
                ),
                .init(
                    key: "privateKeyBase64",
                    variable: "SIWA_PRIVATE_KEY_BASE64",
                    defaultValue: "",
                    meaning: "The .p8 key as base64, instead of a file.",
                    isSecret: true
                ),
                .init(
                    key: "appleBaseURL",
                    variable: "SIWA_APPLE_BASE_URL",
                    defaultValue: "https://appleid.apple.com",
                    meaning: "Apple's endpoints; the emulator's URL in development."
                ),
                .init(
                    key: "appleKeySet",
                    variable: "SIWA_APPLE_KEY_SET",
                    defaultValue: "",
                    meaning:
                        "A copy of Apple's key set (the JSON of https://appleid.apple.com/auth/keys), usually given as "
                        + "a file: SIWA_APPLE_KEY_SET_FILE. Every key must be an RSA RS256 key with a kid. Used as "
                        + "SIWA_APPLE_KEY_SET_MODE says; siwa doctor --apple warns when it lacks a key Apple publishes."
                ),
                .init(
                    key: "appleKeySetMode",
                    variable: "SIWA_APPLE_KEY_SET_MODE",
                    defaultValue: "fallback",
                    meaning:
                        "fallback: Apple's key endpoint first, SIWA_APPLE_KEY_SET only while it cannot be reached (at "
                        + "start or later); instead: SIWA_APPLE_KEY_SET only, Apple's key endpoint is never called "
                        + "(air-gapped or pinned deployments; update the copy when Apple rotates its keys)."
                ),
                .init(
                    key: "clockLeeway",
                    variable: "SIWA_CLOCK_LEEWAY",
                    defaultValue: "60",
                    meaning: "Seconds of clock difference tolerated on token times (0 to 300)."
                ),
            ]
        ),
        (
            "Storage and keys",
            [
                .init(
                    key: "database.url",
                    variable: "SIWA_DATABASE_URL",
                    defaultValue: "",
                    meaning: "postgres://user:password@host:port/database; when set, PostgreSQL instead of SQLite.",
                    isSecret: true
                ),
                .init(
                    key: "database.path",
                    variable: "SIWA_DATABASE_PATH",
                    defaultValue: "siwa.sqlite",
                    meaning: "The SQLite file (created 0600)."
                ),
                .init(
                    key: "database.maxConnections",
                    variable: "SIWA_DATABASE_MAX_CONNECTIONS",
                    defaultValue: "16",
                    meaning:
                        "PostgreSQL: the most connections this process opens (1 to 1000), on demand. Added up over "
                        + "every instance and running siwa command, keep it under the server's max_connections: a "
                        + "connection the server refuses fails its request with 503."
                ),
                .init(
                    key: "database.pollInterval",
                    variable: "SIWA_DATABASE_POLL_INTERVAL",
                    defaultValue: "5",
                    meaning:
                        "Seconds (1 to 3600) between each instance's reads of the ended sessions and signing keys, in "
                        + "case an announcement was missed. On PostgreSQL every instance applies them as they commit "
                        + "(LISTEN/NOTIFY) and this read is the fallback after a lost listening connection; SQLite "
                        + "relies on it for other processes' changes."
                ),
                .init(
                    key: "dataKey",
                    variable: "SIWA_DATA_KEY",
                    defaultValue: "",
                    meaning:
                        "The data keys that seal Apple refresh tokens and signing keys in the database: base64 of 32 "
                        + "bytes each, comma-separated, the first sealing and the others only opening "
                        + "(siwa keys rotate-data-key). Read at start.",
                    isSecret: true
                ),
                .init(
                    key: "dataKeyFile",
                    variable: "SIWA_DATA_KEY_FILE",
                    defaultValue: "siwa-data.key",
                    meaning:
                        "The file of the data keys when SIWA_DATA_KEY is not set: one base64 key a line, the first "
                        + "sealing, # comments; created 0600 with one key on first start, re-read when it changes."
                ),
            ]
        ),
        (
            "Sessions",
            [
                .init(
                    key: "accessTokenLifetime",
                    variable: "SIWA_ACCESS_TOKEN_LIFETIME",
                    defaultValue: "900",
                    meaning: "Seconds an access token lives (60 to 86400)."
                ),
                .init(
                    key: "refreshTokenLifetime",
                    variable: "SIWA_REFRESH_TOKEN_LIFETIME",
                    defaultValue: "2592000",
                    meaning: "Seconds a refresh token lives unused (3600 to 31536000)."
                ),
                .init(
                    key: "refreshReuseGrace",
                    variable: "SIWA_REFRESH_REUSE_GRACE",
                    defaultValue: "5",
                    meaning:
                        "Seconds in which a just-rotated refresh token may be presented again (a lost answer) "
                        + "without ending the session (0 to 60)."
                ),
                .init(
                    key: "requireServerNonce",
                    variable: "SIWA_REQUIRE_SERVER_NONCE",
                    defaultValue: "false",
                    meaning: "Require native sign-ins to carry a nonce issued by POST /auth/apple/nonce."
                ),
                .init(
                    key: "maxSessionsPerIdentityToken",
                    variable: "SIWA_MAX_SESSIONS_PER_IDENTITY_TOKEN",
                    defaultValue: "3",
                    meaning: "Sessions one identity token may open while valid (0: unbounded)."
                ),
                .init(
                    key: "userCacheSize",
                    variable: "SIWA_USER_CACHE_SIZE",
                    defaultValue: "50000",
                    meaning: "Accounts kept in memory for /api/me."
                ),
                .init(
                    key: "linkAccountsByEmail",
                    variable: "SIWA_LINK_ACCOUNTS_BY_EMAIL",
                    defaultValue: "false",
                    meaning: "Link a new Apple ID to an existing account with the same verified email."
                ),
            ]
        ),
        (
            "Facing the internet",
            [
                .init(
                    key: "rateLimit",
                    variable: "SIWA_RATE_LIMIT",
                    defaultValue: "20",
                    meaning: "Sign-in and refresh requests per second per client address (0: off)."
                ),
                .init(
                    key: "rateBurst",
                    variable: "SIWA_RATE_BURST",
                    defaultValue: "twice the rate",
                    meaning: "The burst of that limit."
                ),
                .init(
                    key: "notificationRateLimit",
                    variable: "SIWA_NOTIFICATION_RATE_LIMIT",
                    defaultValue: "50",
                    meaning: "Apple notifications per second per client address (0: off)."
                ),
                .init(
                    key: "maxConnections",
                    variable: "SIWA_MAX_CONNECTIONS",
                    defaultValue: "2048",
                    meaning: "Connections open at once; more are closed when accepted."
                ),
                .init(
                    key: "maxConnectionsPerAddress",
                    variable: "SIWA_MAX_CONNECTIONS_PER_ADDRESS",
                    defaultValue: "64",
                    meaning:
                        "Connections open at once from one client address, an IPv6 address's /64 (trusted proxies "
                        + "excepted)."
                ),
                .init(
                    key: "requestHeadTimeout",
                    variable: "SIWA_REQUEST_HEAD_TIMEOUT",
                    defaultValue: "10",
                    meaning: "Seconds from a request's first byte to its complete head."
                ),
                .init(
                    key: "requestBodyTimeout",
                    variable: "SIWA_REQUEST_BODY_TIMEOUT",
                    defaultValue: "30",
                    meaning: "Seconds from a request's head to the end of its body."
                ),
                .init(
                    key: "idleTimeout",
                    variable: "SIWA_IDLE_TIMEOUT",
                    defaultValue: "30",
                    meaning: "Seconds an idle connection stays open (0: no limit)."
                ),
                .init(
                    key: "maxHeaderSize",
                    variable: "SIWA_MAX_HEADER_SIZE",
                    defaultValue: "32768",
                    meaning: "Bytes of request headers accepted."
                ),
                .init(
                    key: "trustedProxies",
                    variable: "SIWA_TRUSTED_PROXIES",
                    defaultValue: "",
                    meaning:
                        "Addresses or CIDR ranges of the proxies in front of siwa (a list); only their forwarding "
                        + "header names the client."
                ),
                .init(
                    key: "forwardedHeader",
                    variable: "SIWA_FORWARDED_HEADER",
                    defaultValue: "x-forwarded-for",
                    meaning: "The header the proxies write: x-forwarded-for or forwarded."
                ),
                .init(
                    key: "admin.allowedNetworks",
                    variable: "SIWA_ADMIN_ALLOWED_NETWORKS",
                    defaultValue: "",
                    meaning:
                        "Addresses or CIDR ranges (a list) that the console (/admin) and admin API (/admin/api/) "
                        + "answer, by the client's address as the rate limits read it; others get 403. Empty: any."
                ),
                .init(
                    key: "maxFlowsPerClient",
                    variable: "SIWA_MAX_FLOWS_PER_CLIENT",
                    defaultValue: "30",
                    meaning: "Web flows one client address may start per state lifetime."
                ),
            ]
        ),
        (
            "Web sign-in",
            [
                .init(
                    key: "web.callbackURL",
                    variable: "SIWA_WEB_CALLBACK_URL",
                    defaultValue: "the public URL + /auth/apple/callback",
                    meaning: "The Return URL registered for the Services ID."
                ),
                .init(
                    key: "allowedReturnOrigins",
                    variable: "SIWA_ALLOWED_RETURN_ORIGINS",
                    defaultValue: "",
                    meaning: "Other origins a web sign-in may return to (a list)."
                ),
                .init(
                    key: "allowedAndroidPackages",
                    variable: "SIWA_ALLOWED_ANDROID_PACKAGES",
                    defaultValue: "",
                    meaning: "Android packages a web sign-in may return to (a list)."
                ),
                .init(
                    key: "web.stateLifetime",
                    variable: "SIWA_WEB_STATE_LIFETIME",
                    defaultValue: "600",
                    meaning: "Seconds a started web sign-in stays valid (60 to 3600)."
                ),
                .init(
                    key: "sessionCookie",
                    variable: "SIWA_SESSION_COOKIE",
                    defaultValue: "siwa_session",
                    meaning: "The session cookie's name."
                ),
                .init(
                    key: "refreshCookie",
                    variable: "SIWA_REFRESH_COOKIE",
                    defaultValue: "siwa_refresh",
                    meaning: "The refresh cookie's name."
                ),
                .init(
                    key: "secureCookies",
                    variable: "SIWA_SECURE_COOKIES",
                    defaultValue: "true on an https public URL",
                    meaning: "Mark cookies Secure."
                ),
                .init(
                    key: "domainAssociationFile",
                    variable: "SIWA_DOMAIN_ASSOCIATION_FILE",
                    defaultValue: "",
                    meaning: "Apple's apple-developer-domain-association.txt, served under /.well-known/."
                ),
            ]
        ),
        (
            "Account lifecycle",
            [
                .init(
                    key: "accountDeletionMode",
                    variable: "SIWA_ACCOUNT_DELETION_MODE",
                    defaultValue: "delete",
                    meaning: "delete or anonymise, when a user or Apple deletes an account."
                ),
                .init(
                    key: "appleValidationInterval",
                    variable: "SIWA_APPLE_VALIDATION_INTERVAL",
                    defaultValue: "86400",
                    meaning: "Seconds between checks of a user's Apple refresh token at Apple."
                ),
                .init(
                    key: "refuseRefreshWhenAppleUnavailable",
                    variable: "SIWA_REFUSE_REFRESH_WHEN_APPLE_UNAVAILABLE",
                    defaultValue: "false",
                    meaning: "Refuse refreshes while Apple cannot confirm the user's consent."
                ),
                .init(
                    key: "auditRetentionDays",
                    variable: "SIWA_AUDIT_RETENTION_DAYS",
                    defaultValue: "90",
                    meaning: "Days the audit log keeps an event (1 to 3650); housekeeping purges older ones."
                ),
            ]
        ),
        (
            "The tutorials' client contracts",
            [
                .init(
                    key: "compat",
                    variable: "SIWA_COMPAT",
                    defaultValue: "",
                    meaning: "A list of servicestack, vapor, rentmanager, or all."
                ),
                .init(
                    key: "adminUsers",
                    variable: "SIWA_ADMIN_USERS",
                    defaultValue: "",
                    meaning: "siwa user ids or Apple user ids (sub) with the Admin role; never emails."
                ),
                .init(
                    key: "servicestackTokenCookies",
                    variable: "SIWA_SERVICESTACK_TOKEN_COOKIES",
                    defaultValue: "false",
                    meaning: "Also set ServiceStack's ss-tok and ss-reftok cookies."
                ),
            ]
        ),
        (
            "OpenID provider",
            [
                .init(
                    key: "oidc.clients",
                    variable: "SIWA_OIDC_CLIENTS",
                    defaultValue: "",
                    meaning:
                        "The relying parties (docs/oidc.md): a JSON array of {\"id\", \"secretSHA256\" or "
                        + "\"public\": true, \"redirectURIs\", \"scopes\", \"postLogoutRedirectURIs\"}; "
                        + "`siwa oidc new-client` prints one. In a JSON configuration file an array; usually "
                        + "SIWA_OIDC_CLIENTS_FILE names a file that holds it."
                )
            ]
        ),
    ]

    /// Every setting by its environment variable.
    static let byVariable: [String: Setting] = Dictionary(
        uniqueKeysWithValues: sections.flatMap(\.settings).map { ($0.variable, $0) }
    )

    /// Every setting by its key in a configuration file.
    static let byKey: [String: Setting] = Dictionary(
        uniqueKeysWithValues: sections.flatMap(\.settings).map { ($0.key, $0) }
    )

    /// The setting a key or variable that is no setting most likely meant (`trustedProxy`: `trustedProxies`,
    /// `SIWA_RATELIMIT`: `SIWA_RATE_LIMIT`), spelt as `unknown` is (a variable for a variable, a key for a key); `nil`
    /// when none is close. Case, `_`, `.` and `-` are ignored, and up to a quarter of the letters may differ.
    static func closest(to unknown: String) -> String? {
        func letters(_ text: String) -> [Character] {
            Array(text.lowercased().filter { $0 != "_" && $0 != "." && $0 != "-" })
        }
        let isVariable = unknown.hasPrefix("SIWA_")
        let target = letters(isVariable ? String(unknown.dropFirst(5)) : unknown)
        guard !target.isEmpty else { return nil }
        var best: (name: String, distance: Int)?
        for setting in sections.flatMap(\.settings) {
            let name = isVariable ? setting.variable : setting.key
            let distance = editDistance(target, letters(isVariable ? String(name.dropFirst(5)) : name))
            if distance < (best?.distance ?? Int.max) { best = (name, distance) }
        }
        guard let best, best.distance <= max(2, target.count / 4) else { return nil }
        return best.name
    }

    /// Levenshtein distance: insertions, deletions and substitutions.
    private static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        var previous = Array(0...b.count)
        for (i, left) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, right) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (left == right ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// Why `unknown`, a key of a configuration file or `.env`, stops start-up, and what to write instead.
    static func unknownKeyFix(_ unknown: String) -> String {
        let optOut = unknown.hasPrefix("SIWA_") ? "SIWA_ALLOW_UNKNOWN_SETTINGS=true" : "allowUnknownSettings: true"
        let guess = closest(to: unknown).map { "did you mean '\($0)'? " } ?? ""
        return "'\(unknown)' is no setting: \(guess)(siwa doctor --reference lists every setting; \(optOut) accepts "
            + "keys for a newer siwa)"
    }

    /// The reference as Markdown (`docs/configuration.md`).
    static var markdownReference: String {
        var out = """
            # Configuration reference

            <!-- Generated by `siwa doctor --reference`; a test compares this file with it. -->

            siwa reads its settings in this order, each overriding the ones after it:

            1. environment variables (`SIWA_*`);
            2. secret files: `<VARIABLE>_FILE=/path` reads the value from that file (as container secrets are \
            mounted), for any setting;
            3. a `.env` file in the working folder (`KEY=value` lines), when there is one;
            4. the configuration file given with `--config FILE` or `SIWA_CONFIG` (`.json`, `.yaml`/`.yml`, or \
            `KEY=value` lines otherwise).

            In a JSON or YAML file a dotted key is nested (`database.path` is `{"database": {"path": "..."}}`) and a \
            list is an array; in the environment a list is comma-separated. Secret values are never printed: \
            `siwa doctor` says only where they came from. `siwa serve`, `siwa demo`, `siwa doctor` and the operator \
            commands all read the settings through the same code, so doctor refuses exactly what serve refuses.

            """
        for section in sections {
            out += "\n## \(section.title)\n\n| key | variable | default | meaning |\n|---|---|---|---|\n"
            for setting in section.settings {
                let fallback =
                    setting.defaultValue.isEmpty
                    ? "–" : setting.defaultValue.contains(" ") ? setting.defaultValue : "`\(setting.defaultValue)`"
                let meaning = setting.meaning + (setting.isSecret ? " **Secret.**" : "")
                out += "| `\(setting.key)` | `\(setting.variable)` | \(fallback) | \(meaning) |\n"
            }
        }
        return out
    }
}
