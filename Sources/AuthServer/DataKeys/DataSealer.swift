public import AppleSignIn
public import Crypto
public import Logging
public import ServiceLifecycle
import Synchronization

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Seals secrets kept at rest (Apple refresh tokens, access-token signing keys) with AES-256-GCM under the data keys.
///
/// The ring's first key seals; every key of the ring opens. Sealed data names its key: `siwa` and version 2 (5 bytes),
/// then the 8-byte ``DataKeyID``, then AES-GCM's combined box (12-byte nonce, ciphertext, 16-byte tag), with the
/// 13-byte header authenticated as associated data. Data sealed before key ids (siwa 0.3: the combined box alone) is
/// opened by trying the ring's keys, so existing databases keep working without a migration.
///
/// Keys read from a file are re-read when sealed data names a key the ring lacks (at most once every
/// ``reloadInterval``), when the file changes and on SIGHUP (``reloader(interval:logger:)``): `siwa keys
/// rotate-data-key` adds a key to the file and re-seals while servers run, and they pick the new key up. Keys from a
/// setting are fixed until restart.
///
/// - Warning: The sealer holds the keys; it never prints or logs them (only their ids).
public final class DataSealer: Sendable {
    /// Where the keys come from.
    public enum Source: Sendable, Equatable {
        /// A key file, re-read when it changes.
        case file(String)
        /// A setting read at start (named here, for messages: `SIWA_DATA_KEY`), fixed until restart.
        case setting(String)
    }

    /// Sealed data that cannot be opened, or a key file that cannot be read again; names key ids, never keys.
    public struct Failure: Error, CustomStringConvertible, Equatable {
        public struct Code: Hashable, Sendable, CustomStringConvertible {
            private enum Value: String { case unknownKey, notOpened, keyFileUnreadable, sealingFailed }
            private let value: Value
            private init(_ value: Value) { self.value = value }

            /// The data names a key the ring does not hold.
            public static let unknownKey = Code(.unknownKey)
            /// The data does not open under its key (changed or damaged), or, from before key ids, under any key.
            public static let notOpened = Code(.notOpened)
            /// The key file could not be read again; the keys read before stay.
            public static let keyFileUnreadable = Code(.keyFileUnreadable)
            public static let sealingFailed = Code(.sealingFailed)

            public var description: String { value.rawValue }
        }

        public let code: Code
        /// The key the data names, when it names one.
        public let keyID: DataKeyID?
        public let reason: String

        public var description: String { reason }

        public static func == (lhs: Failure, rhs: Failure) -> Bool { lhs.code == rhs.code }
    }

    /// How soon after one re-read of the key file, for data naming a key the ring lacks, another may follow.
    public static let reloadInterval: TimeInterval = 2

    public let source: Source
    private let ring: Mutex<DataKeyRing>
    /// Held while the key file is re-read, so that racing misses read it once.
    private let reloads: Mutex<ReloadState>
    private let clock: any WallClock
    private let logger: Logger

    private struct ReloadState {
        var lastMissReload: Date?
        var stamp: FileStamp?
    }

    static let magic: [UInt8] = Array("siwa".utf8)
    static let version: UInt8 = 2
    static let headerCount = magic.count + 1 + DataKeyID.byteCount

    /// - Parameters:
    ///   - keys: the ring, read from `source`.
    ///   - source: where `keys` came from; a file is re-read when needed.
    ///   - clock: paces re-reads of the key file.
    ///   - logger: says when the keys were re-read (their ids only).
    public init(
        keys: DataKeyRing,
        source: Source,
        clock: any WallClock = SystemWallClock(),
        logger: Logger = Logger(label: "siwa")
    ) {
        self.source = source
        self.ring = Mutex(keys)
        if case .file(let path) = source {
            self.reloads = Mutex(ReloadState(stamp: FileStamp(path)))
        } else {
            self.reloads = Mutex(ReloadState())
        }
        self.clock = clock
        self.logger = logger
    }

    /// A sealer with one fixed key (tests, the demo).
    public convenience init(key: SymmetricKey) {
        self.init(keys: DataKeyRing(key: key), source: .setting("the data key"))
    }

    /// The keys as they are now.
    public var keys: DataKeyRing { ring.withLock { $0 } }

