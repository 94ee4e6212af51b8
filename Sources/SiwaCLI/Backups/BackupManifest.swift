import AccountStore
import AccountStoreSQL
import AuthServer
import Crypto
import Foundation

/// What `siwa backup` writes beside each backup (`<backup>.json`, 0600): what the backup holds and as of when, so that
/// `siwa restore` can say what restoring it undoes and check the data keys before anything is replaced.
struct BackupManifest: Codable, Equatable {
    /// The backup's file name, in the same folder.
    var file: String
    /// The SHA-256 of the file, hex: a restore refuses a file that is not the one backed up.
    var sha256: String
    /// `sqlite` or `postgres`.
    var engine: String
    /// The database, as the commands' first line names it (never a password).
    var database: String
    var takenAt: Date
    var siwaVersion: String
    var schemaVersion: Int
    /// The newest audit event in the backup (its time and id): every later event is something a restore undoes.
    var newestAuditEvent: AuditMark?
    /// The signing keys in the backup, oldest first.
    var signingKeys: [String]
    /// The sealed items by the data key that seals them (hex id): the key file must hold each to open the backup.
    var sealedItems: [String: Int]

    struct AuditMark: Codable, Equatable {
        var id: UUID
        var time: Date
    }

    /// The manifest's path for the backup at `path`.
    static func path(of backup: String) -> String { backup + ".json" }

    /// The hex SHA-256 of the file at `path`, read in pieces.
    static func sha256(of path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ServerSettings.Problem(variable: path, fix: "cannot read \(path)")
        }
        defer { try? handle.close() }
        var hash = SHA256()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { hash.update(data: chunk) }
        return hash.finalize().map { String(format: "%02x", $0) }.joined()
    }

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    static func read(_ path: String) throws -> BackupManifest {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(BackupManifest.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Writes the manifest 0600, replacing the file in one step.
    func write(to path: String) throws {
        let data = try Self.encoder().encode(self) + Data("\n".utf8)
        try Self.writePrivately(data, to: path)
    }

    /// Writes `data` to `path` (0600) through a temporary file beside it, renamed into place.
    static func writePrivately(_ data: Data, to path: String) throws {
        let temporary = path + ".partial"
        unlink(temporary)
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600])
        else {
            throw ServerSettings.Problem(variable: path, fix: "cannot write \(temporary)")
        }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw ServerSettings.Problem(
                variable: path,
                fix: "cannot rename \(temporary): \(String(cString: strerror(errno)))"
            )
        }
    }

    /// The facts of the manifest that the store holds: its schema version, newest audit event, signing keys and sealed
    /// items by key.
    static func facts(
        of store: SQLAccountStore,
        settings: ServerSettings
    ) async throws -> (schema: Int, audit: AuditMark?, keys: [String], census: DataResealer.Census) {
        let schema = try await store.appliedSchemaVersion()
        let newest = try await store.auditEvents(AuditEventFilter(), limit: 1, after: nil).items.first
        let keys = try await store.signingKeys().map(\.kid)
        let census = try await DataResealer(store: store, sealer: settings.quietDataSealer).census(batchSize: 2_000)
        return (schema, newest.map { AuditMark(id: $0.id, time: $0.time) }, keys, census)
    }
}

extension DataResealer.Census {
    /// The items by key id, hex, those under keys the ring lacks included.
    var byKeyText: [String: Int] {
        var items: [String: Int] = [:]
        for (id, count) in byKey { items[id.description] = count }
        for (id, count) in byMissingKey { items[id.description] = count }
        return items
    }
}
