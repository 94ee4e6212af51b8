import AccountStore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The overview's numbers: account totals, and per UTC day sign-ins by channel, new accounts, refresh-token reuse and
/// refused sign-ins by reason, all read from the audit log (``AccountStore/auditEventCounts(from:until:types:now:)``).
struct AdminStatistics: Sendable {
    let store: any AccountStore
    let now: Date

    static let day: TimeInterval = 86_400

    /// The first instant of `date`'s UTC day.
    static func startOfDay(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / day).rounded(.down) * day)
    }

    /// `2026-11-24`: the date part of ``UserResponse/iso8601(_:)``'s UTC time.
    static func label(_ day: Date) -> String {
        String(UserResponse.iso8601(day).prefix(10))
    }

    func stats(days count: Int) async throws -> AdminAPIController.Stats {
        let today = Self.startOfDay(now)
        let first = today.addingTimeInterval(-Double(count - 1) * Self.day)
        let days = (0..<count).map { first.addingTimeInterval(Double($0) * Self.day) }
        let index = Dictionary(uniqueKeysWithValues: days.enumerated().map { ($1, $0) })
        let counts = try await store.auditEventCounts(
            from: first,
            until: now.addingTimeInterval(1),
            types: [.signIn, .accountCreated, .refreshTokenReuse, .signInRefused],
            now: now
        )
        var signIns: [String: [Int]] = [:]
        var refused: [String: [Int]] = [:]
        var newAccounts = Array(repeating: 0, count: count)
        var reuse = Array(repeating: 0, count: count)
        for item in counts {
            guard let position = index[Self.startOfDay(item.day)] else { continue }
            switch item.type {
            case .signIn:
                signIns[item.channel?.rawValue ?? "unknown", default: Array(repeating: 0, count: count)][position] +=
                    item.count
            case .accountCreated:
                newAccounts[position] += item.count
            case .refreshTokenReuse:
                reuse[position] += item.count
            case .signInRefused:
                refused[item.reason ?? "unknown", default: Array(repeating: 0, count: count)][position] += item.count
            default:
                break
            }
        }
        let since24Hours = now.addingTimeInterval(-Self.day)
        let since7Days = now.addingTimeInterval(-7 * Self.day)
        let totals = try await store.accountTotals(createdSince: [since24Hours, since7Days])
        return AdminAPIController.Stats(
            days: days.map(Self.label),
            accounts: .init(
                total: totals.total,
                newLast24Hours: totals.createdSince[since24Hours] ?? 0,
                newLast7Days: totals.createdSince[since7Days] ?? 0
            ),
            signInsByChannel: signIns,
            newAccounts: newAccounts,
            refreshTokenReuse: reuse,
            refusedSignInsByReason: refused
        )
    }
}
