import AccountStore
import AppleSignIn
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import SiwaTesting
import Testing

@testable import AuthServer

/// The OpenAPI document (`docs/openapi.json`) against the server: the same routes, embedded as the file says, served
/// at `/openapi.json`. `OpenAPIConformanceTests` checks the answers against it with schemathesis.
@Suite("Server: the OpenAPI document")
struct OpenAPIDocumentTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let documentPath = root.appendingPathComponent("docs/openapi.json").path

    /// The methods an OpenAPI path item can hold.
    static let methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    /// The tags an operation may carry: the route's part of siwa (and, for a client contract, which one).
    static let tags: Set<String> = [
        "canonical", "web", "lifecycle", "admin", "oidc", "compat-servicestack", "compat-vapor-tutorial",
        "compat-rentmanager",
    ]

    /// Every feature that configuration can turn on, on: the client contracts, metrics, web sign-in (the Services
    /// ID), a domain-association file and an admin.
    static func everyFeature() throws -> (AuthServerConfiguration, AppleSignInConfiguration) {
        var configuration = AuthServerConfiguration(authRateLimit: nil, storeRefreshInterval: .seconds(60))
        configuration.compatibility = .all
        configuration.compatibility.adminUsers = ["00000000-0000-0000-0000-000000000001"]
        configuration.metricsListener = MetricsListener(port: 0)
        configuration.web.domainAssociation = "association"
        let apple = try AppleSignInConfiguration(
            bundleIDs: [ClientID("com.example.app")],
            servicesID: ClientID("com.example.web")
        )
        return (configuration, apple)
    }

    static func document() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: documentPath))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// `GET /path/{id}` for every operation of the document.
    static func documentedRoutes() throws -> Set<String> {
        let paths = try #require(try document()["paths"] as? [String: [String: Any]])
        var routes: Set<String> = []
        for (path, item) in paths {
            for method in methods where item[method] != nil { routes.insert("\(method.uppercased()) \(path)") }
        }
        return routes
    }

    /// The application `configuration` builds, with the routes its router registered and the access of each, and the
    /// access of the metrics listener's routes, on an in-memory store (nothing is served).
    static func assemble(
        _ configuration: AuthServerConfiguration,
        apple: AppleSignInConfiguration
    ) async throws -> (
        routes: [RegisteredRoute], policies: [RegisteredRoute: RouteAccess],
        metricsPolicies: [RegisteredRoute: RouteAccess]
    ) {
        let built = try await assembleApplication(
            configuration: configuration,
            apple: apple,
            store: InMemoryAccountStore(),
            transport: StubTransport(),
            sealer: DataSealer(key: SymmetricKey(size: .bits256)),
            clock: ManualWallClock(Date()),
            host: "127.0.0.1",
            port: 0,
            logger: Logger(label: "test"),
            tls: nil,
            onServerRunning: { _ in }
        )
        return (built.routes, built.policies, built.metricsPolicies)
    }

    @Test func everyRouteTheServerRegistersIsDocumentedAndNoOther() async throws {
        let (configuration, apple) = try Self.everyFeature()
        let built = try await Self.assemble(configuration, apple: apple)
        let registered = Set(built.routes.map(\.description))
        #expect(registered.count > 50, "the router's routes were read (\(registered.count))")
        let documented = try Self.documentedRoutes()
        let undocumented = registered.subtracting(documented).sorted()
        let unregistered = documented.subtracting(registered).sorted()
        #expect(
            undocumented.isEmpty,
            "routes the server registers that docs/openapi.json lacks:\n\(undocumented.joined(separator: "\n"))"
        )
        #expect(
            unregistered.isEmpty,
            "operations in docs/openapi.json the server does not register:\n\(unregistered.joined(separator: "\n"))"
        )
    }

    @Test func theEmbeddedDocumentIsTheOneInTheRepository() throws {
        let file = try String(contentsOfFile: Self.documentPath, encoding: .utf8)
        let same = OpenAPIDocument.json + "\n" == file  // compared apart: a failure should not print both documents
        #expect(
            same,
            "Sources/AuthServer/App/OpenAPIDocument.swift is not docs/openapi.json: run scripts/generate-openapi-source"
        )
    }

    @Test func theDocumentIsServedAtOpenAPIJSON() async throws {
        let (configuration, apple) = try Self.everyFeature()
        let app = try await buildApplication(
            configuration: configuration,
            apple: apple,
            store: InMemoryAccountStore(),
            transport: StubTransport(),
            sealer: DataSealer(key: SymmetricKey(size: .bits256)),
            clock: ManualWallClock(Date())
        )
        try await app.test(.router) { client in
            let response = try await client.execute(uri: "/openapi.json", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/vnd.oai.openapi+json")
            let file = try String(contentsOfFile: Self.documentPath, encoding: .utf8)
            let same = String(buffer: response.body) + "\n" == file
            #expect(same, "GET /openapi.json is not docs/openapi.json")
        }
    }

    /// The security schemes OpenAPI names for a route of `access`, `""` standing for `{}` (callable without one of
    /// them): derived from the declaration alone, independently of how the document was written.
    static func security(of access: RouteAccess, method: String, tag: String) -> Set<String>? {
        guard access.readsAccessToken else {
            return access.credential == .clientCredentials ? ["clientBasic", ""] : nil
        }
        var schemes: Set<String> = []
        if access.presentations.contains(.bearer) {
            switch access.credential {
            case .admin, .adminOrReadToken, .adminOrWriteToken, .contractAdmin: schemes.insert("adminBearer")
            case .sessionOrContractToken: schemes.insert("vaporTutorialToken")
            default: schemes.insert("bearer")
            }
            if access.serviceTokenScope != nil { schemes.insert("adminServiceToken") }
        }
        if access.presentations.contains(.cookie) {
            schemes.insert(tag == "compat-servicestack" ? "serviceStackCookie" : "sessionCookie")
        }
        // Answered without a scheme: an optional session (except where the handler requires the contract's token),
        // a form's access_token (a body field, which OpenAPI has no scheme for), or the console's redirect to sign in.
        let optional = !access.required && access.credential != .sessionOrContractToken
        let formField = access.presentations.contains(.formField) && method == "post"
        if optional || formField || access.refusal.name.contains("sign-in redirect") { schemes.insert("") }
        return schemes
    }

    /// Each operation's `security` is what its route declares (``RouteAccess``, where it is registered): the
    /// schemes of the credential and of each way it may be presented, and `{}` exactly where a call without one is
    /// answered.
    @Test func eachOperationsSecurityIsItsRoutesDeclaredAccess() async throws {
        let (_, policies) = try await RouteAccessMatrixTests.declared(RouteAccessMatrixTests.configuration())
        let paths = try #require(try Self.document()["paths"] as? [String: [String: Any]])
        var differences: [String] = []
        for (route, access) in policies {
            let method = route.method.lowercased()
            let operation = try #require(paths[route.path]?[method] as? [String: Any], "\(route) is not documented")
            let tag = try #require((operation["tags"] as? [String])?.first)
            let documented = (operation["security"] as? [[String: Any]]).map { requirements in
                Set(requirements.map { $0.keys.first ?? "" })
            }
            let declared = Self.security(of: access, method: method, tag: tag)
            if documented != declared {
                differences.append(
                    "\(route) (\(access)): documented \(documented.map { $0.sorted() } ?? []) , declared "
                        + "\(declared.map { $0.sorted() } ?? [])"
                )
            }
        }
        #expect(policies.count > 50)
        #expect(
            differences.isEmpty,
            "security differs from the declared access:\n\(differences.sorted().joined(separator: "\n"))"
        )
    }

    /// OpenAPI 3.1 with siwa's version; every operation has a unique id and one of the parts' tags, each contract's
    /// operations name their contract and condition, and every `$ref` points at something.
    @Test func theDocumentIsWellFormed() throws {
        let document = try Self.document()
        #expect(document["openapi"] as? String == "3.1.0")
        #expect((document["info"] as? [String: Any])?["version"] as? String == SiwaVersion.current)
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let components = try #require(document["components"] as? [String: Any])
        let schemes = Set((components["securitySchemes"] as? [String: Any] ?? [:]).keys)
        let declaredTags = Set((document["tags"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String })
        #expect(declaredTags == Self.tags, "the document's tags are the parts'")
        var operationIDs: [String] = []
        for (path, item) in paths {
            for method in Self.methods {
                guard let operation = item[method] as? [String: Any] else { continue }
                let label = "\(method.uppercased()) \(path)"
                let id = try #require(operation["operationId"] as? String, "\(label) has no operationId")
                operationIDs.append(id)
                let tags = try #require(operation["tags"] as? [String], "\(label) has no tags")
                #expect(tags.count == 1 && Self.tags.contains(tags[0]), "\(label): tags \(tags)")
                if let tag = tags.first, tag.hasPrefix("compat-") {
                    #expect(operation["x-siwa-contract"] is String, "\(label) does not name its contract")
                    #expect(operation["x-siwa-condition"] is String, "\(label) does not say when it is on")
                }
                for requirement in operation["security"] as? [[String: Any]] ?? [] {
                    #expect(Set(requirement.keys).isSubset(of: schemes), "\(label): an unknown security scheme")
                }
                let responses = try #require(operation["responses"] as? [String: Any], "\(label) has no responses")
                #expect(!responses.isEmpty, "\(label) has no responses")
            }
        }
        #expect(Set(operationIDs).count == operationIDs.count, "operationIds repeat")
        let text = try String(contentsOfFile: Self.documentPath, encoding: .utf8)
        let references = text.matches(of: /"\$ref": "#\/([^"]+)"/).map { String($0.output.1) }
        #expect(!references.isEmpty)
        for reference in Set(references) {
            var node: Any? = document
            for key in reference.split(separator: "/") { node = (node as? [String: Any])?[String(key)] }
            #expect(node != nil, "$ref #/\(reference) points at nothing")
        }
    }
}
