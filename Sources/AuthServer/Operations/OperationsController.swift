import AccountStore
import HTTPTypes
import Hummingbird
import NIOCore

/// The routes an operator and a load balancer call, and the documents every client reads: the home page, `/healthz`,
/// `/readyz`, `/openapi.json` and the key set that verifies siwa's tokens (`/.well-known/jwks.json`).
struct OperationsController: RouteProvider {
    let store: any AccountStore
    let issuer: AccessTokenIssuer
    let appleHealth: AppleCredentialHealth
    let appleCredentialsConfigured: Bool
    /// The home page, made once.
    let home: HTMLPage
    /// The OpenAPI document's bytes, made once.
    let openAPI: ByteBuffer

    func addRoutes(to routes: PolicedRoutes) {
        routes.get("/", access: .open) { _, _ -> Response in home.response() }
        routes.get("/.well-known/jwks.json", access: .open, use: keySet)
        routes.get("/openapi.json", access: .open, use: openAPIDocument)
        routes.get("/healthz", access: .open) { _, _ -> HTTPResponse.Status in .ok }
        routes.get("/readyz", access: .open, use: readiness)
    }

    @Sendable func keySet(_ request: Request, context: SiwaRequestContext) -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "public, max-age=300"],
            body: .init(byteBuffer: ByteBuffer(bytes: issuer.jwks()))
        )
    }

    @Sendable func openAPIDocument(_ request: Request, context: SiwaRequestContext) -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "application/vnd.oai.openapi+json", .cacheControl: "public, max-age=300"],
            body: .init(byteBuffer: openAPI)
        )
    }

    /// `GET /readyz`: 200 while the database answers, with the Apple credentials' state (still ready while Apple
    /// refuses the client secret: sign-ins verify without it); 503 `database_unavailable` while it does not.
    @Sendable func readiness(_ request: Request, context: SiwaRequestContext) async throws -> Response {
        do {
            try await store.ping()
        } catch {
            throw AuthServerError(
                .serviceUnavailable,
                AuthServerError.Code.databaseUnavailable,
                "the database cannot be reached"
            )
        }
        let detail = ReadinessDetail(appleHealth: appleHealth, appleCredentialsConfigured: appleCredentialsConfigured)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: detail.json))
        )
    }
}
