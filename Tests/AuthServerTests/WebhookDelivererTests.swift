import AccountStore
import AppleSignIn
import Foundation
import HTTPTypes
import Logging
import SiwaTesting
import Synchronization
import Testing

@testable import AuthServer

/// What the deliverer sends, to whom, and what it records, over the in-memory store and a transport that answers as
/// told: signed payloads, retries with a growing wait, refused addresses never contacted, redirects not followed,
/// deliveries given up after their time.
@Suite("Webhook deliverer")
struct WebhookDelivererTests {
    /// A transport that resolves names from a table and answers each POST with the next status of a script.
    final class ScriptedTransport: WebhookTransport {
        struct Post: Sendable {
            var body: [UInt8]
            var headers: HTTPFields
            var url: URL
            var address: String
        }

        let names: [String: [String]]
        private let state: Mutex<(statuses: [Int], posts: [Post])>

        init(names: [String: [String]] = [:], statuses: [Int] = []) {
            self.names = names
            state = Mutex((statuses, []))
        }

        var posts: [Post] { state.withLock { $0.posts } }

        func addresses(of host: String, port: Int) async throws -> [String] {
            guard let addresses = names[host] else { throw URLError(.cannotFindHost) }
            return addresses
        }

        func post(
            _ body: [UInt8],
            headers: HTTPFields,
            to url: URL,
            connectingTo address: String,
            timeout: Duration
        ) async throws -> Int {
            state.withLock { state in
                state.posts.append(Post(body: body, headers: headers, url: url, address: address))
                return state.statuses.isEmpty ? 204 : state.statuses.removeFirst()
            }
        }
    }

    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    let store = InMemoryAccountStore()
    let clock = ManualWallClock(unixTime: 1_800_000_000)

    private func deliverer(
        _ url: String,
        _ transport: ScriptedTransport,
        events: [String] = [],
        configure: (inout WebhookConfiguration) -> Void = { _ in }
    ) throws -> WebhookDeliverer {
        var configuration = WebhookConfiguration()
        configuration.endpoints = [
            try WebhookEndpoint(name: "backend", url: url, secrets: [Self.secret], events: events)
        ]
        configure(&configuration)
        return WebhookDeliverer(
            configuration: configuration,
            endpoints: configuration.endpoints,
            transport: transport,
            store: store,
            clock: clock,
            metrics: nil,
            logger: Logger(label: "test"),
            draw: { 1 }
        )
    }

    /// Signs in a new account and disables it: a `user.created` and a `user.disabled`.
    private func twoEvents() async throws -> UserRecord {
        let facts = AppleSignInFacts(
            appleUserID: AppleUserID("001.\(UUID().uuidString).1"),
            clientID: ClientID("com.example.app")
        )
        let user = try await store.signIn(facts, now: clock.now).user
        _ = await store.disableUser(id: user.id, by: .operator, now: clock.now)
        return user
    }

    private func deliveries() async throws -> [WebhookDelivery] {
        try await store.webhookDeliveries(endpoint: "backend", state: nil, before: nil, limit: 10).reversed()
    }

    @Test func aDeliveryIsSignedAndCarriesTheFeedsMessage() async throws {
        let transport = ScriptedTransport(names: ["hooks.example.com": ["93.184.216.34", "2606:2800:220:1::1"]])
        let deliverer = try deliverer("https://hooks.example.com/siwa?k=1", transport, events: ["user.disabled"])
        #expect(await deliverer.deliverRound() == 0, "the endpoint is seen first: it hears what happens next")
        _ = try await twoEvents()
        #expect(await deliverer.deliverRound() == 1)
        let post = try #require(transport.posts.first)
        #expect(post.address == "93.184.216.34", "the request goes to a checked address")
        #expect(post.url.absoluteString == "https://hooks.example.com/siwa?k=1")
        let event = try #require(try await store.lifecycleEvents(after: nil, limit: 10).last)
        #expect(post.body == (try JSONAnswer.bytes(LifecycleEventMessage(event))))
        let signed = WebhookSignature.headers(
            id: event.id.lowercasedText,
            timestamp: clock.now,
            body: post.body,
            secrets: [try WebhookSecret(Self.secret)]
        )
        for name in [HTTPField.Name.webhookID, .webhookTimestamp, .webhookSignature] {
            #expect(post.headers[name] == signed[name])
        }
        #expect(post.headers[.contentType] == "application/json")
        #expect(try await deliveries().map(\.state) == [.delivered])
        #expect(await deliverer.deliverRound() == 0, "delivered once")
    }

