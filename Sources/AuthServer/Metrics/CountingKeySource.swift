import AppleSignIn

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An ``AppleKeySource`` that counts the fetches of the source it wraps, so that `AppleSignIn` needs no metrics.
struct CountingKeySource: AppleKeySource {
    let source: any AppleKeySource
    let metrics: ServerMetrics

    func fetchKeySet() async throws(AppleSignInError) -> (keySet: AppleKeySet, maxAge: TimeInterval?) {
        do {
            let fetched = try await source.fetchKeySet()
            metrics.jwksFetch(succeeded: true)
            return fetched
        } catch {
            metrics.jwksFetch(succeeded: false)
            throw error
        }
    }
}
