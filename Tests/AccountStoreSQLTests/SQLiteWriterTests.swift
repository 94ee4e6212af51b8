import AccountStore
import Logging
import SQLKit
import SQLiteNIO
import Synchronization
import Testing

@testable import AccountStoreSQL

#if canImport(Glibc)
import Glibc
#endif

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The SQLite store's one writing connection (`SQLiteWriter`): group commit, transactions that hold it, errors.
@Suite struct SQLiteWriterTests {
    /// Opens a writer on a new file with a table `t (k TEXT PRIMARY KEY, n INTEGER)`.
    private func withWriter<R>(_ body: (SQLiteWriter, String) async throws -> R) async throws -> R {
        try await StoreHarness.withSQLitePath { path in
            let writer = try await SQLiteWriter.open(
                path: path,
                busyTimeoutMilliseconds: 5_000,
                logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
            )
            do {
                try await writer.perform { connection in
                    try connection.execute("PRAGMA journal_mode = WAL")
                    try connection.execute("CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER NOT NULL)")
                }
                let result = try await body(writer, path)
                await writer.shutdown()
                return result
            } catch {
                await writer.shutdown()
                throw error
            }
        }
    }

    /// Rows of `t` as another connection (SQLiteNIO's) reads them from the file.
    private func committedRows(_ path: String) async throws -> [String: Int] {
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        do {
            let rows = try await connection.query("SELECT k, n FROM t", [])
            try await connection.close()
            var found: [String: Int] = [:]
            for row in rows {
                if let key = row.column("k")?.string, let value = row.column("n")?.integer { found[key] = value }
            }
            return found
        } catch {
            // Closed in a task of its own, which a cancelled test does not cancel: SQLiteNIO stops the process when a
            // connection is released unclosed.
            await Task { try? await connection.close() }.value
            throw error
        }
    }

