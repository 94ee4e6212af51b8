import AccountStore
import PostgresNIO

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The ``SharedCounters`` of a PostgreSQL store: the unlogged table `shared_counts` (schema version 10), one row per
/// key and window, on the store's own pool.
///
/// A batch of increments is one statement (`INSERT … ON CONFLICT … DO UPDATE … RETURNING`) however many keys it
/// carries; its rows go in key order, so that two instances' batches over the same keys lock them in the same order
/// and cannot deadlock each other.
struct PostgresSharedCounters: SharedCounters {
    let store: SQLAccountStore

    func add(_ increments: [SharedCount]) async throws(StoreError) -> [SharedCount] {
        guard !increments.isEmpty else { return [] }
        // One row per key and window: a statement that updated one row twice would fail.
        var merged: [Key: SharedCount] = [:]
        for increment in increments {
            merged[Key(key: increment.key, window: increment.window), default: increment.zeroed].count +=
                increment.count
        }
        let rows = merged.values.sorted { ($0.key, $0.window) < ($1.key, $1.window) }
        let keys = rows.map(\.key)
        let windows = rows.map(\.window)
        let counts = rows.map(\.count)
        let expiries = try rows.map { row throws(StoreError) in try SQLValue.milliseconds(row.expiresAt) }
        let query: PostgresQuery = """
            INSERT INTO shared_counts (key, window_start, count, expires_at)
            SELECT * FROM unnest(\(keys)::text[], \(windows)::int8[], \(counts)::int8[], \(expiries)::int8[])
            ON CONFLICT (key, window_start) DO UPDATE SET count = shared_counts.count + EXCLUDED.count
            RETURNING key, window_start, count, expires_at
            """
        return try await store.postgres("add to the shared counts") { connection, logger in
            var totals: [SharedCount] = []
            totals.reserveCapacity(rows.count)
            let result = try await connection.query(query, logger: logger)
            for try await (key, window, count, expiresAt) in result.decode((String, Int64, Int64, Int64).self) {
                totals.append(
                    SharedCount(
                        key: key,
                        window: window,
                        count: count,
                        expiresAt: SQLValue.date(milliseconds: expiresAt)
                    )
                )
            }
            return totals
        }
    }

    func purge(expiredBefore now: Date) async throws(StoreError) -> Int {
        let now = try SQLValue.milliseconds(now)
        let query: PostgresQuery = """
            WITH purged AS (DELETE FROM shared_counts WHERE expires_at < \(now) RETURNING 1) SELECT count(*) FROM purged
            """
        return try await store.postgres("purge the shared counts") { connection, logger in
            for try await purged in try await connection.query(query, logger: logger).decode(Int64.self) {
                return Int(purged)
            }
            return 0
        }
    }

    private struct Key: Hashable {
        var key: String
        var window: Int64
    }
}

extension SharedCount {
    /// This count's key, window and expiry with nothing counted yet.
    fileprivate var zeroed: SharedCount {
        SharedCount(key: key, window: window, count: 0, expiresAt: expiresAt)
    }
}
