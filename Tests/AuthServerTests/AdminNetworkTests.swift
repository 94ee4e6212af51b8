import AccountStore
import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import SiwaTesting
import Synchronization
import Testing

@testable import AuthServer

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

    /// `GET path` (or another method) with the admin's token from `source`, with `X-Forwarded-For` when given.
    static func get(
        _ path: String,
        _ harness: ServerHarness,
        method: String = "GET",
        token: String?,
        from source: String,
        forwardedFor: String? = nil
    ) async throws -> (status: Int, head: String, body: String) {
        let port = try #require(harness.serverURL.split(separator: ":").last.flatMap { Int($0) })
        let connection = try RawSocketConnection(port: port, from: source)
        var request = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n"
        if let token { request += "Authorization: Bearer \(token)\r\n" }
        if method != "GET" { request += "Content-Length: 0\r\n" }
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

    /// Every route that answers by an admin role is an admin route, the contracts' among them: from outside the
    /// networks it is refused before any token is read (so without one too), in the route's own shape.
    @Test func everyAdminRouteRefusesOutsideTheNetworksBeforeReadingAToken() async throws {
        var configuration = try Self.configuration()
        configuration.compatibility = .all
        let (_, policies) = try await RouteAccessMatrixTests.declared(configuration)
        let adminRoutes = policies.filter { $0.value.isAdmin }.keys.sorted()
        #expect(adminRoutes.contains(RegisteredRoute(method: "GET", path: "/users")), "ServiceStack's admin dump")
        #expect(adminRoutes.count > 15, "\(adminRoutes)")
        try await ServerHarness.run(configuration: configuration, web: true) { harness in
            for route in adminRoutes {
                let path = route.path.replacing("{id}", with: "0190a5e2-6b1c-7000-8000-000000000001")
                    .replacing("{action}", with: "disable")
                for token in [nil, "not-a-token"] {
                    let answer = try await Self.get(
                        path,
                        harness,
                        method: route.method,
                        token: token,
                        from: "127.0.0.2",
                        forwardedFor: "192.0.2.7"
                    )
                    #expect(answer.status == 403, "\(route) from outside: \(answer.status) \(answer.body.prefix(200))")
                    #expect(Self.namesTheNetwork(answer.body), "\(route): \(answer.body.prefix(200))")
                }
                // From the operators' network the same request passes the network rule, and the token is read.
                let inside = try await Self.get(
                    path,
                    harness,
                    method: route.method,
                    token: "not-a-token",
                    from: "127.0.0.2",
                    forwardedFor: "10.1.2.3"
                )
                #expect(!Self.namesTheNetwork(inside.body), "\(route) from inside: \(inside.body.prefix(200))")
                #expect([401, 303, 403].contains(inside.status), "\(route) from inside refuses the forged token")
            }
        }
    }

    /// Whether a refusal is the admin networks' (in siwa's JSON, ServiceStack's shape or the console's page).
    static func namesTheNetwork(_ body: String) -> Bool {
        ["admin_network_refused", "AdminNetworkRefused", "Not from this network"].contains { body.contains($0) }
    }

    /// ServiceStack's admin dump (every account's email, name and Apple id) answers the contract's admin from the
    /// operators' network, and refuses the same token from elsewhere in ServiceStack's shape.
    @Test func theContractsAdminDumpAnswersOnlyTheOperatorsNetworks() async throws {
        let store = InMemoryAccountStore()
        let dataKey = SymmetricKey(size: .bits256)
        let adminID = Mutex<(token: String, id: String)?>(nil)
        var configuration = try Self.configuration()
        configuration.compatibility = .all
        try await ServerHarness.run(store: store, configuration: configuration, dataKey: dataKey) { harness in
            let answer = try await harness.signIn("dump@example.com")
            let id = try #require(answer.json.user.string("id"))
            let token = try #require(answer.json.string("accessToken"))
            adminID.withLock { $0 = (token, id.lowercased()) }
        }
        let (token, id) = try #require(adminID.withLock { $0 })
        configuration.compatibility.adminUsers = [id]
        try await ServerHarness.run(store: store, configuration: configuration, dataKey: dataKey) { harness in
            let inside = try await Self.get(
                "/users",
                harness,
                token: token,
                from: "127.0.0.2",
                forwardedFor: "10.1.2.3"
            )
            #expect(inside.status == 200, "\(inside.body.prefix(200))")
            #expect(inside.body.contains("dump@example.com"))
            for (source, forwardedFor) in [("127.0.0.2", "192.0.2.7"), ("127.0.0.3", "10.1.2.3"), ("127.0.0.1", nil)] {
                let outside = try await Self.get(
                    "/users",
                    harness,
                    token: token,
                    from: source,
                    forwardedFor: forwardedFor
                )
                #expect(outside.status == 403, "from \(source) for \(forwardedFor ?? "itself")")
                #expect(outside.body.contains("AdminNetworkRefused"), "ServiceStack's shape: \(outside.body)")
                #expect(!outside.body.contains("dump@example.com"))
            }
        }
    }
}
