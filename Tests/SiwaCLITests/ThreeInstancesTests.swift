import AccountStore
import AccountStoreSQL
import Foundation
import Logging
import PostgresNIO
import SiwaTesting
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Three `siwa serve` processes on one PostgreSQL database behind Debian's nginx (round robin), as a team runs them to
/// survive a peak: the limits an operator configures hold for the deployment, not for each instance; an ending on one
/// instance is honoured by the others as it commits; and losing an instance loses no answered sign-in. Clients connect
/// from several loopback addresses, which nginx passes on in `X-Forwarded-For` (`docs/deployment/nginx-proxy.conf`).
@Suite(
    "Three instances behind nginx",
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"] != nil
            && ProcessInfo.processInfo.environment["SIWA_TEST_NGINX"] != nil,
        "needs SIWA_TEST_POSTGRES_URL and SIWA_TEST_NGINX: run through scripts/test"
    )
)
struct ThreeInstancesTests {
    /// A client's rate limit, paced above the rate for a few seconds so that every instance's own bucket would have
    /// admitted everything: the deployment admits what one bucket admits (its burst, then its rate), within 10%.
    @Test func oneClientsRateLimitHoldsForTheDeployment() async throws {
        let rate = 5.0
        let burst = 10.0
        try await withDeployment(["SIWA_RATE_LIMIT": "5", "SIWA_RATE_BURST": "10"]) { deployment in
            var admitted = 0
            var statuses: [Int: Int] = [:]
            let clock = ContinuousClock()
            let start = clock.now
            var last = start
            let sent = 50
            for index in 0..<sent {
                if index > 0 { try await Task.sleep(until: start + .milliseconds(100 * index)) }
                last = clock.now
                let answer = try await deployment.call(
                    "POST",
                    "/auth/refresh",
                    json: ["refreshToken": "not-a-refresh-token"],
                    from: "127.0.0.2"
                )
                statuses[answer.status, default: 0] += 1
                if answer.status != 429 { admitted += 1 }
            }
            let elapsed =
                Double((last - start).components.seconds) + Double((last - start).components.attoseconds) / 1e18
            // One bucket admits its burst and then its rate; when the machine was too slow to send faster than the
            // rate, everything.
            let expected = min(Double(sent), burst + rate * elapsed)
            print(
                "ThreeInstancesTests: one client admitted \(admitted) of \(sent) in \(elapsed) s; one bucket: \(expected)"
            )
            #expect(statuses[401, default: 0] > 0, "the admitted requests reached siwa: \(statuses)")
            #expect(
                Double(admitted) <= expected * 1.1 + 1,
                "admitted \(admitted) of \(sent) in \(elapsed) s; one bucket admits \(expected): \(statuses)"
            )
            #expect(
                Double(admitted) >= expected * 0.9 - 1,
                "admitted \(admitted) of \(sent) in \(elapsed) s; one bucket admits \(expected): \(statuses)"
            )
        }
    }

    /// One identity token presented four times, round robin over the three instances: it opens the configured number
    /// of sessions in all, not that many on each instance.
    @Test func anIdentityTokenOpensAtMostTheBoundAcrossInstances() async throws {
        try await withDeployment(["SIWA_MAX_SESSIONS_PER_IDENTITY_TOKEN": "3"]) { deployment in
            let credential = try await deployment.appleCredential("replayed@example.com")
            var statuses: [Int] = []
            var errors: [String] = []
            for _ in 0..<4 {
                let answer = try await deployment.call(
                    "POST",
                    "/auth/apple/native",
                    json: ["identityToken": credential.identityToken],
                    from: "127.0.0.3"
                )
                statuses.append(answer.status)
                if let error = answer.body["error"] as? String { errors.append(error) }
            }
            #expect(statuses == [200, 200, 200, 401], "\(statuses) \(errors)")
            #expect(errors == ["identity_token_replayed"])
            // Round robin: the sign-ins were answered by more than one instance.
            #expect(try deployment.instancesThatServed("/auth/apple/native") >= 2)
        }
    }

    /// A session ended on instance 1 (a logout, then an operator's `siwa users disable` from a process of its own) is
    /// refused by instances 2 and 3. Their poll of the database is set to ten minutes, so only the announcement can
    /// have told them; the time each took is printed.
    @Test func anEndingOnOneInstanceIsRefusedByTheOthers() async throws {
        try await withDeployment(["SIWA_DATABASE_POLL_INTERVAL": "600"]) { deployment in
            var delays: [Duration] = []
            for index in 0..<5 {
                let signedIn = try await deployment.signIn("ending-\(index)@example.com", at: 0)
                for other in [1, 2] {
                    let before = try await deployment.call("GET", "/api/me", bearer: signedIn.accessToken, at: other)
                    #expect(before.status == 200, "the session works on instance \(other + 1) before the ending")
                }
                let logout = try await deployment.call("POST", "/auth/logout", bearer: signedIn.accessToken, at: 0)
                #expect(logout.status == 200 || logout.status == 204, "\(logout)")
                let ended = ContinuousClock.now
                for other in [1, 2] {
                    let refused = try await deployment.firstRefusal(of: signedIn.accessToken, at: other)
                    #expect(refused != nil, "instance \(other + 1) still accepts the ended session after 60 s")
                    if let refused { delays.append(refused - ended) }
                }
            }

            let disabled = try await deployment.signIn("disabled@example.com", at: 0)
            let disable = try await deployment.siwa(["users", "disable", "disabled@example.com"])
            #expect(disable.status == 0, "\(disable.stdout) \(disable.stderr)")
            let ended = ContinuousClock.now
            for instance in [0, 1, 2] {
                let refused = try await deployment.firstRefusal(of: disabled.accessToken, at: instance)
                #expect(refused != nil, "instance \(instance + 1) still accepts the disabled account's session")
                if let refused { delays.append(refused - ended) }
            }
            print("ThreeInstancesTests: endings refused by the other instances after \(delays.sorted())")
        }
    }

    /// Distinct users sign in through nginx from six clients at once while instance 2 is killed (SIGKILL): every
    /// sign-in that was answered 200 has its account, only requests in flight on the killed instance fail, and the
    /// two others go on serving.
    @Test func killingAnInstanceUnderLoadLosesNoAnsweredSignIn() async throws {
        try await withDeployment(["SIWA_RATE_LIMIT": "0"]) { deployment in
            let workers = 6
            let perWorker = 15
            let answered = Counter()
            let results = try await withThrowingTaskGroup(of: [(email: String, status: Int)].self) { group in
                for worker in 0..<workers {
                    group.addTask {
                        var results: [(email: String, status: Int)] = []
                        for index in 0..<perWorker {
                            let email = "load-\(worker)-\(index)@example.com"
                            let credential = try await deployment.appleCredential(email)
                            let answer = try await deployment.call(
                                "POST",
                                "/auth/apple/native",
                                json: ["identityToken": credential.identityToken],
                                from: "127.0.1.\(worker + 1)"
                            )
                            results.append((email, answer.status))
                            answered.increment()
                        }
                        return results
                    }
                }
                group.addTask {
                    while answered.value < workers * perWorker / 3 { try await Task.sleep(for: .milliseconds(20)) }
                    deployment.kill(instance: 1)
                    return []
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            let failures = results.filter { $0.status != 200 }
            print(
                "ThreeInstancesTests: \(results.count) sign-ins while instance 2 was killed, "
                    + "\(failures.count) not answered 200: \(failures.map(\.status))"
            )
            #expect(
                failures.allSatisfy { $0.status == 502 || $0.status == 504 },
                "only nginx's answers for the killed instance: \(failures)"
            )
            #expect(failures.count <= workers, "at most the requests in flight on the killed instance: \(failures)")

            let store = try await SQLAccountStore.postgres(url: deployment.databaseURL, logger: Logger(label: "test"))
            var missing: [String] = []
            for result in results where result.status == 200 {
                if try await store.users(email: result.email).isEmpty { missing.append(result.email) }
            }
            await store.shutdown()
            #expect(missing.isEmpty, "answered 200 without an account: \(missing)")

            for index in 0..<6 {
                let after = try await deployment.signIn("after-\(index)@example.com")
                #expect(!after.accessToken.isEmpty)
            }
        }
    }

    // MARK: - The deployment

    private func withDeployment(_ extra: [String: String], _ body: (Deployment) async throws -> Void) async throws {
        let postgres = try #require(ProcessInfo.processInfo.environment["SIWA_TEST_POSTGRES_URL"])
        let nginx = try #require(ProcessInfo.processInfo.environment["SIWA_TEST_NGINX"])
        try await withTemporaryFolder("siwa-three") { folder in
            let (emulator, emulatorPort) = try await SiwaProcess.startEmulator(in: folder.url)
            defer { SiwaProcess.stopEmulator(emulator) }
            try await withFreshPostgresDatabase(postgres, prefix: "siwa_three_") { databaseURL in
                var settings = [
                    "SIWA_APPLE_BASE_URL": "http://127.0.0.1:\(emulatorPort)",
                    "SIWA_TEAM_ID": "DEMOTEAM01",
                    "SIWA_KEY_ID": "DEMOKEY001",
                    "SIWA_PRIVATE_KEY_FILE": folder.url.appendingPathComponent(
                        "siwa-emulator/AuthKey_DEMOKEY001.p8"
                    ).path,
                    "SIWA_BUNDLE_IDS": "com.example.siwa.demo",
                    "SIWA_DATABASE_URL": databaseURL,
                    "SIWA_DATABASE_MAX_CONNECTIONS": "4",
                    "SIWA_DATA_KEY": Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString(),
                    "SIWA_TRUSTED_PROXIES": "127.0.0.1",
                    "SIWA_LOG_LEVEL": "info",
                ]
                settings.merge(extra) { $1 }
                var instances: [(process: ChildProcess, port: Int, log: String)] = []
                defer {
                    for instance in instances {
                        instance.process.terminate(signal: SIGTERM)
                        _ = instance.process.waitForExit()
                    }
                }
                // The first migrates the new database; the others find it ready.
                for _ in 0..<3 {
                    let instance = try SiwaProcess.startServe(in: folder, settings: settings)
                    instances.append(instance)
                    let log = { (try? String(contentsOfFile: instance.log, encoding: .utf8)) ?? "" }
                    try #require(try await SiwaProcess.waitUntilServing(port: instance.port), "\(log())")
                }
                let port = try freeLoopbackPort(in: 10_000..<20_000)
                let proxySettings = DeploymentTests.root.appendingPathComponent("docs/deployment/nginx-proxy.conf")
                let upstreams = instances.map { "server 127.0.0.1:\($0.port) max_fails=1 fail_timeout=30s;" }
                let servers = """
                    upstream siwa { \(upstreams.joined(separator: " ")) keepalive 16; keepalive_timeout 20s; }
                    server {
                        listen 127.0.0.1:\(port);
                        location / {
                            proxy_pass http://siwa;
                            include \(proxySettings.path);
                        }
                    }
                    """
                try await withNginx(nginx, servers: servers, port: port) {
                    try await body(
                        Deployment(
                            folder: folder,
                            settings: settings,
                            emulatorPort: emulatorPort,
                            nginxPort: port,
                            instances: instances,
                            databaseURL: databaseURL
                        )
                    )
                }
            }
        }
    }
}

