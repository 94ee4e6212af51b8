import AppleIDEmulator
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SiwaTesting
import Synchronization
import Testing

@testable import SiwaCLI

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Tracing, end to end: the real `siwa serve` (tracing is bootstrapped once per process) sends its spans over OTLP/HTTP
/// to a receiver of the test's own, with the emulator playing Apple in this process, recording what siwa sends it.
@Suite("Tracing")
struct TracingTests {
    /// Behind a trusted proxy (here the test itself, on 127.0.0.1), the caller's trace context is the request's parent.
    @Test func aNativeSignInIsOneTraceUnderTheCallersSpan() async throws {
        let callerTrace = Self.randomHex(bytes: 16)
        let callerSpan = Self.randomHex(bytes: 8)
        let run = try await signInWithTracing(
            traceparent: "00-\(callerTrace)-\(callerSpan)-01",
            settings: ["SIWA_TRUSTED_PROXIES": "127.0.0.1"]
        )
        let trace = run.spans.filter { $0.traceID == callerTrace }

        // The request's span is the caller's span's child, named by its route, with the http attributes.
        let request = try #require(
            trace.first { $0.name == "POST /auth/apple/native" },
            "spans: \(run.spans.map(\.name))"
        )
        #expect(request.parentSpanID == callerSpan)
        #expect(request.kind == 2, "a server span")
        #expect(request.attributes["http.request.method"] == "POST")
        #expect(request.attributes["http.route"] == "/auth/apple/native")
        #expect(request.attributes["http.response.status_code"] == "200")
        #expect(request.attributes["siwa.request_id"]?.isEmpty == false)
        #expect(request.serviceName == "siwa-tracing-test")

