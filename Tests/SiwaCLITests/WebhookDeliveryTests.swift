import AccountStore
import AccountStoreSQL
import AppleSignIn
import Crypto
import Foundation
import HTTPTypes
import Logging
import SiwaTesting
import Testing

@testable import SiwaCLI

/// `siwa serve` with a webhook endpoint delivers the lifecycle events that another process writes to its database, to
/// an app backend that verifies them with the Standard Webhooks reference library (PyPI's `standardwebhooks`): signed,
/// in order, with the events feed's ids, retried through the backend's outage.
@Suite("siwa serve delivers webhooks")
struct WebhookDeliveryTests {
    static let python = PythonClientScript.python
    static let receiver = PythonClientScript("webhook_receiver.py")

    let folder = try! TemporaryFolder("siwa-webhooks")

    /// Waits up to 60 s for `check` to hold, every 100 ms.
    private func eventually(_ check: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<600 {
            if try await check() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Waits up to 60 s until `siwa serve` has queued for `endpoint` (a loop of its own: the closure of ``eventually``
    /// that called the store came back true at once, without running, in the debug build of Swift 6.3).
    private func waitUntilSeen(_ endpoint: String, in store: SQLAccountStore) async throws -> Bool {
        for _ in 0..<600 {
            if try await store.webhookEndpoints().contains(where: { $0.name == endpoint }) { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    private func received(_ log: String) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Starts the receiver; its port and its log.
    private func startReceiver(
        _ name: String,
        secret: String,
        failFirst: Int = 0,
        redirectTo: String? = nil
    ) async throws -> (process: ChildProcess, port: String, log: String) {
        let portFile = folder.path + "/\(name).port"
        let log = folder.path + "/\(name).jsonl"
        let process = try ChildProcess(
            try #require(Self.python),
            arguments: [Self.receiver.path, secret, portFile, log, String(failFirst)] + (redirectTo.map { [$0] } ?? []),
            stdout: folder.path + "/\(name).out",
            stderr: folder.path + "/\(name).out"
        )
        guard try await eventually({ FileManager.default.fileExists(atPath: portFile) }) else {
            process.terminate()
            throw ReceiverDidNotStart()
        }
        return (process, try String(contentsOfFile: portFile, encoding: .utf8), log)
    }

    private struct ReceiverDidNotStart: Error {}

    /// Standard Webhooks' headers for `body`, made here as the specification says (not with siwa's own code).
    private static func signed(_ body: [UInt8], secret: String) -> HTTPFields {
        let id = "evt_\(UUID().uuidString)"
        let timestamp = String(Int(Date().timeIntervalSince1970))
        let key = SymmetricKey(data: Data(base64Encoded: String(secret.dropFirst(6)))!)
        let mac = HMAC<SHA256>.authenticationCode(for: Array("\(id).\(timestamp).".utf8) + body, using: key)
        return [
            HTTPField.Name("webhook-id")!: id, HTTPField.Name("webhook-timestamp")!: timestamp,
            HTTPField.Name("webhook-signature")!: "v1," + Data(mac).base64EncodedString(),
            .contentType: "application/json",
        ]
    }

    private static func newSecret() -> String {
        "whsec_" + Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
    }

    /// The transport connects to the address siwa checked, not to whatever the URL's name resolves to, and follows
    /// no redirect: a 302 is the answer, and the place it points to hears nothing.
    @Test(.enabled(if: python != nil, "set SIWA_TEST_PYTHON (scripts/with-python-client does) to run the receiver"))
    func theTransportConnectsToTheCheckedAddressAndFollowsNoRedirect() async throws {
        let secret = Self.newSecret()
        let target = try await startReceiver("target", secret: secret)
        defer { target.process.terminate() }
        let redirecting = try await startReceiver(
            "redirecting",
            secret: secret,
            redirectTo: "http://127.0.0.1:\(target.port)/elsewhere"
        )
        defer { redirecting.process.terminate() }
        let transport = HTTPWebhookTransport()
        let body = Array(#"{"type":"user.deleted"}"#.utf8)
        let headers = Self.signed(body, secret: secret)

        // A name nobody resolves: the request reaches the pinned address all the same.
        let pinned = try await transport.post(
            body,
            headers: headers,
            to: URL(string: "http://hooks.example.invalid:\(target.port)/in")!,
            connectingTo: "127.0.0.1",
            timeout: .seconds(10)
        )
        #expect(pinned == 204)
        #expect(received(target.log).count == 1)
        #expect(received(target.log).first?["verified"] as? Bool == true)

        let redirected = try await transport.post(
            body,
            headers: headers,
            to: URL(string: "http://127.0.0.1:\(redirecting.port)/in")!,
            connectingTo: "127.0.0.1",
            timeout: .seconds(10)
        )
        #expect(redirected == 302)
        #expect(received(redirecting.log).count == 1)
        #expect(received(target.log).count == 1, "the redirect's target heard nothing more")

        #expect(try await transport.addresses(of: "localhost", port: 443).contains("127.0.0.1"))
        await #expect(throws: HTTPWebhookTransport.ResolutionFailed.self) {
            try await transport.addresses(of: "no-such-host.invalid", port: 443)
        }
    }

    /// A receiver that takes the connection and never answers costs one attempt's timeout, not more.
    @Test func aReceiverThatNeverAnswersTimesOut() async throws {
        let port = try freeLoopbackPort()
        let silent = try RawSocketListener(port: port)
        defer { silent.close() }
        let started = ContinuousClock.now
        await #expect(throws: (any Error).self) {
            try await HTTPWebhookTransport().post(
                [],
                headers: [:],
                to: URL(string: "http://127.0.0.1:\(port)/")!,
                connectingTo: "127.0.0.1",
                timeout: .seconds(1)
            )
        }
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    /// Two instances on one PostgreSQL database deliver 40 accounts' events between them, each once: every delivery
    /// was attempted once, and the receiver heard each event id once.
    @Test(
        .enabled(if: python != nil, "set SIWA_TEST_PYTHON (scripts/with-python-client does) to run the receiver"),
        .enabled(if: testPostgresURL != nil, "set SIWA_TEST_POSTGRES_URL (scripts/with-postgres does)")
    )
    func twoInstancesDeliverEachEventOnce() async throws {
        let secret = Self.newSecret()
        let backend = try await startReceiver("shared", secret: secret)
        defer { backend.process.terminate() }
        try await withFreshPostgresDatabase(try #require(testPostgresURL), prefix: "siwa_webhooks_") { url in
            let settings = [
                "SIWA_BUNDLE_IDS": "com.example.app",
                "SIWA_DATABASE_URL": url,
                "SIWA_DATABASE_MAX_CONNECTIONS": "4",
                "SIWA_DATA_KEY": Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString(),
                "SIWA_WEBHOOKS_ENDPOINTS": #"[{"name": "backend", "url": "http://127.0.0.1:"# + backend.port
                    + #"/in", "secrets": [""# + secret + #""], "events": ["user.created"]}]"#,
                "SIWA_WEBHOOKS_ALLOW_LOOPBACK_HTTP": "true",
            ]
            var instances: [(process: ChildProcess, port: Int, log: String)] = []
            defer {
                for instance in instances {
                    instance.process.terminate(signal: SIGTERM)
                    _ = instance.process.waitForExit()
                }
            }
            // The first migrates the new database; the second finds it ready.
            for _ in 0..<2 {
                let instance = try SiwaProcess.startServe(in: folder, settings: settings)
                instances.append(instance)
                try #require(try await SiwaProcess.waitUntilServing(port: instance.port), "\(instance.log)")
            }
            var logger = Logger(label: "test")
            logger.logLevel = .warning
            let store = try await SQLAccountStore.postgres(url: url, logger: logger)
            try await withClosing(store, close: { await $0.shutdown() }) { store in
                try #require(try await waitUntilSeen("backend", in: store))
                for index in 0..<40 {
                    let facts = AppleSignInFacts(
                        appleUserID: AppleUserID("001234.\(UUID().uuidString.lowercased()).\(index)"),
                        clientID: ClientID("com.example.app")
                    )
                    _ = try await store.signIn(facts, now: Date())
                }
                var delivered = 0
                for _ in 0..<600 where delivered < 40 {
                    delivered = try await store.webhookDeliveries(
                        endpoint: "backend",
                        state: .delivered,
                        before: nil,
                        limit: 100
                    ).count
                    if delivered < 40 { try await Task.sleep(for: .milliseconds(100)) }
                }
                try #require(delivered == 40, "delivered: \(delivered), received: \(received(backend.log).count)")
                let deliveries = try await store.webhookDeliveries(
                    endpoint: "backend",
                    state: nil,
                    before: nil,
                    limit: 100
                )
                #expect(deliveries.count == 40 && deliveries.allSatisfy { $0.attempts == 1 }, "none attempted twice")
                let ids = received(backend.log).compactMap { $0["webhook_id"] as? String }
                #expect(ids.count == 40 && Set(ids).count == 40, "each event heard once: \(ids.count)")
                #expect(Set(ids) == Set(deliveries.map(\.event.id.lowercasedText)))
            }
        }
    }

    @Test(.enabled(if: python != nil, "set SIWA_TEST_PYTHON (scripts/with-python-client does) to run the receiver"))
    func eventsArriveSignedInOrderThroughAnOutage() async throws {
        let secret = "whsec_" + Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let portFile = folder.path + "/receiver.port"
        let log = folder.path + "/received.jsonl"
        let backend = try ChildProcess(
            try #require(Self.python),
            arguments: [Self.receiver.path, secret, portFile, log, "1"],
            stdout: folder.path + "/receiver.out",
            stderr: folder.path + "/receiver.out"
        )
        defer { backend.terminate() }
        try #require(try await eventually { FileManager.default.fileExists(atPath: portFile) }, "no receiver")
        let port = try String(contentsOfFile: portFile, encoding: .utf8)

        let database = folder.path + "/siwa.sqlite"
        let endpoints =
            #"[{"name": "backend", "url": "http://127.0.0.1:"#
            + port + #"/siwa-events?token=kept-out-of-logs", "secrets": [""# + secret
            + #""], "events": ["user.created", "user.disabled", "user.deleted"]}]"#
        let settings = [
            "SIWA_BUNDLE_IDS": "com.example.app",
            "SIWA_DATABASE_PATH": database,
            "SIWA_DATA_KEY_FILE": folder.path + "/siwa-data.key",
            "SIWA_WEBHOOKS_ENDPOINTS": endpoints,
            "SIWA_WEBHOOKS_ALLOW_LOOPBACK_HTTP": "true",
        ]
        let (server, _, serveLog) = try SiwaProcess.startServe(
            in: folder,
            settings: settings.merging(["SIWA_LOG_LEVEL": "debug"]) { $1 }
        )
        defer { server.terminate(signal: SIGTERM) }

        try await withSQLiteStore(at: database) { store in
            // The endpoint hears what happens once siwa has seen it: wait for that before anything happens.
            let seen = try await waitUntilSeen("backend", in: store)
            try #require(seen, "siwa serve never queued for the endpoint: \(serveLog)")
            let facts = AppleSignInFacts(
                appleUserID: AppleUserID("001234.\(UUID().uuidString.lowercased()).1234"),
                clientID: ClientID("com.example.app"),
                email: "ada@example.com",
                emailVerified: true,
                givenName: "Ada"
            )
            let user = try await store.signIn(facts, now: Date()).user
            let token = RefreshTokenRecord(
                hash: Array(repeating: 7, count: 32),
                sessionID: SessionID(),
                userID: user.id,
                issuedAt: Date(),
                expiresAt: Date().addingTimeInterval(3_600)
            )
            try await store.createSession(firstToken: token, now: Date())
            _ = try await store.disableUser(id: user.id, by: .operator, now: Date())

            let delivered = try await eventually {
                received(log).filter { $0["status"] as? Int == 204 }.count >= 2
            }
            let entries = received(log)
            try #require(delivered, "received: \(entries)")
            #expect(entries.allSatisfy { $0["verified"] as? Bool == true }, "\(entries)")
            #expect(entries.allSatisfy { $0["content_type"] as? String == "application/json" })
            #expect(entries.first?["status"] as? Int == 503, "the backend's outage")
            let types = entries.compactMap { ($0["payload"] as? [String: Any])?["type"] as? String }
            #expect(
                types == ["user.created", "user.created", "user.disabled"],
                "the failed first event is retried before the account's next one; session.ended is not subscribed"
            )
            let feed = try await store.lifecycleEvents(after: nil, limit: 10)
            let created = try #require(feed.first { $0.type == .userCreated })
            let disabled = try #require(feed.first { $0.type == .userDisabled })
            #expect(
                entries.map { $0["webhook_id"] as? String }
                    == [created.id.lowercasedText, created.id.lowercasedText, disabled.id.lowercasedText],
                "webhook-id is the event's id in the feed, the same on a retry"
            )
            let payload = try #require(entries.last?["payload"] as? [String: Any])
            #expect((payload["data"] as? [String: Any])?["user_id"] as? String == user.id.description)
            #expect(payload["sequence"] as? Int == Int(disabled.sequence))

            let deliveries = try await store.webhookDeliveries(endpoint: "backend", state: nil, before: nil, limit: 10)
            #expect(deliveries.map(\.state) == [.delivered, .delivered])
            #expect(deliveries.map(\.attempts) == [1, 2])

            // The operator's view, and a redelivery of the first event: it goes out again, with its id.
            let listed = try await SiwaProcess.run(
                ["webhooks", "list", "--deliveries", "5", "--json"],
                environment: settings
            )
            #expect(listed.status == 0, "\(listed.stderr)")
            let answer = try #require(
                try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any],
                "\(listed.stdout)"
            )
            let endpoint = try #require((answer["endpoints"] as? [[String: Any]])?.first)
            #expect(endpoint["name"] as? String == "backend" && endpoint["pending"] as? Int == 0)
            #expect(endpoint["url"] as? String == "http://127.0.0.1:\(port)/siwa-events", "never the query")
            #expect((endpoint["deliveries"] as? [[String: Any]])?.count == 2)
            #expect(!listed.stdout.contains(String(secret.dropFirst(6))) && !listed.stdout.contains("kept-out"))
            let first = try #require(deliveries.last)
            let redelivered = try await SiwaProcess.run(
                ["webhooks", "redeliver", first.id.uuidString],
                environment: settings
            )
            #expect(redelivered.status == 0, "\(redelivered.stderr)")
            #expect(try await eventually { received(log).count >= 4 }, "\(received(log))")
            #expect(received(log).last?["webhook_id"] as? String == created.id.lowercasedText)
            let unknown = try await SiwaProcess.run(["webhooks", "enable", "nobody"], environment: settings)
            #expect(unknown.status == 1 && unknown.stderr.contains("named 'nobody'"), "\(unknown.stderr)")
        }
        let lines = (try? String(contentsOfFile: serveLog, encoding: .utf8)) ?? ""
        #expect(lines.contains("a webhook attempt failed; it is retried"), "\(lines)")
        #expect(!lines.contains("kept-out-of-logs") && !lines.contains(String(secret.dropFirst(6))))
    }
}