    @Test func aFailureIsRetriedLaterWithAGrowingWaitAndHoldsBackTheAccount() async throws {
        let transport = ScriptedTransport(statuses: [500, 503, 204, 204])
        let deliverer = try deliverer("https://93.184.216.34/hook", transport)
        await deliverer.deliverRound()
        _ = try await twoEvents()
        #expect(await deliverer.deliverRound() == 1, "the account's second event waits for its first")
        let first = try #require(try await deliveries().first)
        #expect(first.state == .pending && first.lastStatus == 500 && first.lastError == "answered 500")
        #expect(first.nextAttemptAt == clock.now.addingTimeInterval(5))
        #expect(await deliverer.deliverRound() == 0, "not due yet")
        clock.advance(by: 5)
        #expect(await deliverer.deliverRound() == 1)
        #expect(try await deliveries().first?.nextAttemptAt == clock.now.addingTimeInterval(10), "the wait doubles")
        clock.advance(by: 10)
        #expect(await deliverer.deliverRound() == 2, "delivered, then the account's next event")
        #expect(try await deliveries().map(\.state) == [.delivered, .delivered])
        #expect(try await deliveries().map(\.attempts) == [3, 1])
        #expect(transport.posts.map { $0.headers[.webhookID] }.count == 4)
        #expect(Set(transport.posts.prefix(3).map { $0.headers[.webhookID] }).count == 1, "one id on every attempt")
    }

    @Test func aRedirectIsAFailureAndNotFollowed() async throws {
        let transport = ScriptedTransport(statuses: [302])
        let deliverer = try deliverer("https://93.184.216.34/hook", transport, events: ["user.created"])
        await deliverer.deliverRound()
        _ = try await twoEvents()
        #expect(await deliverer.deliverRound() == 1)
        let delivery = try #require(try await deliveries().first)
        #expect(delivery.state == .pending && delivery.lastStatus == 302)
        #expect(delivery.lastError?.contains("redirect, which is not followed") == true)
        #expect(transport.posts.count == 1)
    }

    /// A name that resolves into the operator's network, for any one of its addresses, is never contacted; an
    /// allowed network is.
    @Test(arguments: [
        ["10.0.0.5"], ["169.254.169.254"], ["93.184.216.34", "127.0.0.1"], ["::ffff:192.168.1.1"], ["fd00::1"],
    ])
    func aNameResolvingIntoARefusedRangeIsNeverContacted(addresses: [String]) async throws {
        let transport = ScriptedTransport(names: ["hooks.example.com": addresses])
        let deliverer = try deliverer("https://hooks.example.com/hook", transport, events: ["user.created"])
        await deliverer.deliverRound()
        _ = try await twoEvents()
        #expect(await deliverer.deliverRound() == 1)
        #expect(transport.posts.isEmpty)
        let delivery = try #require(try await deliveries().first)
        #expect(delivery.state == .pending && delivery.lastStatus == nil)
        #expect(delivery.lastError?.contains("in a loopback, private, link-local or reserved range") == true)

        let allowed = try self.deliverer("https://hooks.example.com/hook", transport, events: ["user.created"]) {
            $0.allowedNetworks = try! AddressRanges([
                "10.0.0.0/8", "169.254.0.0/16", "127.0.0.1", "192.168.0.0/16", "fd00::/8",
            ])
        }
        clock.advance(by: 60)
        #expect(await allowed.deliverRound() == 1)
        #expect(transport.posts.count == 1, "the operator listed the network")
    }

    /// The development setting lets plain http go to a loopback address written in the URL, and nothing more: an
    /// https name that resolves to loopback is refused as without it.
    @Test func theLoopbackSettingAdmitsOnlyALoopbackAddressInTheURL() async throws {
        let transport = ScriptedTransport(names: ["hooks.example.com": ["127.0.0.1"]])
        let byName = try deliverer("https://hooks.example.com/hook", transport, events: ["user.created"]) {
            $0.allowsPlainHTTPToLoopback = true
        }
        await byName.deliverRound()
        _ = try await twoEvents()
        #expect(await byName.deliverRound() == 1)
        #expect(transport.posts.isEmpty, "a name resolving to this machine is never contacted")
        #expect(try await deliveries().first?.lastError?.contains("resolves to 127.0.0.1") == true)

        let literal = try deliverer("http://127.0.0.1:9/hook", transport, events: ["user.created"]) {
            $0.allowsPlainHTTPToLoopback = true
        }
        clock.advance(by: 60)
        #expect(await literal.deliverRound() == 1)
        #expect(transport.posts.map(\.address) == ["127.0.0.1"])
    }

    @Test func aNameThatDoesNotResolveIsAFailure() async throws {
        let transport = ScriptedTransport()
        let deliverer = try deliverer("https://nowhere.example.com/hook", transport, events: ["user.created"])
        await deliverer.deliverRound()
        _ = try await twoEvents()
        #expect(await deliverer.deliverRound() == 1)
        #expect(try await deliveries().first?.lastError == "nowhere.example.com does not resolve")
        #expect(transport.posts.isEmpty)
    }

    @Test func aDeliveryIsGivenUpAfterItsRetryTime() async throws {
        let transport = ScriptedTransport(statuses: Array(repeating: 503, count: 100))
        let deliverer = try deliverer("https://93.184.216.34/hook", transport, events: ["user.created"]) {
            $0.retryFor = 3_600
        }
        await deliverer.deliverRound()
        _ = try await twoEvents()
        let queued = clock.now
        var times: [TimeInterval] = [0]
        await deliverer.deliverRound()
        while let pending = try await deliveries().first, pending.state == .pending, times.count < 100 {
            clock.set(pending.nextAttemptAt ?? clock.now)
            times.append(clock.now.timeIntervalSince(queued))
            await deliverer.deliverRound()
        }
        let delivery = try #require(try await deliveries().first)
        #expect(delivery.state == .failed && delivery.nextAttemptAt == nil)
        #expect(transport.posts.count == delivery.attempts)
        // Waits of 5 s doubling; the first attempt after the hour is the last.
        #expect(times == [0, 5, 15, 35, 75, 155, 315, 635, 1_275, 2_555, 5_115])
    }

