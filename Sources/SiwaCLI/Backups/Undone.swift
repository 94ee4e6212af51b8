import AccountStore
import AccountStoreSQL
import Foundation
import Logging

/// What happened in a database after its backup, read from the database a restore replaces: its audit events since
/// the backup's newest, and the signing keys made since. A restore lists it, writes it as JSON lines
/// (`siwa-undone-<time>.jsonl`: a header, then one event a line, oldest first), and `--reapply` reads it back.
struct Undone {
    /// The events since the backup, oldest first; `nil` when they could not be read.
    var events: [Event]?
    /// Why ``events`` is `nil`.
    var unknownBecause: String?
    /// The signing keys in the replaced database that the backup lacks.
    var signingKeysSince: [String] = []
    /// The replaced database's last lifecycle event sequence, which the restored one continues after.
    var lastEventSequence: Int64?

    /// One audit event as the file keeps it: ids and codes only, as the audit log does.
    struct Event: Codable, Equatable {
        var id: UUID
        var time: Date
        var type: String
        var userID: String?
        var actor: String
        var actorID: String?
        var sessionID: String?
        var reason: String?
        var details: [String: String]

        init(_ event: AuditEvent) {
            id = event.id
            time = event.time
            type = event.type.rawValue
            userID = event.userID?.description
            actor = event.actor.kind
            actorID = event.actor.storedSubject
            sessionID = event.sessionID?.description
            reason = event.reason
            details = event.details
        }
    }

    /// The file's first line.
    struct Header: Codable {
        var undone = "siwa restore"
        var backupTakenAt: Date
        var signingKeysSince: [String]
    }

    /// The events kept: what re-applying or the operator needs (sign-ins and refusals are left out: a restore does
    /// not need them back).
    static let types: Set<AuditEventType> = [
        .accountCreated, .accountDisabled, .accountEnabled, .accountDeleted, .adminGranted, .adminRevoked,
        .adminTokenCreated, .adminTokenRevoked, .sessionEnded, .refreshTokenReuse, .appleNotificationApplied,
        .transferCompleted, .clientConsentGranted,
    ]

    /// Reads what the database the settings name holds beyond the backup, as it is now (before the restore). A
    /// database that is gone, or that this siwa cannot read, gives no events and says why.
    static func read(_ settings: ServerSettings, manifest: BackupManifest, logger: Logger) async -> Undone {
        var quiet = logger
        quiet.logLevel = .error
        let store: SQLAccountStore
        do {
            let version = try await StoreFactory.schemaVersion(settings, logger: quiet)
            guard version == SQLAccountStore.schemaVersion else {
                return Undone(
                    unknownBecause: version == 0
                        ? "the database it replaced was empty or missing"
                        : "the database it replaced has schema version \(version), which this siwa does not read"
                )
            }
            store = try await StoreFactory.openExisting(settings, logger: quiet)
        } catch {
            return Undone(unknownBecause: "the database it replaced could not be read (\(error.reason))")
        }
        do {
            var events: [Event] = []
            var cursor: PageCursor?
            let filter = AuditEventFilter(types: types, since: manifest.newestAuditEvent?.time)
            repeat {
                let page = try await store.auditEvents(filter, limit: 500, after: cursor)
                events += page.items.filter { $0.id != manifest.newestAuditEvent?.id }.map(Event.init)
                cursor = page.next
            } while cursor != nil
            let keys = try await store.signingKeys().map(\.kid).filter { !manifest.signingKeys.contains($0) }
            let sequence = try await store.lastLifecycleEventSequence()
            await store.shutdown()
            return Undone(events: events.reversed(), signingKeysSince: keys, lastEventSequence: sequence)
        } catch {
            await store.shutdown()
            return Undone(unknownBecause: "the replaced database's audit log could not be read (\(error.reason))")
        }
    }

