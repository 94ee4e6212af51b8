import AccountStore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Which configured webhook endpoints are disabled, as the deliverer last read them from the store (every instance's
/// deliverer reads them each round): the console's banner reads it without a store call.
final class WebhookHealth: Sendable {
    struct Disabled: Sendable, Hashable {
        var name: String
        var since: Date
    }

    private let state = Mutex<[Disabled]>([])

    init() {}

    /// The disabled endpoints, by name.
    var disabled: [Disabled] { state.withLock { $0 } }

    /// Takes the store's endpoint states, keeping the configured endpoints'.
    func update(_ states: [WebhookEndpointState], configured: [WebhookEndpoint]) {
        let names = Set(configured.map(\.name))
        let disabled = states.compactMap { endpoint -> Disabled? in
            guard names.contains(endpoint.name), let since = endpoint.disabledAt else { return nil }
            return Disabled(name: endpoint.name, since: since)
        }
        state.withLock { $0 = disabled }
    }
}
