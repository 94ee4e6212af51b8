import AppleSignIn
public import Prometheus
import Synchronization

/// The server's Prometheus metrics, kept in one registry per application (never the global `MetricsSystem`, so
/// that several applications in one process count apart) and answered as text by `GET /metrics`.
///
/// Label values come from small fixed sets (route patterns, outcomes, reason codes), never from request data, so the
/// number of series stays bounded. Each labelled counter is looked up in a cache: one lock and one dictionary
/// lookup per count.
public final class ServerMetrics: Sendable {
    /// The sign-in routes.
    public enum SignInFlow: String, Sendable, CaseIterable {
        /// `POST /auth/apple/native`.
        case native
        /// The web flow's `form_post` callback.
        case web
        /// The compatibility routes.
        case compat
    }

    /// How a refresh ended.
    public enum RefreshOutcome: String, Sendable, CaseIterable {
        case rotated
        case reused
        case revoked
        case expired
        case invalid
    }

    /// The registry the metrics live in.
    public let registry: PrometheusCollectorRegistry

    private let requests: LabeledMetrics<RequestKey, Counter>
    private let durations: LabeledMetrics<String, DurationHistogram>
    private let storeCalls: LabeledMetrics<String, DurationHistogram>
    private let signIns: [SignInKey: Counter]
    private let refreshes: [RefreshOutcome: Counter]
    private let identityTokenFailures: LabeledMetrics<String, Counter>
    private let jwksFetchesOK: Counter
    private let jwksFetchesFailed: Counter
    private let codeExchangeFailures: Counter
    private let auditWriteFailures: Counter
    private let appleCredentialsFailing: Gauge
    private let appleInvalidClient: [AppleAPIAnswer.Call: Counter]
    private let appleCalls: LabeledMetrics<AppleCallKey, Counter>
    private let appleCallDurations: [AppleAPIAnswer.Call: DurationHistogram]
    private let connectionsRefused: [ConnectionCap: Counter]
    private let revocationsPending: Gauge
    private let signingKeyAge: Gauge
    private let dataKeyAge: Gauge

    private struct AppleCallKey: Hashable, Sendable {
        var call: AppleAPIAnswer.Call
        var outcome: String
    }

    /// Which cap refused a new connection.
    enum ConnectionCap: String, Sendable, CaseIterable {
        /// `SIWA_MAX_CONNECTIONS`.
        case total
        /// `SIWA_MAX_CONNECTIONS_PER_ADDRESS`.
        case address
    }
    private let sharedLimitsLocal: Gauge
    private let sharedLimitsFailures: Counter
    private let webhookAttempts: LabeledMetrics<WebhookAttemptKey, Counter>
    private let webhookPending: LabeledMetrics<String, Gauge>
    private let webhookLag: LabeledMetrics<String, Gauge>
    private let webhookDisabled: LabeledMetrics<String, Gauge>

    private struct WebhookAttemptKey: Hashable, Sendable {
        var endpoint: String
        var outcome: String
    }

    private struct RequestKey: Hashable, Sendable {
        var method: String
        var route: String
        var status: Int
    }

    private struct SignInKey: Hashable, Sendable {
        var flow: SignInFlow
        var isNewUser: Bool
    }