    /// The ids of the audit events the database holds since `time` (all, for `nil`): after a restore, those the
    /// backup brought back.
    static func eventIDs(_ settings: ServerSettings, since time: Date?, logger: Logger) async -> Set<UUID> {
        var quiet = logger
        quiet.logLevel = .error
        guard (try? await StoreFactory.schemaVersion(settings, logger: quiet)) == SQLAccountStore.schemaVersion,
            let store = try? await StoreFactory.openExisting(settings, logger: quiet)
        else { return [] }
        var ids: Set<UUID> = []
        var cursor: PageCursor?
        repeat {
            guard let page = try? await store.auditEvents(AuditEventFilter(since: time), limit: 500, after: cursor)
            else { break }
            ids.formUnion(page.items.map(\.id))
            cursor = page.next
        } while cursor != nil
        await store.shutdown()
        return ids
    }

    /// One line per kind of change, with how many and what re-applying does about it.
    var summary: [String] {
        guard let events else { return [] }
        func count(_ type: AuditEventType) -> Int { events.filter { $0.type == type.rawValue }.count }
        func names(_ type: AuditEventType) -> String {
            events.filter { $0.type == type.rawValue }.compactMap { $0.details["token"] }.joined(separator: ", ")
        }
        var lines: [String] = []
        let rows: [(AuditEventType, String)] = [
            (
                .accountCreated,
                "account(s) created: gone, not re-applied (they sign in again as new accounts; the name "
                    + "Apple sends once is lost)"
            ),
            (.accountDisabled, "account(s) disabled: active again until re-applied"),
            (.accountEnabled, "account(s) enabled: disabled again until re-applied"),
            (
                .accountDeleted,
                "account(s) deleted: back until re-applied (which deletes them again, and revokes at Apple)"
            ),
            (.adminGranted, "admin role(s) granted: gone until re-applied"),
            (.adminRevoked, "admin role(s) revoked: held again until re-applied"),
            (.sessionEnded, "session(s) ended: their refresh tokens work again until re-applied"),
            (.refreshTokenReuse, "refresh-token reuse(s): those sessions work again until re-applied"),
            (.appleNotificationApplied, "Apple notification(s) applied: not re-applied (see the audit log copy)"),
            (.transferCompleted, "team transfer(s) completed: not re-applied (import the transfer again)"),
            (.clientConsentGranted, "OpenID consent(s) given: not re-applied (the users are asked again)"),
        ]
        for (type, text) in rows where count(type) > 0 { lines.append("\(count(type)) \(text)") }
        if count(.adminTokenCreated) > 0 {
            lines.append(
                "\(count(.adminTokenCreated)) service token(s) created: gone, not re-applied (create them again): "
                    + names(.adminTokenCreated)
            )
        }
        if count(.adminTokenRevoked) > 0 {
            lines.append(
                "\(count(.adminTokenRevoked)) service token(s) revoked: valid again until re-applied: "
                    + names(.adminTokenRevoked)
            )
        }
        if !signingKeysSince.isEmpty {
            lines.append(
                "\(signingKeysSince.count) signing key(s) made since: gone, their access tokens are refused; "
                    + "re-applying rotates once"
            )
        }
        return lines
    }

    /// The file `--reapply` reads.
    func jsonLines(backupTakenAt: Date) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        var data = try encoder.encode(Header(backupTakenAt: backupTakenAt, signingKeysSince: signingKeysSince))
        data.append(0x0A)
        for event in events ?? [] {
            data.append(try encoder.encode(event))
            data.append(0x0A)
        }
        return data
    }

    /// Reads a file ``jsonLines(backupTakenAt:)`` wrote.
    static func parse(_ data: Data) throws -> (Header, [Event]) {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let lines = data.split(separator: 0x0A).filter { !$0.isEmpty }
        guard let first = lines.first else { throw ServerSettings.Problem(variable: "FILE", fix: "the file is empty") }
        let header = try decoder.decode(Header.self, from: Data(first))
        return (header, try lines.dropFirst().map { try decoder.decode(Event.self, from: Data($0)) })
    }
}