/// The three instances, nginx in front of them and the emulator playing Apple.
private struct Deployment: Sendable {
    let folder: TemporaryFolder
    let settings: [String: String]
    let emulatorPort: Int
    let nginxPort: Int
    let instances: [(process: ChildProcess, port: Int, log: String)]
    let databaseURL: String

    /// A native sign-in's credential from the emulator.
    func appleCredential(_ email: String) async throws -> (identityToken: String, authorizationCode: String) {
        let connection = try RawSocketConnection(port: emulatorPort)
        let body = try JSONSerialization.data(withJSONObject: ["clientId": "com.example.siwa.demo", "email": email])
        let answer = try await Self.exchange(
            connection,
            "POST",
            "/emulator/native-sign-in",
            host: "127.0.0.1:\(emulatorPort)",
            body: body
        )
        try #require(answer.status == 200, "the emulator: \(answer)")
        return (
            try #require(answer.body["identityToken"] as? String),
            try #require(answer.body["authorizationCode"] as? String)
        )
    }

    /// Signs `email` in, through nginx or at one instance (0-based).
    func signIn(_ email: String, at instance: Int? = nil) async throws -> (accessToken: String, refreshToken: String) {
        let credential = try await appleCredential(email)
        let answer = try await call(
            "POST",
            "/auth/apple/native",
            json: ["identityToken": credential.identityToken, "authorizationCode": credential.authorizationCode],
            at: instance
        )
        try #require(answer.status == 200, "\(answer)")
        return (
            try #require(answer.body["accessToken"] as? String),
            try #require(answer.body["refreshToken"] as? String)
        )
    }