    /// Seals `plaintext` under the sealing key, naming it in the header.
    public func seal(_ plaintext: [UInt8]) throws(Failure) -> [UInt8] {
        let key = keys.primary
        let header = Self.magic + [Self.version] + key.id.bytes
        guard let box = try? AES.GCM.seal(plaintext, using: key.key, authenticating: header),
            let combined = box.combined
        else {
            throw Failure(code: .sealingFailed, keyID: key.id, reason: "sealing under data key \(key.id) failed")
        }
        return header + Array(combined)
    }

    /// Opens data this sealer (or siwa 0.3's) sealed. When it names a key the ring lacks and the keys come from a file,
    /// the file is read again (at most once every ``reloadInterval``) and the data tried once more.
    /// - Throws: ``Failure/Code/unknownKey`` naming the key id and what to do; ``Failure/Code/notOpened``.
    public func open(_ sealed: [UInt8]) throws(Failure) -> [UInt8] {
        let tried = keys
        var attempt = Self.attempt(sealed, with: tried)
        switch attempt {
        case .opened(let plaintext):
            return plaintext
        case .unknownKey, .notOpened(nil):
            // A key the ring lacks: the file may have gained it since (a rotation while this instance runs).
            guard let reloaded = reloadAfterMiss(tried: tried) else { break }
            attempt = Self.attempt(sealed, with: reloaded)
            if case .opened(let plaintext) = attempt { return plaintext }
        case .notOpened:
            break
        }
        throw failure(attempt)
    }

    /// Which key sealed `sealed`: the one its header names (``SealingKey/named(_:)``), or, for data from before key
    /// ids, the ring's key that opens it (``SealingKey/unnamed(_:)``, `nil` when none does).
    public func sealingKey(of sealed: [UInt8]) -> SealingKey {
        if let id = Self.headerKeyID(sealed) { return .named(id) }
        guard let box = try? AES.GCM.SealedBox(combined: sealed) else { return .unnamed(nil) }
        return .unnamed(keys.keys.first { (try? AES.GCM.open(box, using: $0.key)) != nil }?.id)
    }

    /// The key that sealed some data, as ``sealingKey(of:)`` finds it.
    public enum SealingKey: Hashable, Sendable {
        /// The data's header names this key (it may be missing from the ring).
        case named(DataKeyID)
        /// The data has no header (sealed by siwa 0.3); the ring's key that opens it, if one does.
        case unnamed(DataKeyID?)

        /// The key's id, when known.
        public var id: DataKeyID? {
            switch self {
            case .named(let id): id
            case .unnamed(let id): id
            }
        }
    }

    // MARK: Opening

    private enum Attempt {
        case opened([UInt8])
        /// The data names a key the ring lacks.
        case unknownKey(DataKeyID)
        /// The data does not open under the key it names (`nil`: has no header and opens under no key).
        case notOpened(DataKeyID?)
    }

    /// The key id of a sealed header, if `sealed` starts with one.
    private static func headerKeyID(_ sealed: [UInt8]) -> DataKeyID? {
        guard sealed.count > headerCount, sealed.starts(with: magic + [version]) else { return nil }
        return DataKeyID(bytes: sealed[(magic.count + 1)..<headerCount])
    }

    private static func attempt(_ sealed: [UInt8], with ring: DataKeyRing) -> Attempt {
        if let id = headerKeyID(sealed) {
            if let key = ring.key(id),
                let box = try? AES.GCM.SealedBox(combined: sealed[headerCount...]),
                let plaintext = try? AES.GCM.open(box, using: key.key, authenticating: sealed[..<headerCount])
            {
                return .opened(Array(plaintext))
            }
            // Data from before key ids whose random nonce happens to start like a header.
            if let plaintext = openLegacy(sealed, with: ring) { return .opened(plaintext) }
            return ring.key(id) == nil ? .unknownKey(id) : .notOpened(id)
        }
        return openLegacy(sealed, with: ring).map(Attempt.opened) ?? .notOpened(nil)
    }

    /// Data from before key ids: AES-GCM's combined box alone, sealed by the one key of the time.
    private static func openLegacy(_ sealed: [UInt8], with ring: DataKeyRing) -> [UInt8]? {
        guard let box = try? AES.GCM.SealedBox(combined: sealed) else { return nil }
        for key in ring.keys {
            if let plaintext = try? AES.GCM.open(box, using: key.key) { return Array(plaintext) }
        }
        return nil
    }

