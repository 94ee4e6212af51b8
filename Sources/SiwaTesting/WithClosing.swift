/// Runs `body` with `resource`, then `close` on it, also when `body` throws: for what must be shut down before its
/// last reference goes, such as an `SQLAccountStore`.
public func withClosing<Resource: Sendable, R>(
    _ resource: Resource,
    close: (Resource) async -> Void,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (Resource) async throws -> R
) async throws -> R {
    do {
        let result = try await body(resource)
        await close(resource)
        return result
    } catch {
        await close(resource)
        throw error
    }
}
