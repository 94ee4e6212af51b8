import AccountStore
import AppleSignIn
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AccountStoreConformance {
    /// The checks of team transfer (TN3159): export bookkeeping, import and the sign-in mapping.
    static let transferChecks: [Check] = [
        Check("setTransferSub keeps one transfer per account; transfer_subs are unique", setTransferSubKeepsOne),
        Check("usersWithoutTransfer pages past exported and anonymised accounts", usersWithoutTransferPages),
        Check("pendingTransfers lists transfers not yet done, by user id", pendingTransfersArePaged),
        Check("reassignAppleUser moves the account and finishes its transfer", reassignMovesTheAccount),
        Check("reassignAppleUser refuses a sub another account has", reassignRefusesATakenSub),
        Check("a sign-in with a pending transfer's transfer_sub finds the account", signInMapsTransferSub),
        Check("10 concurrent sign-ins through one transfer_sub move the account once", concurrentTransferSignIns),
        Check("deleting an account removes its transfer", deletionRemovesTheTransfer),
    ]

    static func setTransferSubKeepsOne(_ store: any AccountStore) async throws {
        let ann = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let bob = try await store.signIn(Fixture.facts(), now: Fixture.time(1)).user
        #expect(try await store.transfer(userID: ann.id) == nil)

        let first = Fixture.appleUserID()
        try await store.setTransferSub(
            userID: ann.id,
            transferSub: first,
            targetTeam: "TEAMB00001",
            now: Fixture.time(10)
        )
        let stored = try #require(try await store.transfer(userID: ann.id))
        #expect(stored.userID == ann.id)
        #expect(stored.transferSub == first)
        #expect(stored.targetTeam == "TEAMB00001")
        Fixture.expectSameTime(stored.exportedAt, Fixture.time(10))
        #expect(stored.transferredAt == nil)
        #expect(try await store.user(transferSub: first)?.id == ann.id)
        #expect(try await store.user(transferSub: Fixture.appleUserID()) == nil)

        await #expect(throws: StoreError.duplicate, "a transfer_sub belongs to one account") {
            try await store.setTransferSub(userID: bob.id, transferSub: first, targetTeam: "TEAMB00001", now: .now)
        }
        #expect(try await store.transfer(userID: bob.id) == nil, "the refused transfer_sub left nothing")
        await #expect(throws: StoreError.notFound) {
            try await store.setTransferSub(
                userID: UserID(),
                transferSub: Fixture.appleUserID(),
                targetTeam: "TEAMB00001",
                now: .now
            )
        }

        let second = Fixture.appleUserID()
        try await store.setTransferSub(
            userID: ann.id,
            transferSub: second,
            targetTeam: "TEAMC00001",
            now: Fixture.time(20)
        )
        let replaced = try #require(try await store.transfer(userID: ann.id))
        #expect(replaced.transferSub == second, "a new export replaces the transfer")
        #expect(replaced.targetTeam == "TEAMC00001")
        Fixture.expectSameTime(replaced.exportedAt, Fixture.time(20))
        #expect(try await store.user(transferSub: first) == nil)
    }

    static func usersWithoutTransferPages(_ store: any AccountStore) async throws {
        var users: [UserRecord] = []
        for index in 0..<5 {
            users.append(try await store.signIn(Fixture.facts(), now: Fixture.time(Int64(index) * 10)).user)
        }
        try await store.setTransferSub(
            userID: users[1].id,
            transferSub: Fixture.appleUserID(),
            targetTeam: "TEAMB00001",
            now: Fixture.time(100)
        )
        _ = try await store.deleteUser(
            id: users[3].id,
            mode: .anonymise,
            appleRevocationDueAt: nil,
            now: Fixture.time(100)
        )

        let firstPage = try await store.usersWithoutTransfer(after: nil, limit: 2)
        #expect(firstPage.map(\.id) == [users[0].id, users[2].id], "exported and anonymised accounts are skipped")
        let secondPage = try await store.usersWithoutTransfer(after: firstPage.last?.id, limit: 2)
        #expect(secondPage.map(\.id) == [users[4].id])
        #expect(try await store.usersWithoutTransfer(after: users[4].id, limit: 2).isEmpty)
        #expect(try await store.usersWithoutTransfer(after: nil, limit: 0).isEmpty)
    }

    static func pendingTransfersArePaged(_ store: any AccountStore) async throws {
        var ids: [UserID] = []
        for index in 0..<4 {
            let user = try await store.signIn(Fixture.facts(), now: Fixture.time(Int64(index))).user
            try await store.setTransferSub(
                userID: user.id,
                transferSub: Fixture.appleUserID(),
                targetTeam: "TEAMB00001",
                now: Fixture.time(10)
            )
            ids.append(user.id)
        }
        let done = ids[2]
        try await store.reassignAppleUser(
            userID: done,
            newAppleUserID: Fixture.appleUserID(),
            email: nil,
            isPrivateEmail: nil,
            now: Fixture.time(20)
        )
        let pending = ids.filter { $0 != done }.sorted { $0.description < $1.description }
        let firstPage = try await store.pendingTransfers(after: nil, limit: 2)
        #expect(firstPage.map(\.userID) == Array(pending.prefix(2)))
        #expect(firstPage.allSatisfy { $0.transferredAt == nil && $0.targetTeam == "TEAMB00001" })
        let secondPage = try await store.pendingTransfers(after: firstPage.last?.userID, limit: 2)
        #expect(secondPage.map(\.userID) == Array(pending.dropFirst(2)))
        #expect(try await store.pendingTransfers(after: pending.last, limit: 2).isEmpty)
    }

    static func reassignMovesTheAccount(_ store: any AccountStore) async throws {
        let oldSub = Fixture.appleUserID()
        let user = try await store.signIn(
            Fixture.facts(oldSub, email: "ann@example.com", verified: true, isPrivate: false, given: "Ann"),
            now: Fixture.time(0)
        ).user
        try await store.saveAppleToken(Fixture.appleToken(user.id))
        let session = Fixture.refreshToken(SessionID(), user.id)
        try await store.createSession(firstToken: session, now: Fixture.time(5))
        let transferSub = Fixture.appleUserID()
        try await store.setTransferSub(
            userID: user.id,
            transferSub: transferSub,
            targetTeam: "TEAMB00001",
            now: Fixture.time(10)
        )

        let newSub = Fixture.appleUserID()
        let moved = try await store.reassignAppleUser(
            userID: user.id,
            newAppleUserID: newSub,
            email: "abc@privaterelay.appleid.com",
            isPrivateEmail: true,
            now: Fixture.time(20)
        )
        #expect(moved.id == user.id)
        #expect(moved.appleUserID == newSub)
        #expect(moved.email == "abc@privaterelay.appleid.com")
        #expect(moved.isPrivateEmail)
        #expect(moved.givenName == "Ann", "the account keeps its name")
        Fixture.expectSameTime(moved.createdAt, Fixture.time(0))
        Fixture.expectSameTime(moved.updatedAt, Fixture.time(20))
        Fixture.expectSameUser(try #require(try await store.user(appleUserID: newSub)), moved)
        #expect(try await store.user(appleUserID: oldSub) == nil, "the old sub no longer finds the account")
        #expect(try await store.appleToken(userID: user.id) == nil, "the sending team's Apple token is dropped")
        #expect(try await store.session(refreshTokenHash: session.hash)?.userID == user.id, "sessions stay")
        let transfer = try #require(try await store.transfer(userID: user.id))
        Fixture.expectSameTime(transfer.transferredAt, Fixture.time(20))
        #expect(try await store.pendingTransfers(after: nil, limit: 10).isEmpty)

        // Again (an import re-run): nothing more changes.
        let again = try await store.reassignAppleUser(
            userID: user.id,
            newAppleUserID: newSub,
            email: nil,
            isPrivateEmail: nil,
            now: Fixture.time(30)
        )
        #expect(again.appleUserID == newSub)
        #expect(again.email == "abc@privaterelay.appleid.com", "no email leaves the stored one")
        Fixture.expectSameTime(try await store.transfer(userID: user.id)?.transferredAt, Fixture.time(20))

        await #expect(throws: StoreError.notFound) {
            try await store.reassignAppleUser(
                userID: UserID(),
                newAppleUserID: Fixture.appleUserID(),
                email: nil,
                isPrivateEmail: nil,
                now: .now
            )
        }
    }

    static func reassignRefusesATakenSub(_ store: any AccountStore) async throws {
        let ann = try await store.signIn(Fixture.facts(email: "ann@example.com"), now: Fixture.time(0)).user
        let bob = try await store.signIn(Fixture.facts(), now: Fixture.time(1)).user
        try await store.setTransferSub(
            userID: ann.id,
            transferSub: Fixture.appleUserID(),
            targetTeam: "TEAMB00001",
            now: Fixture.time(10)
        )
        await #expect(throws: StoreError.duplicate) {
            try await store.reassignAppleUser(
                userID: ann.id,
                newAppleUserID: bob.appleUserID,
                email: "new@example.com",
                isPrivateEmail: false,
                now: Fixture.time(20)
            )
        }
        let unchanged = try #require(try await store.user(id: ann.id))
        #expect(unchanged.appleUserID == ann.appleUserID, "a refused move changes nothing")
        #expect(unchanged.email == "ann@example.com")
        #expect(try await store.transfer(userID: ann.id)?.transferredAt == nil)
    }

    static func signInMapsTransferSub(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(email: "ann@example.com", given: "Ann"), now: Fixture.time(0))
            .user
        try await store.saveAppleToken(Fixture.appleToken(user.id))
        let transferSub = Fixture.appleUserID()
        try await store.setTransferSub(
            userID: user.id,
            transferSub: transferSub,
            targetTeam: "TEAMB00001",
            now: Fixture.time(10)
        )

        // A token of another team without transfer_sub, or with an unknown one, is another user.
        var stranger = Fixture.facts()
        stranger.transferSub = Fixture.appleUserID()
        #expect(try await store.signIn(stranger, now: Fixture.time(15)).isNewUser)

        let newSub = Fixture.appleUserID()
        var facts = Fixture.facts(newSub, email: "relay@privaterelay.appleid.com", isPrivate: true)
        facts.clientID = "org.other.app"
        facts.transferSub = transferSub
        let outcome = try await store.signIn(facts, now: Fixture.time(20))
        #expect(!outcome.isNewUser, "the transferred user is a returning user")
        #expect(outcome.user.id == user.id)
        #expect(outcome.user.appleUserID == newSub)
        #expect(outcome.user.clientID == "org.other.app")
        #expect(outcome.user.email == "relay@privaterelay.appleid.com")
        #expect(outcome.user.givenName == "Ann")
        #expect(try await store.user(appleUserID: user.appleUserID) == nil)
        #expect(try await store.appleToken(userID: user.id) == nil, "the sending team's Apple token is dropped")
        Fixture.expectSameTime(try await store.transfer(userID: user.id)?.transferredAt, Fixture.time(20))
        #expect(outcome.completedTransfer)
        let completed = try await store.auditEvents(
            AuditEventFilter(userID: user.id, types: [.transferCompleted]),
            limit: 10,
            after: nil
        ).items
        #expect(completed.map(\.reason) == ["sign_in"], "the transfer finished by a sign-in is in the audit log")
        #expect(completed.first?.clientID == "org.other.app")

        // The next sign-in finds the account by its new sub; a finished transfer maps nobody else.
        let next = try await store.signIn(facts, now: Fixture.time(30))
        #expect(!next.isNewUser)
        #expect(!next.completedTransfer)
        #expect(next.user.id == user.id)
        var other = Fixture.facts()
        other.transferSub = transferSub
        let unrelated = try await store.signIn(other, now: Fixture.time(40))
        #expect(unrelated.isNewUser, "a transfer that is done is not taken over by another sub")
        #expect(try await store.user(id: user.id)?.appleUserID == newSub)
    }

    static func concurrentTransferSignIns(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        let transferSub = Fixture.appleUserID()
        try await store.setTransferSub(
            userID: user.id,
            transferSub: transferSub,
            targetTeam: "TEAMB00001",
            now: Fixture.time(10)
        )
        let newSub = Fixture.appleUserID()
        let facts = AppleSignInFacts(appleUserID: newSub, clientID: "org.other.app", transferSub: transferSub)
        let outcomes = try await withThrowingTaskGroup(of: SignInOutcome.self) { group in
            for index in 0..<10 {
                group.addTask { try await store.signIn(facts, now: Fixture.time(20 + Int64(index))) }
            }
            return try await group.reduce(into: [SignInOutcome]()) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { $0.user.id == user.id && !$0.isNewUser }, "every sign-in finds the account")
        #expect(try await store.users(limit: 10, after: nil).count == 1, "no second account")
        #expect(try await store.user(appleUserID: newSub)?.id == user.id)
    }

    static func deletionRemovesTheTransfer(_ store: any AccountStore) async throws {
        for mode in [AccountDeletionMode.delete, .anonymise] {
            let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
            let transferSub = Fixture.appleUserID()
            try await store.setTransferSub(
                userID: user.id,
                transferSub: transferSub,
                targetTeam: "TEAMB00001",
                now: Fixture.time(10)
            )
            _ = try await store.deleteUser(id: user.id, mode: mode, appleRevocationDueAt: nil, now: Fixture.time(20))
            #expect(try await store.transfer(userID: user.id) == nil, "\(mode)")
            #expect(try await store.user(transferSub: transferSub) == nil, "\(mode)")
            var facts = Fixture.facts()
            facts.transferSub = transferSub
            let later = try await store.signIn(facts, now: Fixture.time(30))
            #expect(later.isNewUser, "a deleted account is not brought back by its transfer_sub (\(mode))")
            #expect(later.user.id != user.id)
        }
    }
}