    /// Request duration buckets, in seconds: 5 ms to 10 s.
    static let durationBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
    ]

    /// Store call duration buckets, in seconds: 0.5 ms (a cached SQLite read) to 2.5 s (a pool waiting for a
    /// connection).
    static let storeDurationBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .seconds(2.5),
    ]

    /// - Parameter registry: where the metrics are registered (default: a new one, for this application alone).
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        self.requests = LabeledMetrics { key in
            registry.makeCounter(
                descriptor: Self.name("http_requests", "total", "HTTP requests by method, route pattern and status."),
                labels: [("method", key.method), ("route", key.route), ("status", String(key.status))]
            )
        }
        self.durations = LabeledMetrics { route in
            registry.makeDurationHistogram(
                descriptor: Self.name("http_request_duration", "seconds", "Time to answer an HTTP request, by route."),
                labels: [("route", route)],
                buckets: Self.durationBuckets
            )
        }
        self.storeCalls = LabeledMetrics { call in
            registry.makeDurationHistogram(
                descriptor: Self.name(
                    "store_call_duration",
                    "seconds",
                    "Time a call to the account store took (its queue for a connection included), by call."
                ),
                labels: [("call", call)],
                buckets: Self.storeDurationBuckets
            )
        }
        let signInsName = Self.name(
            "sign_ins",
            "total",
            "Completed sign-ins by flow (native, web, compat) and user (new, returning)."
        )
        var signIns: [SignInKey: Counter] = [:]
        for flow in SignInFlow.allCases {
            for isNewUser in [true, false] {
                signIns[SignInKey(flow: flow, isNewUser: isNewUser)] = registry.makeCounter(
                    descriptor: signInsName,
                    labels: [("flow", flow.rawValue), ("user", isNewUser ? "new" : "returning")]
                )
            }
        }
        self.signIns = signIns
        let refreshes: [RefreshOutcome: Counter] = Self.counters(
            registry,
            Self.name("refreshes", "total", "Refresh token uses by outcome."),
            label: "outcome"
        )
        self.refreshes = refreshes
        self.identityTokenFailures = LabeledMetrics { reason in
            registry.makeCounter(
                descriptor: Self.name("identity_token_failures", "total", "Refused identity tokens by error code."),
                labels: [("reason", reason)]
            )
        }
        let jwksName = Self.name("apple_jwks_fetches", "total", "Fetches of Apple's signing keys by outcome.")
        self.jwksFetchesOK = registry.makeCounter(descriptor: jwksName, labels: [("outcome", "ok")])
        self.jwksFetchesFailed = registry.makeCounter(descriptor: jwksName, labels: [("outcome", "failed")])
        self.codeExchangeFailures = registry.makeCounter(
            descriptor: Self.name(
                "apple_code_exchange_failures",
                "total",
                "Authorization codes Apple did not exchange (the sign-in went on without them)."
            )
        )
        self.auditWriteFailures = registry.makeCounter(
            descriptor: Self.name(
                "audit_write_failures",
                "total",
                "Audit events the store did not record (the action they record went on)."
            )
        )
        self.appleCredentialsFailing = registry.makeGauge(
            descriptor: Self.name(
                "apple_credentials_failing",
                "",
                "1 while Apple refuses siwa's client secret (invalid_client) for a client id, else 0."
            )
        )
        appleCredentialsFailing.set(to: 0.0)
        self.appleInvalidClient = Self.counters(
            registry,
            Self.name(
                "apple_invalid_client",
                "total",
                "Apple's invalid_client answers by call (exchange, validate, revoke, migration)."
            ),
            label: "call"
        )
        self.appleCalls = LabeledMetrics { key in
            registry.makeCounter(
                descriptor: Self.name(
                    "apple_calls",
                    "total",
                    "Calls to Apple's REST API by call and outcome (ok, or the error: invalid_grant, invalid_client, "
                        + "timeout, transport_failed, ...), retries included in one call."
                ),
                labels: [("call", key.call.rawValue), ("outcome", key.outcome)]
            )
        }
        var appleCallDurations: [AppleAPIAnswer.Call: DurationHistogram] = [:]
        for call in AppleAPIAnswer.Call.allCases {
            appleCallDurations[call] = registry.makeDurationHistogram(
                descriptor: Self.name(
                    "apple_call_duration",
                    "seconds",
                    "Time a call to Apple's REST API took, retries included, by call."
                ),
                labels: [("call", call.rawValue)],
                buckets: Self.durationBuckets
            )
        }
        self.appleCallDurations = appleCallDurations
        self.connectionsRefused = Self.counters(
            registry,
            Self.name(
                "connections_refused",
                "total",
                "New connections closed at once by a cap (total, or per client address)."
            ),
            label: "cap"
        )
        self.revocationsPending = registry.makeGauge(
            descriptor: Self.name(
                "apple_revocations_pending",
                "",
                "Revocations of deleted accounts' Apple tokens not confirmed yet (queued for a retry), as of the last "
                    + "scrape."
            )
        )
        self.signingKeyAge = registry.makeGauge(
            descriptor: Self.name("signing_key_age", "seconds", "Age of siwa's current access-token signing key.")
        )
        self.dataKeyAge = registry.makeGauge(
            descriptor: Self.name(
                "data_key_age",
                "seconds",
                "Age of the data-key file (its last change); -1 when the key is set by SIWA_DATA_KEY (no date)."
            )
        )
        self.sharedLimitsLocal = registry.makeGauge(
            descriptor: Self.name(
                "shared_limits_local",
                "",
                "Whether this instance enforces limits of its own, the database not answering the shared ones (1: yes)."
            )
        )
        self.sharedLimitsFailures = registry.makeCounter(
            descriptor: Self.name(
                "shared_limits_failures",
                "total",
                "Reconciliations of the shared limits, and identity-token counts, the database did not answer."
            )
        )
        // Endpoint names come from the configuration: a small, fixed set.
        self.webhookAttempts = LabeledMetrics { key in
            registry.makeCounter(
                descriptor: Self.name(
                    "webhook_attempts",
                    "total",
                    "Webhook attempts by endpoint and outcome (delivered, failed and retried, gave_up)."
                ),
                labels: [("endpoint", key.endpoint), ("outcome", key.outcome)]
            )
        }
        self.webhookPending = LabeledMetrics { endpoint in
            registry.makeGauge(
                descriptor: Self.name("webhook_pending", "", "Webhook deliveries not yet delivered, by endpoint."),
                labels: [("endpoint", endpoint)]
            )
        }
        self.webhookLag = LabeledMetrics { endpoint in
            registry.makeGauge(
                descriptor: Self.name(
                    "webhook_lag",
                    "seconds",
                    "Age of the oldest event an endpoint has not been delivered yet (0: none pending)."
                ),
                labels: [("endpoint", endpoint)]
            )
        }
        self.webhookDisabled = LabeledMetrics { endpoint in
            registry.makeGauge(
                descriptor: Self.name(
                    "webhook_endpoint_disabled",
                    "",
                    "1 while a webhook endpoint is disabled for failing too long, else 0."
                ),
                labels: [("endpoint", endpoint)]
            )
        }
    }

    /// One counter of `descriptor` per case of `Case`, labelled `label` with the case's raw value.
    private static func counters<Case: CaseIterable & RawRepresentable & Hashable>(
        _ registry: PrometheusCollectorRegistry,
        _ descriptor: MetricNameDescriptor,
        label: String
    ) -> [Case: Counter] where Case.RawValue == String {
        Dictionary(
            uniqueKeysWithValues: Case.allCases.map {
                ($0, registry.makeCounter(descriptor: descriptor, labels: [(label, $0.rawValue)]))
            }
        )
    }

    /// `siwa_<metric>_<unit>`, with its help text.
    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "siwa", metricName: metric, unitName: unit, helpText: help)
    }

    /// Counts an answered request.
    /// - Parameters:
    ///   - method: the request method.
    ///   - route: the matched route pattern (e.g. `/api/me`), or `unmatched`; never the raw path.
    ///   - status: the response status code.
    ///   - duration: time to answer.
    func request(method: String, route: String, status: Int, duration: Duration) {
        requests[RequestKey(method: method, route: route, status: status)].increment()
        durations[route].record(duration)
    }

    /// Records how long a store call took.
    /// - Parameter call: the store method's name (`signIn`, `rotateRefreshToken`): a fixed set.
    func storeCall(_ call: String, duration: Duration) {
        storeCalls[call].record(duration)
    }

    /// Counts a completed sign-in.
    func signIn(flow: SignInFlow, isNewUser: Bool) {
        signIns[SignInKey(flow: flow, isNewUser: isNewUser)]?.increment()
    }

    /// Counts a refresh token use.
    func refresh(_ outcome: RefreshOutcome) {
        refreshes[outcome]?.increment()
    }

    /// Counts a refused identity token by the error code answered (e.g. `identity_token_expired`).
    func identityTokenFailure(reason: String) {
        identityTokenFailures[reason].increment()
    }

    /// Counts a fetch of Apple's key set.
    func jwksFetch(succeeded: Bool) {
        (succeeded ? jwksFetchesOK : jwksFetchesFailed).increment()
    }

    /// Counts an authorization code Apple did not exchange.
    func codeExchangeFailed() {
        codeExchangeFailures.increment()
    }

    /// Counts an audit event the store did not record.
    func auditWriteFailed() {
        auditWriteFailures.increment()
    }

    /// Counts an `invalid_client` answer from Apple.
    func appleInvalidClient(call: AppleAPIAnswer.Call) {
        appleInvalidClient[call]?.increment()
    }

    /// Sets whether Apple refuses siwa's client secret now.
    func appleCredentials(failing: Bool) {
        appleCredentialsFailing.set(to: failing ? 1.0 : 0.0)
    }

    /// Counts a call to Apple's REST API and records how long it took.
    func appleCall(_ call: AppleAPIAnswer.Call, outcome: String, duration: Duration?) {
        appleCalls[AppleCallKey(call: call, outcome: outcome)].increment()
        if let duration { appleCallDurations[call]?.record(duration) }
    }

    /// Counts a new connection a cap closed.
    func connectionRefused(by cap: ConnectionCap) {
        connectionsRefused[cap]?.increment()
    }

    /// Sets the gauges read at each scrape: the revocation queue and the keys' ages in seconds.
    func operational(revocationsPending: Int, signingKeyAge: Double?, dataKeyAge: Double?) {
        self.revocationsPending.set(to: Double(revocationsPending))
        self.signingKeyAge.set(to: signingKeyAge ?? 0)
        self.dataKeyAge.set(to: dataKeyAge ?? -1)
    }

    /// Says whether this instance enforces its own limits (the database does not answer the shared ones).
    func sharedLimits(local: Bool) {
        sharedLimitsLocal.set(local ? 1.0 : 0.0)
    }

    /// Counts a reconciliation or an identity-token count the database did not answer.
    func sharedLimitsFailed() {
        sharedLimitsFailures.increment()
    }

    /// Counts a webhook attempt.
    func webhookAttempt(endpoint: String, outcome: String) {
        webhookAttempts[WebhookAttemptKey(endpoint: endpoint, outcome: outcome)].increment()
    }

    /// Sets an endpoint's pending deliveries and the age of its oldest undelivered event.
    func webhookBacklog(endpoint: String, pending: Int, lag: Double, disabled: Bool) {
        webhookPending[endpoint].set(to: Double(pending))
        webhookLag[endpoint].set(to: lag)
        webhookDisabled[endpoint].set(to: disabled ? 1.0 : 0.0)
    }

    /// Every metric in Prometheus text exposition format (version 0.0.4).
    public func exposition() -> [UInt8] {
        registry.emitToBuffer()
    }
}

/// Metrics of one family by label key, created on first use and then found with one lock and one lookup.
private final class LabeledMetrics<Key: Hashable & Sendable, Metric: AnyObject & Sendable>: Sendable {
    private let cache = Mutex<[Key: Metric]>([:])
    private let make: @Sendable (Key) -> Metric

    init(make: @escaping @Sendable (Key) -> Metric) {
        self.make = make
    }

    subscript(key: Key) -> Metric {
        cache.withLock { cache in
            if let metric = cache[key] { return metric }
            let metric = make(key)
            cache[key] = metric
            return metric
        }
    }
}
