import AccountStore
import AccountStoreSQL
import AppleSignIn
import AppleSignInAsyncHTTPClient
import ArgumentParser
import AuthServer
import Foundation
import Logging

/// `siwa restore --reapply FILE`: does again, oldest first, what a restore undid and can be done again, through the
/// same services as the operator commands (so that each is audited again, by the operator). Safe to run twice: what
/// is done already is left as it is.
enum Reapply {
    static func run(_ file: String, _ options: StoreOptions) async throws {
        let header: Undone.Header
        let events: [Undone.Event]
        do {
            (header, events) = try Undone.parse(try Data(contentsOf: URL(fileURLWithPath: file)))
        } catch {
            Terminal.error("error: \(file) is no list a restore wrote (siwa-undone-….jsonl): \(error)")
            throw ExitCode(2)
        }
        try await withConfiguredStore(options, needsDataKey: true) { settings, store in
            var logger = Logger(label: "siwa")
            logger.logLevel = .error
            var done: [String: Int] = [:]
            var left: [String] = []
            let status = UsersCommand.statusService(store)
            for event in events {
                let user = event.userID.flatMap(UserID.init)
                switch AuditEventType(rawValue: event.type) {
                case .accountDisabled?:
                    if let user, try await status.disable(user) != nil { done["account(s) disabled", default: 0] += 1 }
                case .accountEnabled?:
                    if let user, try await status.enable(user) != nil { done["account(s) enabled", default: 0] += 1 }
                case .accountDeleted?:
                    guard let user, try await store.user(id: user) != nil else { continue }
                    _ = try await UsersCommand.Delete.delete(
                        user,
                        json: false,
                        settings: settings,
                        store: store,
                        transport: AsyncHTTPClientTransport(),
                        logger: logger
                    )
                    done["account(s) deleted", default: 0] += 1
                case .adminGranted?:
                    if let subject = event.details["subject"].flatMap(AdminSubject.init),
                        try await store.grantAdmin(subject, by: .operator, now: Date())
                    {
                        done["admin role(s) granted", default: 0] += 1
                    }
                case .adminRevoked?:
                    if let subject = event.details["subject"].flatMap(AdminSubject.init),
                        try await store.revokeAdmin(subject, by: .operator, now: Date())
                    {
                        done["admin role(s) revoked", default: 0] += 1
                    }
                case .adminTokenRevoked?:
                    if let name = event.details["token"],
                        try await store.revokeAdminToken(named: name, by: .operator, now: Date()) != nil
                    {
                        done["service token(s) revoked", default: 0] += 1
                    }
                case .sessionEnded?, .refreshTokenReuse?:
                    if let session = event.sessionID.flatMap(SessionID.init),
                        try await status.endSession(session, userID: user, reason: event.reason ?? "restore_reapplied")
                    {
                        done["session(s) ended", default: 0] += 1
                    }
                case .adminTokenCreated?:
                    left.append("service token \(event.details["token"] ?? "?") (create it again)")
                case .accountCreated?:
                    left.append("account \(event.userID ?? "?"), created since the backup")
                default:
                    left.append("\(event.type) at \(event.time.formatted(.iso8601))")
                }
            }
            // One rotation stands for those undone, unless a key newer than the backup is current already.
            let keys = try await store.signingKeys()
            if !header.signingKeysSince.isEmpty, !keys.contains(where: { $0.createdAt > header.backupTakenAt }) {
                let issuer = try await AccessTokenIssuer(
                    configuration: settings.server,
                    store: store,
                    sealer: settings.makeDataSealer(logger: logger),
                    clock: SystemWallClock()
                )
                try await issuer.rotate()
                done["signing key(s) rotated", default: 0] += 1
            }
            if done.isEmpty {
                print("re-applied nothing: everything in \(file) is as it was done already")
            } else {
                print(
                    "re-applied: "
                        + done.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
                )
            }
            for item in left { print("not re-applied: \(item)") }
        }
    }
}
