public import AccountStore
public import HTTPTypes

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The webhooks siwa sends the app's backend: the endpoints, where they may point, and how deliveries are retried
/// (`docs/events.md`).
public struct WebhookConfiguration: Sendable {
    /// The endpoints (`SIWA_WEBHOOKS_ENDPOINTS`); none: nothing is sent.
    public var endpoints: [WebhookEndpoint] = []
    /// Networks an endpoint may point into although they are private, loopback or reserved
    /// (`SIWA_WEBHOOKS_ALLOWED_NETWORKS`).
    public var allowedNetworks: AddressRanges = .none
    /// Plain `http` to a loopback address, for development only (`SIWA_WEBHOOKS_ALLOW_LOOPBACK_HTTP`).
    public var allowsPlainHTTPToLoopback = false
    /// The most one attempt may take, connecting included (`SIWA_WEBHOOKS_TIMEOUT`).
    public var attemptTimeout: Duration = .seconds(10)
    /// How long a delivery is retried after it was queued before it is given up (`SIWA_WEBHOOKS_RETRY_HOURS`, 72).
    public var retryFor: TimeInterval = 72 * 3_600
    /// The wait after a first failure; each further failure doubles it, up to ``longestRetryDelay``, each wait
    /// drawn between half of it and all of it so that instances and endpoints do not retry in step.
    public var firstRetryDelay: TimeInterval = 5
    public var longestRetryDelay: TimeInterval = 3_600
    /// How long an endpoint may fail every attempt before it is disabled (`SIWA_WEBHOOKS_DISABLE_AFTER_HOURS`, 120);
    /// `nil`: never. A disabled endpoint's deliveries wait until an operator enables it (`siwa webhooks enable`).
    public var disableAfter: TimeInterval? = 120 * 3_600
    /// How often each endpoint's new events are looked for.
    public var pollInterval: Duration = .seconds(1)
    /// Deliveries claimed and attempted at once, per endpoint (each account's one at a time).
    public var concurrency = 8
    /// Sends the requests. `siwa serve` sets one on async-http-client; without one, nothing is sent.
    public var transport: (any WebhookTransport)?

    public init() {}

    /// Checks every endpoint's URL against the rules of where a webhook may go (https, no credentials, no address in
    /// a refused range unless allowed), as each attempt checks it again.
    /// - Parameter endpoints: the endpoints to check (the configured ``endpoints`` when left out).
    /// - Throws: ``WebhookEndpointError`` naming the endpoint and what is wrong with its URL.
    public func checkEndpoints(_ endpoints: [WebhookEndpoint]? = nil) throws(WebhookEndpointError) {
        for endpoint in endpoints ?? self.endpoints {
            do {
                _ = try rules.checkedURL(endpoint.url.absoluteString)
            } catch {
                switch endpoint.kind {
                case .webhook:
                    throw WebhookEndpointError("the webhook endpoint \(endpoint.name)'s URL \(error)")
                case .backchannelLogout(let clientID):
                    throw WebhookEndpointError("client \(clientID): \"backchannelLogoutURI\" \(error)")
                }
            }
        }
    }

    /// Where endpoints may point.
    var rules: WebhookTargetRules {
        WebhookTargetRules(allowedNetworks: allowedNetworks, allowsPlainHTTPToLoopback: allowsPlainHTTPToLoopback)
    }

    /// The wait before the next attempt after `failures` failed ones (1 after the first).
    /// - Parameters:
    ///   - failures: the failed attempts so far, at least 1.
    ///   - draw: a number in 0...1 (random in use), which spreads the wait over its upper half.
    /// - Returns: seconds.
    func retryDelay(afterFailures failures: Int, draw: Double) -> TimeInterval {
        let doubled = firstRetryDelay * Double(UInt64(1) << UInt64(min(max(failures, 1) - 1, 40)))
        let delay = min(longestRetryDelay, doubled)
        return delay / 2 + delay / 2 * min(max(draw, 0), 1)
    }
}

/// Where siwa sends what it knows: a webhook endpoint of the app's backend (where it is, the secrets that sign for
/// it, and the event types it hears), or a relying party's back-channel logout URI (its client's ended sessions).
/// Both go through the same outbox, retries and disabling.
public struct WebhookEndpoint: Sendable, CustomStringConvertible {
    /// Its name: metrics, logs, the console and the admin API show it, and the store keeps its progress by it. A
    /// relying party's is `backchannel:<client_id>`, which no webhook name can be.
    public let name: String
    public let url: URL
    let secrets: [WebhookSecret]
    public let events: Set<LifecycleEventType>
    public let kind: Kind

    /// What an endpoint is sent.
    public enum Kind: Sendable, Hashable {
        /// The events feed's JSON for each event, signed per Standard Webhooks.
        case webhook
        /// A logout token (OpenID Connect Back-Channel Logout 1.0) for each ended session of the client.
        case backchannelLogout(clientID: String)
    }

    /// The channel whose ended sessions it hears (a relying party's), `nil`: every event of its types.
    public var channel: SignInChannel? {
        switch kind {
        case .webhook: nil
        case .backchannelLogout(let clientID): .openID(clientID)
        }
    }

