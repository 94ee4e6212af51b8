// Times the operator console's store calls on a large store (`Benchmarks/load/search-scale.sh` fills it first):
// user search by email prefix, name and listing everyone, paging on, account totals, the audit log's counts and pages.
// Every call goes through the store's public API, as the console will make it.
//
//   siwa-search-benchmark prepare --sqlite PATH | --postgres URL
//   siwa-search-benchmark measure --sqlite PATH | --postgres URL [--runs 50] QUERY...
import AccountStore
import AccountStoreSQL
import Foundation
import Logging

/// The command line, read by hand (this tool needs no more).
struct Options {
    var command = ""
    var sqlitePath: String?
    var postgresURL: String?
    var runs = 50
    var queries: [String] = []

    init(_ arguments: [String]) throws {
        var rest = arguments.makeIterator()
        while let argument = rest.next() {
            switch argument {
            case "--sqlite": sqlitePath = rest.next()
            case "--postgres": postgresURL = rest.next()
            case "--runs": runs = Int(rest.next() ?? "") ?? runs
            case _ where command.isEmpty: command = argument
            default: queries.append(argument)
            }
        }
        guard ["prepare", "measure"].contains(command), (sqlitePath == nil) != (postgresURL == nil) else {
            throw StoreError(.invalidInput, "usage: siwa-search-benchmark prepare|measure --sqlite PATH|--postgres URL")
        }
    }

    func open() async throws -> SQLAccountStore {
        var logger = Logger(label: "siwa.search-benchmark")
        logger.logLevel = .warning
        if let sqlitePath { return try await SQLAccountStore.sqlite(path: sqlitePath, logger: logger) }
        return try await SQLAccountStore.postgres(url: postgresURL ?? "", logger: logger)
    }
}

/// Runs `call` `runs` times and answers each run's milliseconds, after three runs that warm the connections up.
func time<R>(runs: Int, _ call: () async throws -> R) async throws -> (milliseconds: [Double], last: R) {
    var last = try await call()
    for _ in 0..<2 { last = try await call() }
    var milliseconds: [Double] = []
    let clock = ContinuousClock()
    for _ in 0..<runs {
        let start = clock.now
        last = try await call()
        let elapsed = clock.now - start
        milliseconds.append(
            Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15
        )
    }
    return (milliseconds, last)
}

func row(_ label: String, _ milliseconds: [Double], _ note: String) {
    let sorted = milliseconds.sorted()
    let median = sorted[sorted.count / 2]
    let max = sorted.last ?? 0
    let cells = [label, String(format: "%.2f", median), String(format: "%.2f", max), note]
    print("| " + cells.joined(separator: " | ") + " |")
}

let options = try Options(Array(CommandLine.arguments.dropFirst()))
let store = try await options.open()
do {
    switch options.command {
    case "prepare":
        print("schema version \(try await store.appliedSchemaVersion())")
    default:
        let totals = try await store.accountTotals(createdSince: [])
        print("accounts: \(totals.total); \(options.runs) runs per row after 3 warm-up runs; milliseconds\n")
        print("| call | median | max | rows |")
        print("|---|---:|---:|---|")
        for query in options.queries {
            let (milliseconds, page) = try await time(runs: options.runs) {
                try await store.searchUsers(query, limit: 50, after: nil)
            }
            row("`searchUsers(\"\(query)\", limit: 50)`", milliseconds, "\(page.items.count)")
        }
        // Paging on: the 20th page of the first query, each page from the previous one's cursor.
        if let query = options.queries.first {
            var cursor: PageCursor?
            var pages: [Double] = []
            let clock = ContinuousClock()
            for _ in 0..<20 {
                let start = clock.now
                let page = try await store.searchUsers(query, limit: 50, after: cursor)
                let elapsed = clock.now - start
                pages.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1_000)
                cursor = page.next
            }
            row("pages 1–20 of `\"\(query)\"`, by cursor", pages, "50 each")
        }
        let now = Date()
        let (totalsTimes, counted) = try await time(runs: min(options.runs, 10)) {
            try await store.accountTotals(createdSince: [
                now.addingTimeInterval(-86_400), now.addingTimeInterval(-7 * 86_400),
            ])
        }
        row("`accountTotals` (total, 24 h, 7 d)", totalsTimes, "\(counted.total)")
        let types: Set<AuditEventType> = [.signIn, .signInRefused, .accountCreated, .refreshTokenReuse]
        let month = (from: now.addingTimeInterval(-30 * 86_400), until: now)
        // The first call counts the settled days and keeps their counts; the later ones read those.
        let clock = ContinuousClock()
        let start = clock.now
        _ = try await store.auditEventCounts(from: month.from, until: month.until, types: types, now: now)
        let first = clock.now - start
        row(
            "`auditEventCounts` (30 days, 4 types), first call",
            [Double(first.components.seconds) * 1_000 + Double(first.components.attoseconds) / 1e15],
            "counts and keeps 30 settled days"
        )
        let (countTimes, counts) = try await time(runs: min(options.runs, 10)) {
            try await store.auditEventCounts(from: month.from, until: month.until, types: types, now: now)
        }
        row(
            "`auditEventCounts` (30 days, 4 types)",
            countTimes,
            "\(counts.count) groups of \(counts.reduce(0) { $0 + $1.count }) events"
        )
        let (logTimes, _) = try await time(runs: options.runs) {
            try await store.auditEvents(AuditEventFilter(), limit: 50, after: nil)
        }
        row("`auditEvents` (no filter, 50)", logTimes, "50")
        let (refusedTimes, _) = try await time(runs: options.runs) {
            try await store.auditEvents(
                AuditEventFilter(types: [.signInRefused, .refreshTokenReuse]),
                limit: 50,
                after: nil
            )
        }
        row("`auditEvents` (2 types, 50)", refusedTimes, "50")
    }
    await store.shutdown()
} catch {
    await store.shutdown()
    throw error
}
