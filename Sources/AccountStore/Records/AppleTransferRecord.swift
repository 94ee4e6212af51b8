public import AppleSignIn

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// An account's move to another developer team (Apple's TN3159 team transfer).
///
/// The sending deployment records the `transfer_sub` Apple gave for the user (`siwa transfer export`); the receiving
/// deployment, with the same table, exchanges it for the user's new `sub` (`siwa transfer import`) or maps the first
/// sign-in whose identity token carries it, and then marks the transfer done.
public struct AppleTransferRecord: Sendable, Hashable {
    public var userID: UserID
    /// What Apple answered the sending team for this user.
    public var transferSub: AppleUserID
    /// The receiving team's id.
    public var targetTeam: String
    /// When the sending team obtained the `transfer_sub`.
    public var exportedAt: Date
    /// When the account was re-pointed to its `sub` at the receiving team; `nil` while the transfer is pending.
    public var transferredAt: Date?

    public init(
        userID: UserID,
        transferSub: AppleUserID,
        targetTeam: String,
        exportedAt: Date,
        transferredAt: Date? = nil
    ) {
        self.userID = userID
        self.transferSub = transferSub
        self.targetTeam = targetTeam
        self.exportedAt = exportedAt
        self.transferredAt = transferredAt
    }
}
