import HTTPTypes
import Hummingbird
import Synchronization

/// How controllers register routes: each with its ``RouteAccess``, which ``RouteGuard`` enforces before the handler.
/// Every declaration is kept, so that a test can compare them with the router's routes (a route without a policy
/// fails it) and write the table of who may call what.
struct PolicedRoutes {
    /// The declarations of one application, by route.
    final class Declarations: Sendable {
        private let policies = Mutex<[RegisteredRoute: RouteAccess]>([:])

        func declare(_ route: RegisteredRoute, _ access: RouteAccess) {
            policies.withLock { $0[route] = access }
        }

        var all: [RegisteredRoute: RouteAccess] { policies.withLock { $0 } }
    }

    let router: Router<SiwaRequestContext>
    let guarding: RouteGuard
    let declarations: Declarations
    /// The path of the group these routes are in (`""` at the root).
    var prefix = ""

    /// The routes under `path`.
    func group(_ path: String) -> PolicedRoutes {
        var group = self
        group.prefix += path
        return group
    }

    func get<Output: ResponseGenerator>(
        _ path: String,
        access: RouteAccess,
        use handler: @escaping @Sendable (Request, SiwaRequestContext) async throws -> Output
    ) {
        on(path, method: .get, access: access, use: handler)
    }

    func post<Output: ResponseGenerator>(
        _ path: String,
        access: RouteAccess,
        use handler: @escaping @Sendable (Request, SiwaRequestContext) async throws -> Output
    ) {
        on(path, method: .post, access: access, use: handler)
    }

    func delete<Output: ResponseGenerator>(
        _ path: String,
        access: RouteAccess,
        use handler: @escaping @Sendable (Request, SiwaRequestContext) async throws -> Output
    ) {
        on(path, method: .delete, access: access, use: handler)
    }

    func on<Output: ResponseGenerator>(
        _ path: String,
        method: HTTPRequest.Method,
        access: RouteAccess,
        use handler: @escaping @Sendable (Request, SiwaRequestContext) async throws -> Output
    ) {
        let routerPath = RouterPath(prefix + path)
        // What the route spends, resolved once: declared, or implied by its credential and method.
        let access = access.spending(access.budget(for: method))
        declarations.declare(RegisteredRoute(method: method.rawValue, path: routerPath.description), access)
        let guarding = self.guarding
        router.on(routerPath, method: method) { request, context -> Response in
            try await guarding.respond(to: request, context: context, access: access) { request, context in
                try await handler(request, context).response(from: request, context: context)
            }
        }
    }
}
