import AccountStore
import Hummingbird

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The typed fields of a request's query or form that the list routes and the admin's actions read (the admin API,
/// the console, ServiceStack's `/users`): one reading of each, and one refusal, 400 `invalid_field` naming the field.
enum RequestFields {
    /// How many items a page of a list holds when the request does not say.
    static let pageLimit = 50
    /// The most items a page may hold (`limit`, ServiceStack's `take`).
    static let maximumLimit = 200

    /// 400 `invalid_field`: `'field' problem`.
    static func invalid(_ field: String, _ problem: String) -> AuthServerError {
        AuthServerError.badRequest(AuthServerError.Code.invalidField, "'\(field)' \(problem)")
    }

    /// The page size of `limit`, ``pageLimit`` without one.
    static func limit(_ request: Request) throws -> Int {
        try integer(request.uri.queryParameters["limit"].map(String.init), "limit", 1...maximumLimit) ?? pageLimit
    }

    /// The cursor of `after`, the previous page's `next`; `nil` for the first page.
    static func cursor(_ request: Request) throws -> PageCursor? {
        guard let text = request.uri.queryParameters["after"].map(String.init), !text.isEmpty else { return nil }
        guard let cursor = PageCursor(text) else { throw invalid("after", "is not a cursor from a previous page") }
        return cursor
    }

    /// Runs a paged store query; a cursor the store did not make for this list (it answers `invalidInput`) is 400.
    static func refusingForeignCursors<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            if let refusal = error as? StoreError, refusal.code == .invalidInput {
                throw invalid("after", "is not a cursor from a previous page of this list")
            }
            throw error
        }
    }

    /// A whole number within `range`, or `nil` when the field is empty or absent.
    static func integer(_ text: String?, _ field: String, _ range: ClosedRange<Int>) throws -> Int? {
        guard let text, !text.isEmpty else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw invalid(field, "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// A date (`2026-11-24`) or a time (`2026-11-24T08:00:00Z`), or `nil` when the field is empty or absent.
    static func date(_ text: String?, _ field: String) throws -> Date? {
        guard let text, !text.isEmpty else { return nil }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let day = try? Date(text + "T00:00:00Z", strategy: .iso8601) { return day }
        throw invalid(field, "must be a date (2026-11-24) or a time (2026-11-24T08:00:00Z)")
    }
}
