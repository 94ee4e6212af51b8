import AccountStore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension ServerMetrics {
    /// Reads the gauges that are looked up rather than kept current, before a scrape: the revocations not confirmed,
    /// the current signing key's age and the data-key file's. Each is one cheap look, and a scrape comes once a minute
    /// or so; a store that does not answer leaves the revocation count at 0 rather than failing the scrape.
    /// - Parameters:
    ///   - dataKeyFile: the data keys' file; `nil` when they come from a setting (no date).
    ///   - webhooks: the configured endpoints, whose backlog is read too.
    func readOperationalGauges(
        store: any AccountStore,
        dataKeyFile: String?,
        webhooks: [WebhookEndpoint] = [],
        now: Date
    ) async {
        if !webhooks.isEmpty, let states = try? await store.webhookEndpoints() {
            for endpoint in webhooks {
                let state = states.first { $0.name == endpoint.name }
                webhookBacklog(
                    endpoint: endpoint.name,
                    pending: state?.pending ?? 0,
                    lag: state?.oldestPendingEventAt.map { max(0, now.timeIntervalSince($0)) } ?? 0,
                    disabled: state?.disabledAt != nil
                )
            }
        }
        let pending = (try? await store.pendingAppleRevocationCount()) ?? 0
        let signingKey = try? await store.signingKeys().last { $0.retiredAt == nil }
        let dataKeyAge = dataKeyFile.flatMap(FileStamp.init).map { now.timeIntervalSince($0.modified) }
        operational(
            revocationsPending: pending,
            signingKeyAge: signingKey.map { now.timeIntervalSince($0.createdAt) },
            dataKeyAge: dataKeyAge
        )
    }
}
