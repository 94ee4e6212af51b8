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
    /// - Parameter dataKeyFile: the data keys' file; `nil` when they come from a setting (no date).
    func readOperationalGauges(store: any AccountStore, dataKeyFile: String?, now: Date) async {
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