        // Its stages are its descendants, in the same trace: the identity token's verification with the key set it
        // fetched, the store, and Apple's token endpoint.
        let byID = Dictionary(trace.map { ($0.spanID, $0) }, uniquingKeysWith: { first, _ in first })
        func isInsideRequest(_ span: ExportedSpan) -> Bool {
            var parent = span.parentSpanID
            while let next = byID[parent] {
                if next.spanID == request.spanID { return true }
                parent = next.parentSpanID
            }
            return false
        }
        let stages = trace.filter(isInsideRequest)
        let verification = try #require(stages.first { $0.name == "verify identity token" }, "\(stages.map(\.name))")
        // A fetch that the emulator, in this busy process, answered too late is retried, each attempt a span of its
        // own: the one that answered is the key set the token was verified with.
        let keyFetches = stages.filter { $0.name == "GET /auth/keys" }
        let keys = try #require(
            keyFetches.first { $0.attributes["http.response.status_code"] == "200" },
            "\(stages.map(\.name))"
        )
        #expect(
            keyFetches.allSatisfy { $0.parentSpanID == verification.spanID && $0.kind == 3 },
            "the key set was fetched to verify the token"
        )
        let store = stages.filter { $0.name.hasPrefix("store ") }
        #expect(store.contains { $0.name == "store signIn" && $0.attributes["db.operation.name"] == "signIn" })
        let exchange = try #require(stages.first { $0.name == "POST /auth/token" }, "\(stages.map(\.name))")
        #expect(exchange.kind == 3 && exchange.attributes["http.response.status_code"] == "200")

        // Apple was told the trace: each call carried the traceparent of its own span.
        #expect(run.appleSaw["/auth/token"] == ["00-\(callerTrace)-\(exchange.spanID)-01"])
        let attempts = Set(keyFetches.map { "00-\(callerTrace)-\($0.spanID)-01" })
        let sawKeys = run.appleSaw["/auth/keys"] ?? []
        #expect(sawKeys.contains("00-\(callerTrace)-\(keys.spanID)-01"), "\(sawKeys)")
        #expect(sawKeys.allSatisfy(attempts.contains), "every fetch Apple saw is one of the sign-in's: \(sawKeys)")

        // No span carries a credential or an e-mail address, in its name or any attribute.
        for span in run.spans {
            for text in [span.name] + span.attributes.keys + span.attributes.values {
                for secret in run.secrets {
                    #expect(!text.contains(secret), "span \(span.name) carries a credential: \(text)")
                }
                #expect(!text.contains("eyJ"), "span \(span.name) carries a JWT: \(text)")
            }
        }
    }

    /// From a client that is no trusted proxy, a `traceparent` is not read: it neither chooses the trace id of siwa's
    /// spans nor forces its request to be traced past the sampling ratio.
    @Test func aClientsTraceContextIsNotTakenFromAnUntrustedPeer() async throws {
        let callerTrace = Self.randomHex(bytes: 16)
        let traceparent = "00-\(callerTrace)-\(Self.randomHex(bytes: 8))-01"
        let traced = try await signInWithTracing(traceparent: traceparent)
        let request = try #require(traced.spans.first { $0.name == "POST /auth/apple/native" })
        #expect(request.parentSpanID.isEmpty, "siwa's own trace")
        #expect(!traced.spans.contains { $0.traceID == callerTrace }, "no span in the client's chosen trace")
        let unsampled = try await signInWithTracing(
            traceparent: traceparent,
            settings: ["SIWA_TRACING_SAMPLE_RATIO": "0"]
        )
        #expect(
            !unsampled.spans.contains { $0.name == "POST /auth/apple/native" },
            "a sampled traceparent forced the request to be traced: \(unsampled.spans.map(\.name))"
        )
    }

    @Test func withoutACallerTheRequestStartsTheTrace() async throws {
        let code = Self.randomHex(bytes: 8)
        let run = try await signInWithTracing(
            traceparent: nil,
            thenGetting: ["/healthz", "/readyz", "/no/such/route/\(code)?code=\(code)"]
        )
        let request = try #require(run.spans.first { $0.name == "POST /auth/apple/native" })
        #expect(request.parentSpanID.isEmpty)
        let token = try #require(run.spans.first { $0.name == "POST /auth/token" })
        #expect(token.traceID == request.traceID)
        #expect(run.appleSaw["/auth/token"] == ["00-\(request.traceID)-\(token.spanID)-01"])

        // A route the router does not know is named by its method alone: its path is the client's to choose.
        let unmatched = try #require(run.spans.first { $0.attributes["http.route"] == "unmatched" })
        #expect(unmatched.name == "GET" && unmatched.attributes["http.response.status_code"] == "404")
        for span in run.spans {
            #expect(!([span.name] + span.attributes.values).contains { $0.contains(code) }, "\(span.name)")
        }
        // The health probes, and the background services' store calls, start no traces of their own.
        #expect(!run.spans.contains { $0.name.contains("/healthz") || $0.name.contains("/readyz") })
        #expect(run.spans.allSatisfy { !$0.name.hasPrefix("store ") || !$0.parentSpanID.isEmpty })
    }

    @Test func theSettingsAreCheckedNamingTheirVariable() throws {
        func load(_ environment: [String: String]) throws -> TracingSettings? {
            try ServerSettings.load(
                from: ["SIWA_BUNDLE_IDS": "com.example.app", "SIWA_DATA_KEY": Self.dataKey].merging(environment) {
                    $1
                },
                createsDataKey: false
            ).tracing
        }
        #expect(try load([:]) == nil, "off by default")
        #expect(
            try load(["SIWA_TRACING_SERVICE_NAME": "auth"]) == nil,
            "the endpoint turns it on; the others may stay while it is off"
        )
        #expect(
            try load(["SIWA_TRACING_ENDPOINT": "http://127.0.0.1:4318"])
                == TracingSettings(endpoint: "http://127.0.0.1:4318/v1/traces")
        )
        #expect(
            try load([
                "SIWA_TRACING_ENDPOINT": "https://collector.example.com/otlp/v1/traces",
                "SIWA_TRACING_SERVICE_NAME": "auth", "SIWA_TRACING_SAMPLE_RATIO": "0.25",
            ])
                == TracingSettings(
                    endpoint: "https://collector.example.com/otlp/v1/traces",
                    serviceName: "auth",
                    sampleRatio: 0.25
                )
        )
        for (variable, value) in [
            ("SIWA_TRACING_ENDPOINT", "collector:4318"), ("SIWA_TRACING_ENDPOINT", "ftp://collector"),
            ("SIWA_TRACING_ENDPOINT", "https://user:secret@collector/v1/traces"),
            ("SIWA_TRACING_SAMPLE_RATIO", "1.5"), ("SIWA_TRACING_SERVICE_NAME", String(repeating: "s", count: 129)),
        ] {
            var environment = ["SIWA_TRACING_ENDPOINT": "http://127.0.0.1:4318"]
            environment[variable] = value
            let problem = #expect(throws: ServerSettings.Problem.self) { try load(environment) }
            #expect(problem?.variable == variable, "\(variable)=\(value)")
            #expect(problem?.description.contains("secret") == false, "the problem never repeats a password")
        }
    }

    // MARK: Helpers

    /// What one traced sign-in left: every span siwa exported, what Apple's endpoints received as `traceparent` by
    /// path, and the credentials and e-mail address that no span may carry.
    private struct TracedSignIn {
        var spans: [ExportedSpan]
        var appleSaw: [String: [String]]
        var secrets: [String]
    }

    private static let dataKey = Data(repeating: 7, count: 32).base64EncodedString()

    /// Runs `siwa serve` with tracing to this test's OTLP/HTTP receiver and Apple played by the emulator here, signs a
    /// new user in natively (with `traceparent` when given), gets `paths`, then stops the server, which sends its last
    /// spans as it stops, so that the test waits for no timer.
    private func signInWithTracing(
        traceparent: String?,
        settings extra: [String: String] = [:],
        thenGetting paths: [String] = []
    ) async throws -> TracedSignIn {
        let teamKey = P256.Signing.PrivateKey()
        var configuration = EmulatorConfiguration.demo(key: teamKey)
        configuration.allowLocalRedirectURIs = true
        let emulator = try await AppleIDEmulator(configuration: configuration, delivery: nil)
        let appleSaw = Mutex<[String: [String]]>([:])
        let exports = Mutex<[[UInt8]]>([])
        let apple = Application(
            responder: RecordingResponder(base: emulator.router().buildResponder()) { request in
                appleSaw.withLock { $0[request.uri.path, default: []].append(request.headers[.traceparent] ?? "") }
            }
        )
        let secrets = Mutex<[String]>([])
        try await apple.test(.live) { appleClient in
            let applePort = try #require(appleClient.port)
            let receiver = Router()
            receiver.post("/v1/traces") { request, _ -> Response in
                let body = try await request.body.collect(upTo: 4 << 20)
                exports.withLock { $0.append(Array(buffer: body)) }
                return Response(status: .ok, headers: [.contentType: "application/x-protobuf"])
            }
            try await Application(router: receiver).test(.live) { receiverClient in
                let receiverPort = try #require(receiverClient.port)
                try await withTemporaryFolder("siwa-tracing") { folder in
                    let keyFile = try folder.write("AuthKey_DEMOKEY001.p8", teamKey.pemRepresentation)
                    let (server, port, log) = try SiwaProcess.startServe(
                        in: folder,
                        settings: [
                            "SIWA_APPLE_BASE_URL": "http://127.0.0.1:\(applePort)",
                            "SIWA_TEAM_ID": EmulatorConfiguration.demoTeamID,
                            "SIWA_KEY_ID": EmulatorConfiguration.demoKeyID, "SIWA_PRIVATE_KEY_FILE": keyFile,
                            "SIWA_BUNDLE_IDS": EmulatorConfiguration.demoBundleID,
                            "SIWA_DATABASE_PATH": folder.url.appendingPathComponent("siwa.sqlite").path,
                            "SIWA_DATA_KEY": Self.dataKey,
                            "SIWA_TRACING_ENDPOINT": "http://127.0.0.1:\(receiverPort)",
                            "SIWA_TRACING_SERVICE_NAME": "siwa-tracing-test",
                        ].merging(extra) { $1 }
                    )
                    defer { server.terminate() }
                    try #require(
                        try await SiwaProcess.waitUntilServing(port: port),
                        "siwa serve did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")"
                    )
                    let email = "traced-\(UUID().uuidString.prefix(8))@example.com"
                    let credential = try await Self.post(
                        "http://127.0.0.1:\(applePort)/emulator/native-sign-in",
                        ["clientId": EmulatorConfiguration.demoBundleID, "email": email, "givenName": "Tracy"]
                    )
                    let identityToken = try #require(credential["identityToken"] as? String, "\(credential)")
                    let code = try #require(credential["authorizationCode"] as? String, "\(credential)")
                    let signedIn = try await Self.post(
                        "http://127.0.0.1:\(port)/auth/apple/native",
                        ["identityToken": identityToken, "authorizationCode": code],
                        traceparent: traceparent
                    )
                    let accessToken = try #require(signedIn["accessToken"] as? String, "\(signedIn)")
                    let refreshToken = try #require(signedIn["refreshToken"] as? String, "\(signedIn)")
                    secrets.withLock { $0 = [identityToken, code, email, accessToken, refreshToken] }
                    for path in paths {
                        _ = try await URLSession.shared.data(
                            from: try #require(URL(string: "http://127.0.0.1:\(port)\(path)"))
                        )
                    }
                    // SIGTERM: the server stops first, then the exporter, which sends what it still holds.
                    kill(server.pid, SIGTERM)
                    let status = try await offCooperativePool { server.waitForExit() }
                    #expect(status == 0, "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
                }
            }
        }
        return TracedSignIn(
            spans: try exports.withLock { $0 }.flatMap { try ExportedSpan.spans(inExport: $0) },
            appleSaw: appleSaw.withLock { $0 },
            secrets: secrets.withLock { $0 }
        )
    }

    /// One JSON `POST`; the object answered, which must be a success.
    private static func post(
        _ url: String,
        _ json: [String: String],
        traceparent: String? = nil
    ) async throws -> [String: Any] {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = "POST"
        request.httpBody = try JSONSerialization.data(withJSONObject: json)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let traceparent { request.setValue(traceparent, forHTTPHeaderField: "traceparent") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let body = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
        try #require((response as? HTTPURLResponse)?.statusCode == 200, "\(url): \(body)")
        return body
    }

    private static func randomHex(bytes: Int) -> String {
        (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}

/// Tells `record` of every request before `base` answers it: what the emulator, playing Apple, received.
private struct RecordingResponder<Base: HTTPResponder>: HTTPResponder {
    let base: Base
    let record: @Sendable (Request) -> Void

    func respond(to request: Request, context: Base.Context) async throws -> Response {
        record(request)
        return try await base.respond(to: request, context: context)
    }
}

extension HTTPField.Name {
    fileprivate static let traceparent = HTTPField.Name("traceparent")!
}