    @Test func writesQueuedBehindABusyWriterShareCommitsAndAFailingOneFailsAlone() async throws {
        try await withWriter { writer, path in
            let count = 150
            // Holds the writer until every write below is queued behind it, so that they are grouped whatever the
            // machine's speed (the wait is bounded only as a guard).
            let holdingStarted = Atomic(false)
            let holding = Task {
                try await writer.perform { _ in
                    holdingStarted.store(true, ordering: .sequentiallyConsistent)
                    let deadline = ContinuousClock.now + .seconds(60)
                    while writer.queuedJobs < count + 1, ContinuousClock.now < deadline { usleep(1_000) }
                }
            }
            while !holdingStarted.load(ordering: .sequentiallyConsistent) {
                try await Task.sleep(for: .milliseconds(1))
            }
            let outcomes = await withTaskGroup(of: (Int, StoreError?).self) { group in
                for index in 0...count {
                    group.addTask {
                        // The last one repeats the key of the 7th: a unique violation in the middle of a group.
                        let key = index == count ? "k7" : "k\(index)"
                        do {
                            _ = try await writer.perform { connection in
                                try connection.run(
                                    "INSERT INTO t (k, n) VALUES (?1, ?2)",
                                    [.text(key), .integer(index)]
                                )
                            }
                            return (index, nil)
                        } catch {
                            return (index, StoreError(mapping: error, during: "insert"))
                        }
                    }
                }
                var outcomes: [Int: StoreError?] = [:]
                for await (index, error) in group { outcomes[index] = error }
                return outcomes
            }
            try await holding.value
            let failures = outcomes.compactMapValues { $0 }
            #expect(failures.count == 1)
            #expect(failures.values.first?.code == .duplicate)
            let rows = try await committedRows(path)
            #expect(rows.count == count)
            // Of the two writers of k7, the one that succeeded is the one whose value is stored.
            let winner = failures.keys.first == count ? 7 : count
            #expect(rows["k7"] == winner)
            for index in 0..<count where index != 7 { #expect(rows["k\(index)"] == index) }
            // 151 writes queued at once: ceil(151 / 64) commits, not one each.
            #expect(writer.groupsCommitted.load(ordering: .relaxed) == 3)
        }
    }

    @Test func aTransactionHoldsTheWriterUntilItEnds() async throws {
        try await withWriter { writer, path in
            try await writer.perform { connection in
                _ = try connection.run("INSERT INTO t (k, n) VALUES ('x', 0)", [])
            }
            let outside = Mutex<Task<Void, any Error>?>(nil)
            let seenInside = try await writer.withTransaction { database in
                try await database.raw("UPDATE t SET n = 10 WHERE k = 'x'").run()
                // A write from outside the transaction, queued while it is open.
                outside.withLock { task in
                    task = Task {
                        try await writer.perform { connection in
                            _ = try connection.run("UPDATE t SET n = n + 1 WHERE k = 'x'", [])
                        }
                    }
                }
                let deadline = ContinuousClock.now + .seconds(60)
                while writer.queuedJobs < 1, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(5))
                }
                return try await database.raw("SELECT n FROM t WHERE k = 'x'").first()?.decode(
                    column: "n",
                    as: Int.self
                )
            }
            #expect(seenInside == 10)  // the outside write did not run inside the transaction
            try await outside.withLock { $0 }?.value
            #expect(try await committedRows(path)["x"] == 11)  // it ran after the commit
        }
    }

    @Test func aTransactionThatThrowsLeavesNothingAndReleasesTheWriter() async throws {
        try await withWriter { writer, path in
            struct Refused: Error {}
            await #expect(throws: Refused.self) {
                try await writer.withTransaction { database in
                    try await database.raw("INSERT INTO t (k, n) VALUES ('gone', 1)").run()
                    throw Refused()
                }
            }
            try await writer.perform { connection in
                _ = try connection.run("INSERT INTO t (k, n) VALUES ('kept', 2)", [])
            }
            #expect(try await committedRows(path) == ["kept": 2])
        }
    }

    /// A COMMIT that fails (here a deferred foreign key) leaves SQLite's transaction open: the writer must roll it back
    /// at once and go on with the next write outside it, not hang or run the next transaction inside the old one.
    @Test func aCommitThatFailsIsRolledBackAndTheWriterGoesOn() async throws {
        try await withWriter { writer, path in
            try await writer.perform { connection in
                try connection.execute("CREATE TABLE parent (id TEXT PRIMARY KEY)")
                try connection.execute(
                    "CREATE TABLE child (id TEXT PRIMARY KEY, parent TEXT REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)"
                )
            }
            let failure = await #expect(throws: (any Error).self) {
                try await writer.withTransaction { database in
                    try await database.raw("INSERT INTO t (k, n) VALUES ('lost', 1)").run()
                    try await database.raw("INSERT INTO child (id, parent) VALUES ('orphan', 'nobody')").run()
                }
            }
            #expect(failure.map { StoreError(mapping: $0, during: "commit").code } == .notFound)
            // The next transaction and the next single write are their own, and both are kept.
            try await writer.withTransaction { database in
                try await database.raw("INSERT INTO t (k, n) VALUES ('kept', 2)").run()
            }
            try await writer.perform { connection in
                _ = try connection.run("INSERT INTO t (k, n) VALUES ('also', 3)", [])
            }
            #expect(try await committedRows(path) == ["kept": 2, "also": 3])
        }
    }

    @Test func aTransactionsDatabaseRefusesStatementsAfterItEnds() async throws {
        try await withWriter { writer, path in
            let kept = try await writer.withTransaction { database in database }
            await #expect(throws: StoreError.self) {
                try await kept.raw("INSERT INTO t (k, n) VALUES ('late', 1)").run()
            }
            try await writer.perform { connection in
                _ = try connection.run("INSERT INTO t (k, n) VALUES ('next', 2)", [])
            }
            #expect(try await committedRows(path) == ["next": 2])
        }
    }

    @Test func aTransactionsDatabaseKeptPastItCannotWriteIntoTheNextOne() async throws {
        try await withWriter { writer, path in
            let kept = try await writer.withTransaction { database in database }
            try await writer.withTransaction { database in
                await #expect(throws: StoreError.self) {
                    try await kept.raw("INSERT INTO t (k, n) VALUES ('late', 1)").run()
                }
                try await database.raw("INSERT INTO t (k, n) VALUES ('mine', 2)").run()
            }
            #expect(try await committedRows(path) == ["mine": 2])
        }
    }

    @Test func aWriteThatThrowsAfterWritingLeavesNothing() async throws {
        try await withWriter { writer, path in
            struct Refused: Error {}
            await #expect(throws: Refused.self) {
                try await writer.perform { connection in
                    _ = try connection.run("INSERT INTO t (k, n) VALUES ('half', 1)", [])
                    throw Refused()
                }
            }
            let rows = try await committedRows(path)
            #expect(rows.isEmpty)
        }
    }

    @Test func aShutdownWaitsForTheOpenTransactionAndTheWritesAccepted() async throws {
        try await StoreHarness.withSQLitePath { path in
            let writer = try await SQLiteWriter.open(
                path: path,
                busyTimeoutMilliseconds: 5_000,
                logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
            )
            try await writer.perform { connection in
                try connection.execute("PRAGMA journal_mode = WAL")
                try connection.execute("CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER NOT NULL)")
            }
            let shutdown = Mutex<Task<Void, Never>?>(nil)
            try await writer.withTransaction { database in
                try await database.raw("INSERT INTO t (k, n) VALUES ('before', 1)").run()
                shutdown.withLock { $0 = Task { await writer.shutdown() } }
                // The close is queued behind the transaction (the only job waiting outside it).
                let deadline = ContinuousClock.now + .seconds(50)
                while writer.queuedJobs < 1, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(5))
                }
                try await database.raw("INSERT INTO t (k, n) VALUES ('after', 2)").run()
            }
            await shutdown.withLock { $0 }?.value
            await #expect(throws: StoreError.self) { try await writer.perform { _ in } }
            #expect(try await committedRows(path) == ["before": 1, "after": 2])
        }
    }

    @Test func statementsArePreparedOnceAndRunAgainWithOtherValues() async throws {
        try await withWriter { writer, path in
            @Sendable func insert(_ index: Int) async throws -> Int {
                try await writer.perform { connection in
                    _ = try connection.run(
                        "INSERT INTO t (k, n) VALUES (?1, ?2)",
                        [.text("r\(index)"), .integer(index)]
                    )
                    return connection.preparedStatements
                }
            }
            let afterFirst = try await insert(0)
            var afterEach: [Int] = []
            for index in 1..<20 { afterEach.append(try await insert(index)) }
            // The insert and the transaction's own statements, compiled for the first write and reused by the others.
            #expect(afterFirst >= 1)
            #expect(afterEach.allSatisfy { $0 == afterFirst })
            let read = try await writer.perform { connection in
                try connection.run("SELECT n FROM t WHERE k = ?1", [.text("r13")]).first?.decode(
                    column: "n",
                    as: Int.self
                )
            }
            #expect(read == 13)
            #expect(try await committedRows(path).count == 20)
        }
    }

    /// A write-ahead log that grew (a large transaction, checkpoints held back by a long read) would keep its file's
    /// size for good: the writer limits what it keeps to 64 MiB.
    @Test func theWriterLimitsTheLogFileItKeeps() async throws {
        try await withWriter { writer, _ in
            let limit = try await writer.perform { connection in
                try connection.run("PRAGMA journal_size_limit", []).first?.decode(
                    column: "journal_size_limit",
                    as: Int.self
                )
            }
            #expect(limit == 64 * 1_024 * 1_024)
        }
    }

    /// Savepoints (every write has one) copy the pages they change into a sub-journal; past 64 KiB SQLite moves it
    /// into a temporary file, written page by page, unless temporary storage is memory. A write of 300 KiB in a
    /// savepoint, then rolled back to it, leaves the table as it was.
    @Test func theWritersSavepointsJournalInMemory() async throws {
        try await withWriter { writer, path in
            let setting = try await writer.perform { connection in
                try connection.run("PRAGMA temp_store", []).first?.decode(column: "temp_store", as: Int.self)
            }
            #expect(setting == 2)  // MEMORY
            let blob = String(repeating: "x", count: 3_000)
            try await writer.perform { connection in
                // The job already runs in the group's transaction and a savepoint of its own.
                try connection.execute("SAVEPOINT big")
                for index in 0..<100 {
                    _ = try connection.run("INSERT INTO t (k, n) VALUES ('\(index)-\(blob)', \(index))", [])
                }
                try connection.execute("ROLLBACK TO big")
                try connection.execute("RELEASE big")
            }
            let rows = try await committedRows(path)
            #expect(rows.isEmpty)
        }
    }

    /// A write alone in its group runs without a savepoint: one that fails after writing must still leave nothing,
    /// and the writer goes on; one that fails a statement but catches it is committed with what it wrote.
    @Test func aLoneWriteThatFailsLeavesNothing() async throws {
        try await withWriter { writer, path in
            try await writer.perform { connection in
                _ = try connection.run("INSERT INTO t (k, n) VALUES ('a', 1)", [])
            }
            let groupsBefore = writer.groupsCommitted.load(ordering: .relaxed)
            let failure = await #expect(throws: SQLiteWriterError.self) {
                try await writer.perform { connection in
                    _ = try connection.run("INSERT INTO t (k, n) VALUES ('b', 2)", [])
                    _ = try connection.run("UPDATE t SET n = 10 WHERE k = 'a'", [])
                    _ = try connection.run("INSERT INTO t (k, n) VALUES ('a', 3)", [])  // a duplicate key
                }
            }
            #expect(failure.map { StoreError(mapping: $0, during: "insert").code } == .duplicate)
            #expect(try await committedRows(path) == ["a": 1])
            try await writer.perform { connection in
                _ = try connection.run("INSERT INTO t (k, n) VALUES ('c', 4)", [])
                do {
                    _ = try connection.run("INSERT INTO t (k, n) VALUES ('a', 5)", [])
                } catch {
                    _ = try connection.run("UPDATE t SET n = 6 WHERE k = 'a'", [])
                }
            }
            #expect(try await committedRows(path) == ["a": 6, "c": 4])
            // Each ran alone: no group was committed.
            #expect(writer.groupsCommitted.load(ordering: .relaxed) == groupsBefore)
        }
    }

    @Test func aClosedWriterRefusesWork() async throws {
        try await withWriter { writer, _ in
            await writer.shutdown()
            await #expect(throws: StoreError.self) { try await writer.perform { _ in } }
        }
    }
}