    /// A relying party's back-channel logout endpoint.
    /// - Parameters:
    ///   - clientID: its `client_id`.
    ///   - url: its `backchannel_logout_uri`.
    init(backchannelLogoutOf clientID: String, url: URL) {
        name = "backchannel:" + clientID
        self.url = url
        secrets = []
        events = [.sessionEnded]
        kind = .backchannelLogout(clientID: clientID)
    }

    /// An endpoint.
    /// - Parameters:
    ///   - name: 1 to 64 lower-case letters, digits, `-` and `_`, starting with a letter or digit.
    ///   - url: its URL (checked against the configuration's rules when siwa starts and before each attempt).
    ///   - secrets: Standard Webhooks secrets (`whsec_…`), one or two (during a rotation each signs).
    ///   - events: the types it hears; every type when empty.
    /// - Throws: ``WebhookEndpointError`` naming what is wrong.
    public init(name: String, url: String, secrets: [String], events: [String]) throws(WebhookEndpointError) {
        guard Self.isValidName(name) else {
            throw WebhookEndpointError(
                "the webhook endpoint name '\(name.prefix(64))' must be 1 to 64 of a-z, 0-9, - and _, starting with a "
                    + "letter or digit"
            )
        }
        guard let parsed = URL(string: url), parsed.scheme != nil, parsed.host != nil else {
            throw WebhookEndpointError("the webhook endpoint \(name) has no absolute URL")
        }
        guard (1...2).contains(secrets.count) else {
            throw WebhookEndpointError("the webhook endpoint \(name) needs one secret, or two during a rotation")
        }
        var read: [WebhookSecret] = []
        for secret in secrets {
            do {
                read.append(try WebhookSecret(secret))
            } catch {
                throw WebhookEndpointError("the webhook endpoint \(name): \(error)")
            }
        }
        var types: Set<LifecycleEventType> = []
        for event in events {
            guard let type = LifecycleEventType(rawValue: event) else {
                throw WebhookEndpointError(
                    "the webhook endpoint \(name) names the event type '\(event.prefix(64))'; the types are "
                        + LifecycleEventType.allCases.map(\.rawValue).joined(separator: ", ")
                )
            }
            types.insert(type)
        }
        self.name = name
        self.url = parsed
        self.secrets = read
        self.events = types.isEmpty ? Set(LifecycleEventType.allCases) : types
        self.kind = .webhook
    }

    static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        func allowed(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        guard let first = bytes.first, allowed(first), bytes.count <= 64 else { return false }
        return bytes.allSatisfy { allowed($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    }

    /// The URL without its query, which may hold a token of the receiver's: what logs and pages show.
    public var shownURL: String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return name }
        components.query = nil
        return components.string ?? name
    }

    public var description: String { "\(name) (\(shownURL))" }

    /// Reads the endpoints from JSON, as `SIWA_WEBHOOKS_ENDPOINTS` gives them: an array of `{"name", "url", "secrets",
    /// "events"}` (`events` may be left out for every type).
    /// - Parameter json: the JSON text.
    /// - Returns: the endpoints, names unique.
    /// - Throws: ``WebhookEndpointError`` naming the entry and what is wrong (never a secret).
    public static func list(json: String) throws(WebhookEndpointError) -> [WebhookEndpoint] {
        struct Entry: Decodable {
            var name: String
            var url: String
            var secrets: [String]
            var events: [String]?
        }
        let entries: [Entry]
        do {
            entries = try JSONDecoder().decode([Entry].self, from: Data(json.utf8))
        } catch {
            throw WebhookEndpointError(
                "expected a JSON array of {\"name\", \"url\", \"secrets\": [\"whsec_…\"], \"events\": [types]}"
            )
        }
        var endpoints: [WebhookEndpoint] = []
        for entry in entries {
            let endpoint = try WebhookEndpoint(
                name: entry.name,
                url: entry.url,
                secrets: entry.secrets,
                events: entry.events ?? []
            )
            guard !endpoints.contains(where: { $0.name == endpoint.name }) else {
                throw WebhookEndpointError("two webhook endpoints are named \(endpoint.name)")
            }
            endpoints.append(endpoint)
        }
        return endpoints
    }
}

/// What is wrong with a webhook endpoint's configuration.
public struct WebhookEndpointError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Sends one webhook attempt: the HTTP client that ``WebhookConfiguration/transport`` names.
public protocol WebhookTransport: Sendable {
    /// The addresses `host` resolves to (textual IPv4 and IPv6), every one of which siwa checks before it connects.
    /// - Parameters:
    ///   - host: a host name.
    ///   - port: the port to connect to.
    /// - Returns: the addresses, in the order to try.
    /// - Throws: when the name does not resolve.
    func addresses(of host: String, port: Int) async throws -> [String]

    /// POSTs `body` to `url`, connecting to `address` (one that ``addresses(of:port:)`` gave and siwa checked) with
    /// TLS for the URL's host, following no redirect.
    /// - Parameters:
    ///   - body: the JSON payload.
    ///   - headers: the signature headers and the content type.
    ///   - url: the endpoint.
    ///   - address: where to connect.
    ///   - timeout: the most the whole exchange may take.
    /// - Returns: the answer's status (its body is read up to a small limit and dropped).
    /// - Throws: when no answer came.
    func post(
        _ body: [UInt8],
        headers: HTTPFields,
        to url: URL,
        connectingTo address: String,
        timeout: Duration
    ) async throws -> Int
}