    private func failure(_ attempt: Attempt) -> Failure {
        func fix(_ key: String) -> String {
            switch source {
            case .file(let path):
                "put \(key) back in \(path) on every instance (from your backup of it)"
            case .setting(let name):
                "restart with \(name) listing \(key) (the first key seals, the others only open)"
            }
        }
        switch attempt {
        case .opened:
            preconditionFailure("an opened attempt is no failure")
        case .unknownKey(let id):
            return Failure(
                code: .unknownKey,
                keyID: id,
                reason: "the data was sealed under data key \(id), which this instance does not have: "
                    + fix("that key")
            )
        case .notOpened(let id?):
            return Failure(
                code: .notOpened,
                keyID: id,
                reason: "the data sealed under data key \(id) does not open under it: it was changed or damaged"
            )
        case .notOpened(nil):
            return Failure(
                code: .notOpened,
                keyID: nil,
                reason: "the data, sealed before data keys had ids, opens under none of \(keys): "
                    + fix("the key of that time")
            )
        }
    }

    // MARK: Re-reading the key file

    /// The service that re-reads the key file on SIGHUP and when it changes (checked every `interval`), so that a key
    /// `siwa keys rotate-data-key` added seals on every instance within that time; `nil` for keys from a setting.
    public func reloader(interval: Duration, logger: Logger) -> (some Service)? {
        guard case .file = source else { return Optional<ReloadLoop>.none }
        return ReloadLoop(interval: interval) { [self] force, why in
            do {
                try reload(force: force, why: why)
            } catch {
                logger.error("kept the data keys read before: \(error)")
            }
        }
    }

    /// After data failed to open with `tried`: the keys to try again with, when they changed since (another caller
    /// re-read the file) or a re-read of the file is due; `nil` otherwise (and always for keys from a setting).
    private func reloadAfterMiss(tried: DataKeyRing) -> DataKeyRing? {
        guard case .file(let path) = source else { return nil }
        return reloads.withLock { state -> DataKeyRing? in
            let current = keys
            if current.ids != tried.ids { return current }
            let now = clock.now
            if let last = state.lastMissReload, abs(now.timeIntervalSince(last)) < Self.reloadInterval { return nil }
            state.lastMissReload = now
            do {
                return try reload(path, &state, force: true, why: "sealed data names a key this instance lacks")
                    ? keys : nil
            } catch {
                logger.error("kept the data keys read before: \(error)")
                return nil
            }
        }
    }

    /// Reads the key file again if it changed since the last read (or always, when `force`); returns whether the keys
    /// changed. Keys from a setting never change.
    /// - Throws: ``Failure/Code/keyFileUnreadable`` when the file is gone or malformed; the keys read before stay.
    @discardableResult
    public func reload(force: Bool = false, why: String = "asked") throws(Failure) -> Bool {
        guard case .file(let path) = source else { return false }
        return try reloads.withLock { state throws(Failure) -> Bool in
            try reload(path, &state, force: force, why: why)
        }
    }

    private func reload(_ path: String, _ state: inout ReloadState, force: Bool, why: String) throws(Failure) -> Bool {
        let stamp = FileStamp(path)
        if !force, stamp == state.stamp { return false }
        // Kept also when the read fails, so that a broken file is reported once per change, not at every check.
        state.stamp = stamp
        let read: DataKeyRing?
        do {
            read = try DataKeyRing.read(file: path)
        } catch {
            throw Failure(code: .keyFileUnreadable, keyID: nil, reason: "\(error)")
        }
        guard let read else {
            throw Failure(code: .keyFileUnreadable, keyID: nil, reason: "\(path) cannot be read")
        }
        let changed = ring.withLock { ring -> Bool in
            guard ring.ids != read.ids else { return false }
            ring = read
            return true
        }
        if changed {
            logger.info(
                "re-read the data keys",
                metadata: [
                    "why": "\(why)", "file": "\(path)", "keys": "\(read.ids.map(\.description).joined(separator: ","))",
                    "seals": "\(read.primary.id)",
                ]
            )
        }
        return changed
    }
}
