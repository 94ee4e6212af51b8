public import AccountStore
public import AppleSignIn
public import Logging

/// Moves accounts between developer teams (Apple's TN3159 team transfer). Used by `siwa transfer export` and
/// `siwa transfer import`.
///
/// The sending team exports: for each account without a transfer it asks Apple for the user's `transfer_sub` toward
/// the receiving team and keeps it. The receiving team, on the same user table (the same database, or a copy),
/// imports: it exchanges each pending `transfer_sub` for the user's `sub` at the receiving team and moves the account
/// to it. Both walk the accounts in batches and keep each result as soon as they have it, so an interrupted run is
/// resumed by running it again. Users who sign in before the import are moved by their identity token's
/// `transfer_sub` (``AccountStore/signIn(_:now:)``).
public struct AccountTransferService: Sendable {
    /// What a run did.
    public struct Summary: Sendable, Encodable, Equatable {
        /// Accounts exported (a `transfer_sub` kept) or imported (moved to their new `sub`).
        public var done = 0
        /// Accounts left alone: on import, transfers to another team than this one.
        public var skipped = 0
        /// Accounts Apple or the store refused; a re-run tries them again.
        public var failed = 0
        /// Batches read.
        public var batches = 0
        /// Why accounts failed (at most 100 are kept).
        public var failures: [Failure] = []

        public init() {}
    }

    /// One account that could not be moved; names the account and the error code, never a `sub` or token.
    public struct Failure: Sendable, Encodable, Equatable {
        public var userID: String
        public var code: String
        public var reason: String
    }

    let store: any AccountStore
    let apple: AppleAPIClient
    let clientID: ClientID
    let clock: any WallClock
    let logger: Logger
    /// Records each account exported or moved (by an operator: the transfer commands).
    let audit: AuditLog

    /// - Parameters:
    ///   - store: the accounts.
    ///   - apple: this team's Apple client (its credentials sign the client secrets).
    ///   - clientID: the client id this team uses for the transfer, usually the app's primary bundle id.
    ///   - clock: wall clock.
    ///   - logger: progress at debug; never a `sub`, `transfer_sub` or token.
    public init(
        store: any AccountStore,
        apple: AppleAPIClient,
        clientID: ClientID,
        clock: any WallClock,
        logger: Logger
    ) {
        self.store = store
        self.apple = apple
        self.clientID = clientID
        self.clock = clock
        self.audit = AuditLog(store: store, clock: clock, logger: logger)
        self.logger = logger
    }

    /// Sending team: gets and keeps the `transfer_sub` toward `targetTeam` of every account that has none.
    /// - Parameters:
    ///   - targetTeam: the receiving team's id.
    ///   - batchSize: accounts read per batch.
    ///   - progress: called after each batch with the totals so far.
    /// - Throws: ``AppleSignInError`` when Apple refuses the team's credentials or cannot be reached (the run stops;
    ///   what was exported is kept), ``StoreError`` when the store fails.
    public func export(
        targetTeam: TeamID,
        batchSize: Int,
        progress: (Summary) -> Void = { _ in }
    ) async throws -> Summary {
        try await inBatches(
            "transfer export batch",
            batchSize: batchSize,
            progress: progress,
            read: { after, limit in try await store.usersWithoutTransfer(after: after, limit: limit) },
            cursor: \.id,
            transfer: { user in
                let transferSub = try await apple.transferSub(
                    for: user.appleUserID,
                    targetTeam: targetTeam,
                    clientID: clientID
                )
                try await store.setTransferSub(
                    userID: user.id,
                    transferSub: transferSub,
                    targetTeam: targetTeam.rawValue,
                    now: clock.now
                )
                await audit.append(
                    .transferExported,
                    userID: user.id,
                    actor: .operator,
                    clientID: clientID,
                    details: ["target_team": targetTeam.rawValue]
                )
                return true
            }
        )
    }

    /// Receiving team: moves every account whose transfer to `team` is pending to the user's `sub` at this team.
    /// - Parameters:
    ///   - team: this (the receiving) team's id; transfers to other teams are skipped.
    ///   - batchSize: transfers read per batch.
    ///   - progress: called after each batch with the totals so far.
    /// - Throws: ``AppleSignInError`` when Apple refuses the team's credentials or cannot be reached (the run stops;
    ///   what was imported is kept), ``StoreError`` when the store fails.
    public func importPending(
        team: TeamID,
        batchSize: Int,
        progress: (Summary) -> Void = { _ in }
    ) async throws -> Summary {
        try await inBatches(
            "transfer import batch",
            batchSize: batchSize,
            progress: progress,
            read: { after, limit in try await store.pendingTransfers(after: after, limit: limit) },
            cursor: \.userID,
            transfer: { transfer in
                guard transfer.targetTeam == team.rawValue else { return false }
                let moved = try await apple.exchangeTransferSub(transfer.transferSub, clientID: clientID)
                try await store.reassignAppleUser(
                    userID: transfer.userID,
                    newAppleUserID: moved.sub,
                    email: moved.email,
                    isPrivateEmail: moved.isPrivateEmail,
                    now: clock.now
                )
                await audit.append(
                    .transferCompleted,
                    userID: transfer.userID,
                    actor: .operator,
                    clientID: clientID,
                    reason: "import",
                    details: ["team": team.rawValue]
                )
                return true
            }
        )
    }

    /// Runs `transfer` on every item `read` returns, a batch at a time (resumable: `cursor` names the last item done),
    /// after checking that Apple accepts the team's credentials (before any account is touched). `transfer` returns
    /// `false` for an item it skips; a failure of one account is counted (see ``record(_:of:in:)``).
    private func inBatches<Item>(
        _ name: String,
        batchSize: Int,
        progress: (Summary) -> Void,
        read: (UserID?, Int) async throws -> [Item],
        cursor: (Item) -> UserID,
        transfer: (Item) async throws -> Bool
    ) async throws -> Summary {
        _ = try await apple.migrationAccessToken(clientID: clientID)
        var summary = Summary()
        var after: UserID?
        while true {
            let batch = try await read(after, max(1, batchSize))
            guard let last = batch.last else { break }
            for item in batch {
                do {
                    if try await transfer(item) { summary.done += 1 } else { summary.skipped += 1 }
                } catch {
                    try record(error, of: cursor(item), in: &summary)
                }
            }
            after = cursor(last)
            summary.batches += 1
            logger.debug("\(name)", metadata: ["done": "\(summary.done)", "failed": "\(summary.failed)"])
            progress(summary)
        }
        return summary
    }

    /// Counts a failure of one account, or rethrows an error that would fail every account.
    private func record(_ error: any Error, of userID: UserID, in summary: inout Summary) throws {
        let code: String
        let reason: String
        switch error {
        case let error as AppleSignInError
        where error.code == .invalidRequest || error.code == .invalidGrant || error.code == .unexpectedResponse:
            // Apple refused this user (an unknown sub or transfer_sub); the others may pass.
            code = "\(error.code)"
            reason = error.reason
        case let error as StoreError where error.code == .duplicate || error.code == .notFound:
            // Another account has the new sub (the user signed up anew before the import), or the account went.
            code = "\(error.code)"
            reason = error.reason
        default:
            throw error
        }
        summary.failed += 1
        if summary.failures.count < 100 {
            summary.failures.append(Failure(userID: userID.description, code: code, reason: reason))
        }
        logger.debug("account not transferred", metadata: ["user": "\(userID)", "code": "\(code)"])
    }
}
