import AccountStore
import AccountStoreSQL
import AppleSignIn
import Logging

#if canImport(Glibc)
import Glibc
#endif

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `siwa-benchmarks store-pools POSTGRES_URL [SECONDS] [ROUNDS] [WORKERS]`: siwa's connection pool against
/// postgres-nio's `PostgresClient` on one PostgreSQL server, in one process, rounds alternating. Each operation is a
/// returning user's sign-in with its new session (one prepared statement), the rotation of that session's refresh
/// token (one prepared statement) and a web-flow state saved and consumed (a transaction through SQLKit): the request
/// path's three kinds of store work. Prints operations per second and this process's CPU time per operation.
nonisolated func runStorePools(arguments: [String]) async throws {
    guard let url = arguments.first else {
        print("usage: siwa-benchmarks store-pools POSTGRES_URL [SECONDS] [ROUNDS] [WORKERS]")
        exit(2)
    }
    let seconds = Double(arguments.dropFirst().first ?? "") ?? 5
    let rounds = Int(arguments.dropFirst(2).first ?? "") ?? 3
    let workers = Int(arguments.dropFirst(3).first ?? "") ?? 16
    let logger = Logger(label: "siwa.benchmarks") { _ in SwiftLogNoOpLogHandler() }
    print("store pools on PostgreSQL: \(rounds) rounds of \(seconds) s each, \(workers) concurrent workers")
    var results: [PostgresPooling: [(perSecond: Double, cpuMicroseconds: Double)]] = [:]
    for round in 1...rounds {
        for pooling in PostgresPooling.allCases {
            let schema = "bench_pools_\(pooling.rawValue.lowercased())_\(round)_\(UInt32.random(in: 0...UInt32.max))"
            let store = try await SQLAccountStore.postgres(
                url: url,
                schema: schema,
                maximumConnections: 8,  // docs/reliability.md's figures: 4 per event loop on 2 cores
                pooling: pooling,
                logger: logger
            )
            let result = try await storeLoad(store, seconds: seconds, workers: workers)
            await store.shutdown()
            results[pooling, default: []].append(result)
            let cpu = Int(result.cpuMicroseconds.rounded())
            print("  round \(round) \(pooling.rawValue): \(Int(result.perSecond.rounded())) ops/s, \(cpu) µs CPU/op")
        }
    }
    for pooling in PostgresPooling.allCases {
        let runs = results[pooling] ?? []
        let rates = runs.map(\.perSecond).sorted()
        let cpus = runs.map(\.cpuMicroseconds).sorted()
        print(
            "\(pooling.rawValue): median \(Int(rates[rates.count / 2].rounded())) ops/s "
                + "(range \(Int(rates.first!.rounded()))–\(Int(rates.last!.rounded()))), "
                + "median \(Int(cpus[cpus.count / 2].rounded())) µs CPU/op "
                + "(range \(Int(cpus.first!.rounded()))–\(Int(cpus.last!.rounded())))"
        )
    }
}

/// Runs the operation mix from `workers` tasks for `seconds` (after a warm-up); operations per second and CPU
/// microseconds (user + system, this process) per operation.
nonisolated private func storeLoad(
    _ store: SQLAccountStore,
    seconds: Double,
    workers: Int
) async throws -> (perSecond: Double, cpuMicroseconds: Double) {
    let clientID = ClientID("com.example.app")
    let users = (0..<workers).map { AppleUserID("001.pools.\($0)") }
    for user in users {
        _ = try await store.signIn(
            AppleSignInFacts(appleUserID: user, clientID: clientID),
            startingSession: nil,
            now: Date()
        )
    }
    @Sendable func operation(_ user: AppleUserID) async throws {
        let now = Date()
        let session = SessionID()
        let first = randomBytes()
        let outcome = try await store.signIn(
            AppleSignInFacts(appleUserID: user, clientID: clientID),
            startingSession: NewSession(
                sessionID: session,
                refreshTokenHash: first,
                issuedAt: now,
                expiresAt: now + 3600
            ),
            now: now
        )
        let next = RefreshTokenRecord(
            hash: randomBytes(),
            sessionID: session,
            userID: outcome.user.id,
            issuedAt: now,
            expiresAt: now + 3600
        )
        guard
            case .rotated = try await store.rotateRefreshToken(
                presentedHash: first,
                next: next,
                now: now,
                reuseGrace: 5
            )
        else { fatalError("the rotation did not rotate") }
        let state = randomBytes()
        try await store.saveWebFlowState(
            WebFlowState(stateHash: state, nonce: "n", returnURL: "/", createdAt: now, expiresAt: now + 600)
        )
        _ = try await store.consumeWebFlowState(stateHash: state, now: now)
    }
    for user in users { try await operation(user) }  // warm up: every connection opened, every statement prepared
    let deadline = ContinuousClock.now + .seconds(seconds)
    let cpuBefore = processCPUMicroseconds()
    let started = ContinuousClock.now
    let count = try await withThrowingTaskGroup(of: Int.self) { group in
        for user in users {
            group.addTask {
                var done = 0
                while ContinuousClock.now < deadline {
                    try await operation(user)
                    done += 1
                }
                return done
            }
        }
        return try await group.reduce(0, +)
    }
    let elapsed = ContinuousClock.now - started
    let cpu = processCPUMicroseconds() - cpuBefore
    let elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return (Double(count) / elapsedSeconds, cpu / Double(max(count, 1)))
}
