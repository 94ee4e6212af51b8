import AccountStore
import AppleSignIn
import HTTPTypes
import Logging
import ServiceLifecycle

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Sends the lifecycle events to the configured webhook endpoints, and logout tokens to the relying parties'
/// back-channel logout URIs, beside the server: each round queues every endpoint's new events in the store and
/// attempts the deliveries that are due, each at least once until a 2xx answer, retried with a growing wait for
/// ``WebhookConfiguration/retryFor``.
///
/// The store hands a delivery to one instance at a time and an account's deliveries one at a time, in event order,
/// so several instances may run this side by side. Before each attempt the endpoint's URL and every address its host
/// resolves to are checked against ``WebhookConfiguration/rules``; the request goes to a checked address, with no
/// redirect followed.
struct WebhookDeliverer: Service {
    let configuration: WebhookConfiguration
    /// Where it delivers: ``AuthServerConfiguration/deliveryEndpoints``.
    let endpoints: [WebhookEndpoint]
    let transport: any WebhookTransport
    let store: any AccountStore
    let clock: any WallClock
    let metrics: ServerMetrics?
    let logger: Logger
    /// Records an endpoint's disabling (`nil`: not recorded).
    var audit: AuditLog?
    /// Told which endpoints are disabled after each round (`nil`: nobody asks).
    var health: WebhookHealth?
    /// Signs the logout tokens of back-channel logout endpoints (`nil`: none is configured).
    var logoutTokens: (any LogoutTokenSigning)?
    /// A number in 0...1 for each retry's wait (random in use).
    var draw: @Sendable () -> Double = { Double.random(in: 0...1) }

    /// The most batches of deliveries attempted per endpoint in one round, so that one endpoint's backlog does not
    /// hold back the others'.
    static let batchesPerRound = 10
    /// The most events examined per queueing.
    static let queueLimit = 500

