import CSQLite3
import Crypto
import CryptoExtras
import Foundation

// The work a returning user's sign-in cannot avoid, and a refresh's, each measured alone on this thread (run it with
// `taskset -c 0`): Apple's RSA-2048 signature checked once, siwa's ES256 access token signed once, the SHA-256 hashes
// (the identity token for the replay guard, the refresh tokens), the random bytes of new tokens, and one committed
// SQLite transaction in WAL mode (synchronous=NORMAL, as siwa runs it) writing what siwa's sign-in writes (the
// account's last sign-in, a session with its metadata, its refresh token, an audit event) or its refresh (the used
// token marked, a new one, the session's last use), with statements prepared once and new ids made as siwa makes them
// (time-ordered, one `getrandom` each; until 2026-11-25 Foundation's `UUID()`, about 15 µs each on Linux, which
// made the sign-in write's floor some 30 µs too high). Prints one JSON object per line:
// {"name", "us"} (the median of 7 batches, CPU microseconds per operation).
//
//   siwa-floor FOLDER      (FOLDER holds the SQLite file; made if missing)
//   FLOOR_PRAGMAS="PRAGMA wal_autocheckpoint=4000" siwa-floor FOLDER    (SQLite settings to try, after siwa's own)

let folder = CommandLine.arguments.dropFirst().first ?? NSTemporaryDirectory()
try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)

