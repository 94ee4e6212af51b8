import AccountStore
import Foundation
import HTTPTypes
import Testing

/// While the database cannot be reached (a restart, a fail-over), every route answers 503 with `Retry-After`, in its own
/// contract's shape, never a 500; `/readyz` says not ready; and all is well again once it is back. The PostgreSQL run
/// (`Benchmarks/load/pg-restart.sh`) restarts a real server under load; this test switches the store off.
@Suite("Server: database outage")
struct DatabaseOutageTests {
    @Test func whileTheDatabaseIsDownEveryRouteAnswers503WithRetryAfter() async throws {
        let store = InMemoryAccountStore()
        try await ServerHarness.run(store: store, configuration: CompatibilityTests.configuration()) { harness in
            let credential = try await harness.appleCredential("outage@example.com")
            let token = try #require(credential["identityToken"] as? String)
            await store.setUnavailable(true)

            let native = try await harness.call(.post, "/auth/apple/native", json: ["identityToken": token])
            #expect(native.status == .serviceUnavailable)
            #expect(native.json["error"] as? String == "database_unavailable")
            #expect(native.headers[.retryAfter] == "2")

            let nonce = try await harness.call(.post, "/auth/apple/nonce")
            #expect(nonce.status == .serviceUnavailable)
            #expect(nonce.headers[.retryAfter] == "2")

            let vapor = try await CompatibilityTests.send(
                harness,
                .post,
                "/api/auth/siwa",
                body: #"{"appleIdentityToken":"\#(token)"}"#
            )
            #expect(vapor.status == .serviceUnavailable, "\(vapor.text)")
            #expect(vapor.headers[.retryAfter] == "2")

            let serviceStack = try await CompatibilityTests.send(
                harness,
                .post,
                "/auth/apple",
                body: #"{"provider":"apple","accessToken":"\#(token)"}"#
            )
            #expect(serviceStack.status == .serviceUnavailable, "\(serviceStack.text)")
            #expect(serviceStack.json["responseStatus"] != nil)

            // The routes that start a web sign-in: a page for a browser, ServiceStack's shape for its contract.
            let authorize = try await CompatibilityTests.send(harness, .get, "/auth/apple/authorize")
            #expect(authorize.status == .serviceUnavailable)
            #expect(authorize.headers[.contentType] == "text/html; charset=utf-8", "\(authorize.text)")
            #expect(authorize.text.contains("database_unavailable"))
            let serviceStackFlow = try await CompatibilityTests.send(harness, .get, "/auth/apple")
            #expect(serviceStackFlow.status == .serviceUnavailable)
            #expect(serviceStackFlow.json["responseStatus"] != nil, "\(serviceStackFlow.text)")
            let ready = try await harness.call(.get, "/readyz")
            #expect(ready.status == .serviceUnavailable)

            await store.setUnavailable(false)
            // The same identity token, retried as Retry-After invites (three refusals above): no replay, since the
            // refused attempts opened no session.
            let back = try await harness.call(.post, "/auth/apple/native", json: ["identityToken": token])
            #expect(back.status == .ok, "\(back.json)")
            #expect(try await harness.call(.get, "/readyz").status == .ok)
        }
    }
}
