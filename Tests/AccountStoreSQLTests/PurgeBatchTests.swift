import AccountStore
import AccountStoreSQL
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Housekeeping deletes in batches (`SQLAccountStore.purgeBatch` rows per write), so a purge after a long pause
/// neither holds the writer for its whole length nor keeps every changed page in memory: more rows than two batches
/// are all deleted, on each database, and the rows still valid are kept.
@Suite struct PurgeBatchTests {
    static let expired = 2 * SQLAccountStore.purgeBatch + 500

    /// 32 distinct bytes per index, standing for a nonce's SHA-256.
    static func hash(_ index: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 32)
        withUnsafeBytes(of: Int64(index).littleEndian) { bytes.replaceSubrange(0..<8, with: $0) }
        return bytes
    }

    static func purgeDeletesEveryBatch(_ store: SQLAccountStore) async throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        try await withThrowingTaskGroup { group in
            for worker in 0..<8 {
                group.addTask {
                    for index in stride(from: worker, to: expired, by: 8) {
                        try await store.saveServerNonce(hash: hash(index), expiresAt: start)
                    }
                }
            }
            try await group.waitForAll()
        }
        try await store.saveServerNonce(hash: hash(-1), expiresAt: start.addingTimeInterval(3_600))
        let result = try await store.purgeExpired(now: start.addingTimeInterval(1), retention: 86_400)
        #expect(result.serverNonces == expired)
        let again = try await store.purgeExpired(now: start.addingTimeInterval(1), retention: 86_400)
        #expect(again.serverNonces == 0)
        let kept = try await store.consumeServerNonce(hash: hash(-1), now: start.addingTimeInterval(2))
        #expect(kept)
    }

    @Test func onSQLite() async throws {
        try await StoreHarness.withSQLitePath { path in
            try await StoreHarness.withSQLiteStore(path: path) { try await Self.purgeDeletesEveryBatch($0) }
        }
    }

    @Test(.enabled(if: StoreHarness.postgresURL != nil, "set SIWA_TEST_POSTGRES_URL")) func onPostgreSQL() async throws
    {
        try await StoreHarness.withPostgresStore(schema: StoreHarness.freshSchema()) {
            try await Self.purgeDeletesEveryBatch($0)
        }
    }
}