/// This thread's CPU time in nanoseconds: what the server's figures are too (CPU per request), and unlike the wall
/// clock, not stretched when another process has the core.
func cpuNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// Runs `body` in 7 batches of `count` after a warm-up; the median batch's CPU microseconds per call.
func measure(_ name: String, count: Int, _ body: () throws -> Void) rethrows {
    for _ in 0..<max(10, count / 10) { try body() }
    var batches: [Double] = []
    for _ in 0..<7 {
        let start = cpuNanoseconds()
        for _ in 0..<count { try body() }
        batches.append(Double(cpuNanoseconds() - start) / 1_000 / Double(count))
    }
    let median = batches.sorted()[3]
    print(#"{"name":"\#(name)","us":\#((median * 100).rounded() / 100)}"#)
}

// An identity token's size: header and claims of ~700 bytes signed with RSA-2048 (Apple's key size).
let rsaKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
let identityToken = Array(String(repeating: "eyJraWQiOiJBSURPUEsxIiwiYWxnIjoiUlMyNTYifQ", count: 16).utf8)
let rsaSignature = try rsaKey.signature(for: identityToken, padding: .insecurePKCS1v1_5)
let rsaPublic = rsaKey.publicKey
measure("rsa2048_verify", count: 2_000) {
    precondition(rsaPublic.isValidSignature(rsaSignature, for: identityToken, padding: .insecurePKCS1v1_5))
}

// siwa's access token: ~300 bytes of header and claims signed ES256.
let ecKey = P256.Signing.PrivateKey()
let accessToken = Array(String(repeating: "x", count: 300).utf8)
try measure("es256_sign", count: 2_000) { _ = try ecKey.signature(for: accessToken) }

measure("sha256_identity_token", count: 20_000) { _ = SHA256.hash(data: identityToken) }
let thirtyTwo = [UInt8](repeating: 7, count: 32)
measure("sha256_32", count: 50_000) { _ = SHA256.hash(data: thirtyTwo) }
var generator = SystemRandomNumberGenerator()
measure("random32", count: 50_000) {
    var bytes = [UInt8](repeating: 0, count: 32)
    for index in 0..<4 {
        withUnsafeBytes(of: generator.next()) { bytes.replaceSubrange(index * 8..<index * 8 + 8, with: $0) }
    }
}

// SQLite: WAL, synchronous=NORMAL, statements prepared once.
let path = folder + "/floor.sqlite"
for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
var database: OpaquePointer?
precondition(sqlite3_open(path, &database) == SQLITE_OK)
func execute(_ sql: String) {
    var error: UnsafeMutablePointer<CChar>?
    guard sqlite3_exec(database, sql, nil, nil, &error) == SQLITE_OK else {
        fatalError("\(sql): \(String(cString: error!))")
    }
}
execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON")
if let pragmas = ProcessInfo.processInfo.environment["FLOOR_PRAGMAS"], !pragmas.isEmpty { execute(pragmas) }
execute(
    """
    CREATE TABLE users (id TEXT PRIMARY KEY, apple_user_id TEXT UNIQUE, email TEXT, last_sign_in_at BIGINT,
        updated_at BIGINT);
    CREATE TABLE sessions (id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users (id), created_at BIGINT,
        revoked_at BIGINT, last_used_at BIGINT, channel TEXT, user_agent TEXT, client_address TEXT);
    CREATE INDEX sessions_by_user ON sessions (user_id);
    CREATE TABLE refresh_tokens (hash TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions (id),
        user_id TEXT NOT NULL, issued_at BIGINT, expires_at BIGINT, used_at BIGINT);
    CREATE INDEX refresh_tokens_by_session ON refresh_tokens (session_id);
    CREATE INDEX refresh_tokens_by_expiry ON refresh_tokens (expires_at);
    CREATE TABLE audit_events (id TEXT PRIMARY KEY, occurred_at BIGINT, type TEXT, user_id TEXT, actor TEXT,
        channel TEXT, client_id TEXT, session_id TEXT, details TEXT);
    CREATE INDEX audit_by_user ON audit_events (user_id, occurred_at);
    CREATE INDEX audit_by_time ON audit_events (occurred_at);
    """
)
func prepare(_ sql: String) -> OpaquePointer {
    var statement: OpaquePointer?
    precondition(sqlite3_prepare_v3(database, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK)
    return statement!
}
let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
func run(_ statement: OpaquePointer, _ values: [Any]) {
    for (index, value) in values.enumerated() {
        switch value {
        case let text as String: sqlite3_bind_text(statement, Int32(index + 1), text, -1, transient)
        case let number as Int: sqlite3_bind_int64(statement, Int32(index + 1), Int64(number))
        default: sqlite3_bind_null(statement, Int32(index + 1))
        }
    }
    precondition(sqlite3_step(statement) == SQLITE_DONE, String(cString: sqlite3_errmsg(database)))
    sqlite3_reset(statement)
}
let begin = prepare("BEGIN IMMEDIATE")
let commit = prepare("COMMIT")
let touchUser = prepare("UPDATE users SET last_sign_in_at = ?, updated_at = ? WHERE apple_user_id = ?")
let insertSession = prepare(
    "INSERT INTO sessions (id, user_id, created_at, channel, user_agent, client_address) VALUES (?, ?, ?, ?, ?, ?)"
)
let insertToken = prepare(
    "INSERT INTO refresh_tokens (hash, session_id, user_id, issued_at, expires_at) VALUES (?, ?, ?, ?, ?)"
)
let insertEvent = prepare(
    """
    INSERT INTO audit_events (id, occurred_at, type, user_id, actor, channel, client_id, session_id, details)
    VALUES (?, ?, 'sign_in', ?, 'user', 'native', 'com.example.app', ?, '{"account":"returning"}')
    """
)
let useToken = prepare("UPDATE refresh_tokens SET used_at = ? WHERE hash = ? AND used_at IS NULL")
let touchSession = prepare("UPDATE sessions SET last_used_at = ? WHERE id = ?")

let userIDs = (0..<1_000).map { _ in UUID().uuidString.lowercased() }
execute("BEGIN")
for (index, id) in userIDs.enumerated() {
    execute("INSERT INTO users (id, apple_user_id, email) VALUES ('\(id)', 'apple.\(index)', 'u\(index)@example.com')")
}
execute("COMMIT")
/// A new refresh token's stored form: the hex SHA-256 of 32 random bytes.
let digits = Array("0123456789abcdef".utf8)
func hex() -> String {
    var random = SystemRandomNumberGenerator()
    let bytes = (0..<4).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }
    var text: [UInt8] = []
    text.reserveCapacity(64)
    for byte in SHA256.hash(data: bytes) {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 15)])
    }
    return String(decoding: text, as: UTF8.self)
}
/// A new session's or audit event's id as siwa makes them: a time-ordered UUID (version 7: the milliseconds, a counter,
/// 62 random bits from one `getrandom` call) in lower-case text. Rows keyed by such ids land at the end of their
/// indexes. (Foundation's `UUID()` on Linux would open and read `/dev/urandom` for each, which siwa does not pay.)
var lastMilliseconds: UInt64 = 0
var counter: UInt64 = 0
func timeOrderedID() -> String {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let milliseconds = UInt64(now.tv_sec) * 1_000 + UInt64(now.tv_nsec) / 1_000_000
    if milliseconds > lastMilliseconds {
        (lastMilliseconds, counter) = (milliseconds, 0)
    } else if counter < 0xFFF {
        counter += 1
    } else {
        (lastMilliseconds, counter) = (lastMilliseconds + 1, 0)  // 4,096 ids in one millisecond: the next one
    }
    var random = SystemRandomNumberGenerator()
    let high = lastMilliseconds << 16 | 0x7000 | counter
    let low = (random.next() as UInt64) & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
    var text: [UInt8] = []
    text.reserveCapacity(36)
    for (index, word) in [high, low].enumerated() {
        for byte in 0..<8 {
            if (index == 0 && (byte == 4 || byte == 6)) || (index == 1 && (byte == 0 || byte == 2)) {
                text.append(UInt8(ascii: "-"))
            }
            let value = UInt8(truncatingIfNeeded: word >> UInt64(56 - 8 * byte))
            text.append(digits[Int(value >> 4)])
            text.append(digits[Int(value & 15)])
        }
    }
    return String(decoding: text, as: UTF8.self)
}
var sessions: [(session: String, token: String)] = []
var round = 0
measure("sqlite_sign_in_write", count: 2_000) {
    round += 1
    let user = round % userIDs.count
    let session = timeOrderedID()
    let token = hex()
    let now = 1_700_000_000_000 + round
    run(begin, [])
    run(touchUser, [now, now, "apple.\(user)"])
    run(insertSession, [session, userIDs[user], now, "native", "siwa/0.1 (iPhone; iOS 18.1)", "203.0.113.7"])
    run(insertToken, [token, session, userIDs[user], now, now + 2_592_000_000])
    run(insertEvent, [timeOrderedID(), now, userIDs[user], session])
    run(commit, [])
    if sessions.count < 20_000 { sessions.append((session, token)) }
}
// Sessions refresh in the order they were made, as in the load's refresh route (peers.sh signs a batch of sessions
// in, then wrk's connections take turns through them).
var refreshIndex = 0
measure("sqlite_refresh_write", count: 2_000) {
    refreshIndex += 1
    let (session, token) = sessions[refreshIndex % sessions.count]
    let next = hex()
    let now = 1_800_000_000_000 + refreshIndex
    run(begin, [])
    run(useToken, [now, token])
    run(insertToken, [next, session, userIDs[refreshIndex % userIDs.count], now, now + 2_592_000_000])
    run(touchSession, [now, session])
    run(commit, [])
    sessions[refreshIndex % sessions.count].token = next
}
let plain = prepare("INSERT INTO audit_events (id, occurred_at, type, actor) VALUES (?, ?, 'floor', 'system')")
var plainIndex = 0
measure("sqlite_one_row_write", count: 2_000) {
    plainIndex += 1
    run(plain, [timeOrderedID(), plainIndex])
}
sqlite3_close(database)
