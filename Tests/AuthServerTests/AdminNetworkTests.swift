import AccountStore
import AuthServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import SiwaTesting
import Testing

/// `SIWA_ADMIN_ALLOWED_NETWORKS`: the console and the admin API answer only clients of the operators' networks, by the
/// client's address as the rate limits read it: a trusted proxy may name the client, anyone else is the client.
@Suite("Server: the admin routes' networks")
struct AdminNetworkTests {
    /// The operators' network is 10.0.0.0/8; the one trusted proxy connects from 127.0.0.2.
    static func configuration() throws -> AuthServerConfiguration {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .milliseconds(200))
        configuration.adminNetworks = try AddressRanges(["10.0.0.0/8"])
        configuration.trustedProxies = try TrustedProxies(["127.0.0.2"])
        return configuration
    }

    /// An admin's access token (granted in the store, as `siwa users grant-admin` does).
    static func admin(_ harness: ServerHarness) async throws -> String {
        let answer = try await harness.signIn("operator@example.com")
        let id = try #require(answer.json.user.string("id").flatMap(UserID.init))
        try await harness.store.grantAdmin(AdminSubject(id), by: .operator, now: Date())
        return try #require(answer.json.string("accessToken"))
    }

    /// `GET path` with the admin's token from `source`, with `X-Forwarded-For` when given.
    static func get(
        _ path: String,
        _ harness: ServerHarness,
        token: String,
        from source: String,
        forwardedFor: String? = nil
    ) async throws -> (status: Int, head: String, body: String) {
        let port = try #require(harness.serverURL.split(separator: ":").last.flatMap { Int($0) })
        let connection = try RawSocketConnection(port: port, from: source)
        var request = "GET \(path) HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(token)\r\n"
        if let forwardedFor { request += "X-Forwarded-For: \(forwardedFor)\r\n" }
        #expect(connection.send(request + "Connection: close\r\n\r\n"))
        let answer = try #require(try await connection.readResponse(timeout: .seconds(10)))
        return (answer.status, answer.head, String(decoding: answer.body, as: UTF8.self))
    }

    @Test func theAdminAPIAnswersOnlyTheOperatorsNetworks() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            let token = try await Self.admin(harness)
            // Through the trusted proxy, from the operators' network.
            let allowed = try await Self.get(
                "/admin/api/users",
                harness,
                token: token,
                from: "127.0.0.2",
                forwardedFor: "10.1.2.3"
            )
            #expect(allowed.status == 200, "\(allowed.body)")
            // Through the trusted proxy, from elsewhere; and a client that wrote an operator's address itself, to the
            // left of the one the proxy appended.
            for forwardedFor in ["192.0.2.7", "10.1.2.3, 192.0.2.7"] {
                let refused = try await Self.get(
                    "/admin/api/users",
                    harness,
                    token: token,
                    from: "127.0.0.2",
                    forwardedFor: forwardedFor
                )
                #expect(refused.status == 403, "X-Forwarded-For: \(forwardedFor)")
                #expect(refused.body.contains(#""error":"admin_network_refused""#), "\(refused.body)")
            }
            // A peer that is no trusted proxy names no client: its X-Forwarded-For is a lie it cannot tell.
            let lying = try await Self.get(
                "/admin/api/users",
                harness,
                token: token,
                from: "127.0.0.3",
                forwardedFor: "10.1.2.3"
            )
            #expect(lying.status == 403)
            #expect(lying.body.contains("admin_network_refused"))
            // The other routes answer everyone.
            #expect(try await harness.call(.get, "/api/me", bearer: token).status == .ok)
        }
    }

    @Test func theConsoleAnswersOthersWithAPage() async throws {
        try await ServerHarness.run(configuration: Self.configuration()) { harness in
            let token = try await Self.admin(harness)
            let refused = try await Self.get("/admin", harness, token: token, from: "127.0.0.1")
            #expect(refused.status == 403)
            #expect(refused.head.lowercased().contains("content-type: text/html"), "\(refused.head)")
            #expect(refused.body.contains("Not from this network"))
            // Without a session either: no sign-in redirect from outside.
            let anonymous = try await harness.server.execute(uri: "/admin/users", method: .get)
            #expect(anonymous.status == .forbidden)
            let allowed = try await Self.get(
                "/admin",
                harness,
                token: token,
                from: "127.0.0.2",
                forwardedFor: "10.9.9.9"
            )
            #expect(allowed.status == 200)
        }
    }
}
