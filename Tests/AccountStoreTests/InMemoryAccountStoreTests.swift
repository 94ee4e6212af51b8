import AccountStore
import SiwaTesting
import Testing

/// The in-memory store passes the store conformance suite.
@Suite struct InMemoryAccountStoreTests {
    @Test(arguments: AccountStoreConformance.checks)
    func conformance(_ check: AccountStoreConformance.Check) async throws {
        try await check.run(InMemoryAccountStore())
    }

    @Test func wholeSuiteThroughTheEntryPoint() async throws {
        try await checkAccountStoreConformance { InMemoryAccountStore() }
    }
}
