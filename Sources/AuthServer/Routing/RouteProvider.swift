/// A part of the server that serves routes. Each controller adopts it, and the composition root registers every part
/// the configuration turns on by looping over them (`AppServices.buildRouter`), as dex's `mount` does.
protocol RouteProvider: Sendable {
    /// Registers the part's routes on `routes` (the root group), each with who may call it (``RouteAccess``).
    /// - Parameter routes: the server's routes, at the root; a part groups them under its own prefixes.
    func addRoutes(to routes: PolicedRoutes)
}
