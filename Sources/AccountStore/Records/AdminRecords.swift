public import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Who may hold the admin role: a siwa user id or an Apple `sub` (never an email, which can change hands).
public struct AdminSubject: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The most characters a subject has.
    public static let maxLength = 255

    /// A siwa user id (lower-case UUID) or an Apple `sub`, as stored.
    public let rawValue: String

    /// The subject of a siwa account.
    public init(_ userID: UserID) {
        self.rawValue = userID.description
    }

    /// The subject of an Apple user.
    public init(_ appleUserID: AppleUserID) {
        self.rawValue = appleUserID.rawValue
    }

    /// Reads a subject given as text (configuration, the command line): a UUID is a siwa user id (any case), anything
    /// else an Apple `sub`. `nil` for empty text, whitespace or control characters, or more than ``maxLength``.
    public init?(_ text: String) {
        if let userID = UserID(text) {
            self.init(userID)
            return
        }
        guard !text.isEmpty, text.count <= Self.maxLength,
            !text.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F })
        else { return nil }
        self.init(AppleUserID(text))
    }

    /// The siwa user id, when the subject is one.
    public var userID: UserID? { UserID(rawValue) }

    public var description: String { rawValue }

    public static func < (lhs: AdminSubject, rhs: AdminSubject) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The admin role granted in the store (admins from the configuration are not stored).
public struct AdminGrant: Sendable, Hashable {
    public var subject: AdminSubject
    /// Who granted it: an operator at the command line, or another admin.
    public var grantedBy: AuditActor
    public var grantedAt: Date

    public init(subject: AdminSubject, grantedBy: AuditActor, grantedAt: Date) {
        self.subject = subject
        self.grantedBy = grantedBy
        self.grantedAt = grantedAt
    }
}