    /// An endpoint that fails every attempt for longer than `disableAfter` is disabled, recorded and shown; its
    /// deliveries wait until it is enabled.
    @Test func anEndpointFailingTooLongIsDisabledUntilEnabled() async throws {
        let transport = ScriptedTransport(statuses: [503, 503])
        let health = WebhookHealth()
        var deliverer = try deliverer("https://93.184.216.34/hook", transport, events: ["user.created"]) {
            $0.disableAfter = 600
        }
        deliverer.health = health
        deliverer.audit = AuditLog(store: store, clock: clock, logger: Logger(label: "test"))
        await deliverer.deliverRound()
        _ = try await twoEvents()
        #expect(await deliverer.deliverRound() == 1)
        clock.advance(by: 300)
        #expect(await deliverer.deliverRound() == 1, "failing for 5 minutes: still enabled")
        #expect(health.disabled.isEmpty)
        clock.advance(by: 301)
        #expect(await deliverer.deliverRound() == 0, "failing for over 10 minutes: disabled, nothing attempted")
        #expect(health.disabled.map(\.name) == ["backend"])
        #expect(transport.posts.count == 2)
        let recorded = try await store.auditEvents(
            AuditEventFilter(types: [.webhookEndpointDisabled]),
            limit: 10,
            after: nil
        ).items
        #expect(recorded.map(\.details["endpoint"]) == ["backend"])
        #expect(recorded.first?.actor == .system)
        let banner = try #require(AdminConsoleController.webhookBanner(health.disabled))
        #expect(banner.contains("<code>backend</code>") && banner.contains("siwa webhooks enable"))

        #expect(try await store.setWebhookEndpoint("backend", disabled: false, now: clock.now))
        #expect(await deliverer.deliverRound() == 1, "enabled: its waiting delivery goes out")
        #expect(health.disabled.isEmpty)
        #expect(try await deliveries().first?.state == .delivered)
    }

    @Test func theRetryWaitDoublesToItsCapWithJitterInItsUpperHalf() {
        let configuration = WebhookConfiguration()
        #expect(configuration.retryDelay(afterFailures: 1, draw: 1) == 5)
        #expect(configuration.retryDelay(afterFailures: 1, draw: 0) == 2.5)
        #expect(configuration.retryDelay(afterFailures: 2, draw: 1) == 10)
        #expect(configuration.retryDelay(afterFailures: 11, draw: 1) == 3_600, "capped at an hour")
        #expect(configuration.retryDelay(afterFailures: 500, draw: 1) == 3_600)
        #expect(configuration.retryDelay(afterFailures: 500, draw: 0.5) == 2_700)
    }

    /// A wrong endpoint stops start-up saying what is wrong, never quoting a secret.
    @Test func aWrongEndpointIsRefusedSayingWhy() throws {
        let good = #""url": "https://hooks.example.com/h", "secrets": ["\#(Self.secret)"]"#
        let cases = [
            (#"{"name": "x"}"#, "expected a JSON array"),
            (#"[{"name": "Back End", \#(good)}]"#, "must be 1 to 64 of a-z"),
            (#"[{"name": "a", "url": "https://h.example.com", "secrets": ["whsec_c2VjcmV0"]}]"#, "its key is 6 bytes"),
            (#"[{"name": "a", "url": "https://h.example.com", "secrets": []}]"#, "needs one secret"),
            (#"[{"name": "a", \#(good), "events": ["user.exploded"]}]"#, "names the event type 'user.exploded'"),
            (#"[{"name": "a", \#(good)}, {"name": "a", \#(good)}]"#, "two webhook endpoints are named a"),
        ]
        for (json, reason) in cases {
            #expect {
                try WebhookEndpoint.list(json: json)
            } throws: { error in
                let text = String(describing: error)
                return text.contains(reason) && !text.contains("c2VjcmV0")
                    && !text.contains(String(Self.secret.dropFirst(6)))
            }
        }
        let endpoints = try WebhookEndpoint.list(json: #"[{"name": "backend-1", \#(good)}]"#)
        #expect(endpoints.first?.events == Set(LifecycleEventType.allCases), "every type when none is named")

        var configuration = WebhookConfiguration()
        for url in ["http://hooks.example.com/h", "https://10.1.2.3/h", "https://user:pw@hooks.example.com/h"] {
            configuration.endpoints = [try WebhookEndpoint(name: "a", url: url, secrets: [Self.secret], events: [])]
            #expect(throws: WebhookEndpointError.self) { try configuration.checkEndpoints() }
        }
    }
}