    func run() async throws {
        logger.info(
            "delivering webhooks",
            metadata: ["endpoints": "\(endpoints.map(\.description).joined(separator: ", "))"]
        )
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await deliverRound()
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: configuration.pollInterval) }
        }
    }

    /// One round over the endpoints that are not disabled.
    /// - Returns: how many attempts were made.
    @discardableResult
    func deliverRound() async -> Int {
        let disabled: Set<String>
        do {
            disabled = try await disableFailingEndpoints()
        } catch {
            logger.warning("reading the webhook endpoints failed", metadata: ["error": "\(error)"])
            return 0
        }
        var attempts = 0
        for endpoint in endpoints where !disabled.contains(endpoint.name) {
            do {
                try await queue(endpoint)
                for _ in 0..<Self.batchesPerRound {
                    let made = try await attemptDue(endpoint)
                    attempts += made
                    if made == 0 || Task.isCancelled { break }
                }
            } catch {
                logger.warning(
                    "delivering webhooks failed",
                    metadata: ["endpoint": "\(endpoint.name)", "error": "\(error)"]
                )
            }
        }
        return attempts
    }

    /// Disables each configured endpoint whose every attempt has failed for ``WebhookConfiguration/disableAfter``,
    /// recording it, and tells ``health``; returns the names of the disabled endpoints.
    private func disableFailingEndpoints() async throws(StoreError) -> Set<String> {
        var states = try await store.webhookEndpoints()
        let now = clock.now
        let configured = Set(endpoints.map(\.name))
        var changed = false
        if let limit = configuration.disableAfter {
            for state in states where configured.contains(state.name) && state.disabledAt == nil {
                guard let since = state.failingSince, now.timeIntervalSince(since) >= limit,
                    try await store.setWebhookEndpoint(state.name, disabled: true, now: now)
                else { continue }
                changed = true
                let failingSince = since.formatted(.iso8601)
                logger.error(
                    "disabled a webhook endpoint that failed every attempt too long (siwa webhooks enable)",
                    metadata: ["endpoint": "\(state.name)", "failing_since": "\(failingSince)"]
                )
                await audit?.append(
                    .webhookEndpointDisabled,
                    actor: .system,
                    reason: "failing",
                    details: ["endpoint": state.name, "failing_since": failingSince]
                )
            }
        }
        if changed { states = try await store.webhookEndpoints() }
        health?.update(states, configured: endpoints)
        return Set(states.filter { $0.disabledAt != nil }.map(\.name))
    }

    /// Queues the endpoint's new events (all of them, in batches).
    private func queue(_ endpoint: WebhookEndpoint) async throws(StoreError) {
        for _ in 0..<100 {
            let (_, more) = try await store.queueWebhookDeliveries(
                endpoint: endpoint.name,
                types: endpoint.events,
                channel: endpoint.channel,
                limit: Self.queueLimit,
                now: clock.now
            )
            if !more { return }
        }
    }

    /// Claims the endpoint's due deliveries and attempts them at once; returns how many.
    private func attemptDue(_ endpoint: WebhookEndpoint) async throws(StoreError) -> Int {
        let now = clock.now
        // The claim outlasts an attempt: it lapses only when this instance died during one.
        let lease = TimeInterval(configuration.attemptTimeout.components.seconds) + 60
        let claimed = try await store.claimWebhookDeliveries(
            endpoint: endpoint.name,
            limit: configuration.concurrency,
            now: now,
            until: now.addingTimeInterval(lease)
        )
        await withTaskGroup(of: Void.self) { group in
            for delivery in claimed {
                group.addTask { await attempt(delivery, to: endpoint) }
            }
        }
        return claimed.count
    }

    /// One attempt of `delivery`, recorded with what follows it.
    func attempt(_ delivery: WebhookDelivery, to endpoint: WebhookEndpoint) async {
        let started = clock.now
        let clockStart = ContinuousClock.now
        let (status, error) = await send(delivery.event, to: endpoint, at: started)
        let elapsed = ContinuousClock.now - clockStart
        let attempt = WebhookAttempt(
            time: started,
            status: status,
            error: error,
            milliseconds: elapsed.components.seconds * 1_000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        )
        let next: WebhookAttemptNext
        let outcome: String
        if attempt.succeeded {
            (next, outcome) = (.delivered, "delivered")
        } else if started.timeIntervalSince(delivery.createdAt) >= configuration.retryFor {
            (next, outcome) = (.giveUp, "gave_up")
        } else {
            let wait = configuration.retryDelay(afterFailures: delivery.attempts + 1, draw: draw())
            (next, outcome) = (.retry(at: started.addingTimeInterval(wait)), "failed")
        }
        metrics?.webhookAttempt(endpoint: endpoint.name, outcome: outcome)
        var metadata: Logger.Metadata = [
            "endpoint": "\(endpoint.name)", "event_id": "\(delivery.event.id.lowercasedText)",
            "event_type": "\(delivery.event.type.rawValue)", "attempt": "\(delivery.attempts + 1)",
        ]
        if let status { metadata["status"] = "\(status)" }
        if let error { metadata["error"] = "\(error)" }
        switch next {
        case .delivered: logger.debug("delivered a webhook", metadata: metadata)
        case .retry: logger.warning("a webhook attempt failed; it is retried", metadata: metadata)
        case .giveUp: logger.error("a webhook delivery was given up", metadata: metadata)
        }
        do {
            try await store.recordWebhookAttempt(delivery.id, attempt, next: next)
        } catch {
            // The claim lapses and the delivery is attempted again: at least once, never lost.
            logger.warning(
                "recording a webhook attempt failed",
                metadata: metadata.merging(["error": "\(error)"]) { $1 }
            )
        }
    }

    /// What the endpoint is sent for `event`: the signed event (a webhook), or a logout token (back-channel logout).
    private func message(
        _ event: LifecycleEvent,
        for endpoint: WebhookEndpoint,
        at time: Date
    ) -> Result<(body: [UInt8], headers: HTTPFields), DeliveryProblem> {
        switch endpoint.kind {
        case .webhook:
            let message = LifecycleEventMessage(event)
            guard let body = try? JSONAnswer.bytes(message) else {
                return .failure(DeliveryProblem("the event could not be written as JSON"))
            }
            var headers = WebhookSignature.headers(
                id: message.id,
                timestamp: time,
                body: body,
                secrets: endpoint.secrets
            )
            headers[.contentType] = "application/json"
            headers[.userAgent] = "siwa/\(SiwaVersion.current)"
            return .success((body, headers))
        case .backchannelLogout(let clientID):
            guard let logoutTokens else { return .failure(DeliveryProblem("no logout token signer is configured")) }
            do {
                let token = try logoutTokens.logoutToken(for: event, clientID: clientID, at: time)
                return .success(BackchannelLogoutMessage.request(token: token))
            } catch {
                return .failure(DeliveryProblem("the logout token could not be signed"))
            }
        }
    }

    /// Why an attempt could not be made, as its `last_error` says.
    struct DeliveryProblem: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Sends `event` to the endpoint once; the answer's status, and why the attempt failed (`nil` for a 2xx).
    func send(
        _ event: LifecycleEvent,
        to endpoint: WebhookEndpoint,
        at time: Date
    ) async -> (status: Int?, error: String?) {
        let rules = configuration.rules
        let url: URL
        do {
            url = try rules.checkedURL(endpoint.url.absoluteString)
        } catch {
            return (nil, "the endpoint's URL \(error)")
        }
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false), let rawHost = components.host
        else { return (nil, "the endpoint's URL names no host") }
        let host = rawHost.hasPrefix("[") && rawHost.hasSuffix("]") ? String(rawHost.dropFirst().dropLast()) : rawHost
        let port = components.port ?? (components.scheme?.lowercased() == "http" ? 80 : 443)
        let addresses: [String]
        if AddressRanges.parse(host) != nil {
            // An address in the URL was checked with it (``WebhookTargetRules/checkedURL(_:)``), the development
            // setting's plain http to loopback included.
            addresses = [host]
        } else {
            do {
                addresses = try await transport.addresses(of: host, port: port)
            } catch {
                return (nil, "\(host) does not resolve")
            }
            // Every address is checked, not only the one used: a name that also resolves into the operator's
            // network could be made to pick that one next time.
            if let refused = addresses.first(where: { !rules.admits(address: $0) }) {
                return (
                    nil,
                    "\(host) resolves to \(refused), in a loopback, private, link-local or reserved range that the "
                        + "allowed networks do not list"
                )
            }
        }
        guard let address = addresses.first else { return (nil, "\(host) resolves to no address") }
        let body: [UInt8]
        let headers: HTTPFields
        switch message(event, for: endpoint, at: time) {
        case .success(let request): (body, headers) = request
        case .failure(let problem): return (nil, problem.description)
        }
        let status: Int
        do {
            status = try await transport.post(
                body,
                headers: headers,
                to: url,
                connectingTo: address,
                timeout: configuration.attemptTimeout
            )
        } catch {
            return (nil, String(String(describing: error).prefix(300)))
        }
        switch status {
        case 200..<300: return (status, nil)
        case 300..<400: return (status, "answered \(status), a redirect, which is not followed")
        default: return (status, "answered \(status)")
        }
    }
}
