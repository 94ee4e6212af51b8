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

/// `siwa-benchmarks store-sqlite DIRECTORY [OPERATIONS] [WORKERS]`: the SQLite store's request-path writes alone, a
/// fixed number of times, in a new file in `DIRECTORY`: a returning user's sign-in that starts a session (what
/// `POST /api/auth/apple/native` asks of the store) followed by the rotation of that session's refresh token (what
/// `POST /api/auth/refresh` asks), from `WORKERS` concurrent tasks. Prints operations per second and this process's
/// CPU time per operation.
///
/// A fixed count, not a duration, so that `valgrind --tool=callgrind` counts the same work on every run: run it with
/// two counts and divide the difference in instructions by the difference in operations for the cost of one.
nonisolated func runStoreSQLite(arguments: [String]) async throws {
    guard let directory = arguments.first else {
        print("usage: siwa-benchmarks store-sqlite DIRECTORY [OPERATIONS] [WORKERS]")
        exit(2)
    }
    let operations = Int(arguments.dropFirst().first ?? "") ?? 5_000
    let workers = max(1, Int(arguments.dropFirst(2).first ?? "") ?? 16)
    let logger = Logger(label: "siwa.benchmarks") { _ in SwiftLogNoOpLogHandler() }
    let path = "\(directory)/store-sqlite-\(UInt32.random(in: 0...UInt32.max)).sqlite"
    let store = try await SQLAccountStore.sqlite(path: path, logger: logger)
    let clientID = ClientID("com.example.app")
    let users = (0..<workers).map { AppleUserID("001.store.\($0)") }
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
            AppleSignInFacts(appleUserID: user, clientID: clientID, email: "\(user.rawValue)@privaterelay.appleid.com"),
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
    }
    for user in users { try await operation(user) }  // warm up: connections opened
    let cpuBefore = processCPUMicroseconds()
    let started = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for (index, user) in users.enumerated() {
            let share = operations / workers + (index < operations % workers ? 1 : 0)
            group.addTask { for _ in 0..<share { try await operation(user) } }
        }
        try await group.waitForAll()
    }
    let elapsed = ContinuousClock.now - started
    let cpu = processCPUMicroseconds() - cpuBefore
    await store.shutdown()
    for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    print(
        "store-sqlite: \(operations) sign-ins + rotations, \(workers) workers: "
            + "\(Int((Double(operations) / seconds).rounded())) ops/s, "
            + "\(Int((cpu / Double(max(operations, 1))).rounded())) µs CPU/op"
    )
}

/// 32 random bytes (a hash or token stand-in), in one system call as siwa makes its tokens (`UInt8.random` made one
/// `getrandom` call per byte, a sixteenth of this benchmark's CPU).
nonisolated func randomBytes() -> [UInt8] { SystemRandom.bytes(32) }

/// This process's CPU time (user + system) so far.
nonisolated func processCPUMicroseconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
}