    /// One request through nginx (`instance` nil) or to one instance, from `source` (an address of 127.0.0.0/8).
    func call(
        _ method: String,
        _ path: String,
        json: [String: Any]? = nil,
        bearer: String? = nil,
        at instance: Int? = nil,
        from source: String = "127.0.0.1"
    ) async throws -> (status: Int, body: [String: Any]) {
        let port = instance.map { instances[$0].port } ?? nginxPort
        let connection = try RawSocketConnection(port: port, from: source)
        let body = try json.map { try JSONSerialization.data(withJSONObject: $0) }
        return try await Self.exchange(connection, method, path, body: body, bearer: bearer)
    }

    /// When `accessToken` was first refused by `instance` (401 or 403), asked every 5 ms; `nil` after 60 s.
    func firstRefusal(of accessToken: String, at instance: Int) async throws -> ContinuousClock.Instant? {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let answer = try await call("GET", "/api/me", bearer: accessToken, at: instance)
            if answer.status == 401 || answer.status == 403 { return ContinuousClock.now }
            try await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    /// Runs a `siwa` operator command on the deployment's database, as an operator on another host would.
    func siwa(_ arguments: [String]) async throws -> SiwaProcess.Result {
        try await SiwaProcess.run(arguments, environment: settings, directory: folder.url)
    }

    /// Kills instance `index` (0-based) at once, as a crash or an OOM kill would.
    func kill(instance index: Int) {
        instances[index].process.terminate(signal: SIGKILL)
        _ = instances[index].process.waitForExit()
    }

    /// How many instances logged an access line for `route`.
    func instancesThatServed(_ route: String) throws -> Int {
        try instances.filter { instance in
            try String(contentsOfFile: instance.log, encoding: .utf8).split(separator: "\n").contains {
                $0.contains("route=\(route)") || $0.contains("\"route\":\"\(route)\"")
            }
        }.count
    }

    private static func exchange(
        _ connection: RawSocketConnection,
        _ method: String,
        _ path: String,
        host: String = "auth.example.com",
        body: Data? = nil,
        bearer: String? = nil
    ) async throws -> (status: Int, body: [String: Any]) {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n"
        if let bearer { head += "Authorization: Bearer \(bearer)\r\n" }
        if body != nil { head += "Content-Type: application/json\r\n" }
        head += "Content-Length: \(body?.count ?? 0)\r\n\r\n"
        connection.send(Array(head.utf8) + Array(body ?? Data()))
        let response = try #require(
            try await connection.readResponse(timeout: .seconds(60)),
            "no answer to \(method) \(path) within 60 s"
        )
        let json = (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:]
        return (response.status, json)
    }
}

/// A count several tasks add to.
private final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
}
