import AccountStore
import AppleSignIn
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AccountStoreConformance {
    /// The checks of what re-sealing under a new data key needs: walking every sealed blob, and replacing one only
    /// while it is as read.
    static let sealedDataChecks: [Check] = [
        Check(
            "sealedItems pages through every signing key, Apple token and queued revocation once",
            sealedItemsPageThroughEverything
        ),
        Check("replaceSealed replaces bytes still as read, and nothing else of the row", replaceSealedComparesAndSwaps),
    ]

    static func sealedItemsPageThroughEverything(_ store: any AccountStore) async throws {
        #expect(try await store.sealedItems(after: nil, limit: 10).isEmpty, "a new store has nothing sealed")
        var expected: [SealedItem] = []
        for (index, kid) in ["key-b", "key-a"].enumerated() {
            let key = SigningKeyRecord(
                kid: kid,
                sealedPrivateKey: Fixture.randomBytes(60),
                createdAt: Fixture.time(Int64(index))
            )
            try await store.addSigningKey(key)
            expected.append(SealedItem(kind: .signingKey, id: kid, sealed: key.sealedPrivateKey))
        }
        for _ in 0..<3 {
            let user = try await store.signIn(Fixture.facts(), now: Fixture.time(10)).user
            let token = Fixture.appleToken(user.id)
            try await store.saveAppleToken(token)
            expected.append(SealedItem(kind: .appleToken, id: user.id.description, sealed: token.encryptedRefreshToken))
        }
        for _ in 0..<2 {
            let user = try await store.signIn(Fixture.facts(), now: Fixture.time(20)).user
            let token = Fixture.appleToken(user.id)
            try await store.saveAppleToken(token)
            let deleted = try await store.deleteUser(
                id: user.id,
                mode: .delete,
                appleRevocationDueAt: Fixture.time(30),
                now: Fixture.time(30)
            )
            let queued = try #require(deleted?.queuedRevocation)
            expected.append(
                SealedItem(
                    kind: .appleRevocation,
                    id: queued.id.uuidString.lowercased(),
                    sealed: token.encryptedRefreshToken
                )
            )
        }

        // Pages of two, each resuming after the last item of the one before.
        var seen: [SealedItem] = []
        var after: SealedItem.Position?
        var pages = 0
        while true {
            let page = try await store.sealedItems(after: after, limit: 2)
            #expect(page.count <= 2)
            guard let last = page.last else { break }
            seen += page
            after = last.position
            pages += 1
            try #require(pages <= expected.count, "the walk ends")
        }
        #expect(seen.count == expected.count, "every item once: \(seen.map(\.position))")
        #expect(Set(seen) == Set(expected), "kinds, ids and sealed bytes as stored")
        #expect(seen.map(\.kind) == seen.map(\.kind).sorted(), "signing keys, then Apple tokens, then revocations")
        #expect(Set(seen.map(\.position)).count == seen.count, "no item twice")
        let all = try await store.sealedItems(after: nil, limit: 100)
        #expect(all == seen, "one page or many: the same order")
        #expect(try await store.sealedItems(after: nil, limit: 0).isEmpty)
        let tail = try await store.sealedItems(after: all[3].position, limit: 100)
        #expect(tail == Array(all.dropFirst(4)), "after a position: the items that follow it")
    }

    static func replaceSealedComparesAndSwaps(_ store: any AccountStore) async throws {
        let key = SigningKeyRecord(kid: "key-1", sealedPrivateKey: Fixture.randomBytes(60), createdAt: Fixture.time(0))
        try await store.addSigningKey(key)
        try await store.addSigningKey(
            SigningKeyRecord(kid: "key-2", sealedPrivateKey: Fixture.randomBytes(60), createdAt: Fixture.time(1_000))
        )
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        var token = Fixture.appleToken(user.id)
        token.lastValidatedAt = Fixture.time(500)
        try await store.saveAppleToken(token)
        let doomed = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        try await store.saveAppleToken(Fixture.appleToken(doomed.id))
        let queued = try #require(
            try await store.deleteUser(
                id: doomed.id,
                mode: .delete,
                appleRevocationDueAt: Fixture.time(100),
                now: Fixture.time(100)
            )?.queuedRevocation
        )

        let items = try await store.sealedItems(after: nil, limit: 10)
        try #require(items.count == 4)
        for item in items {
            let resealed = Fixture.randomBytes(73)
            #expect(try await store.replaceSealed(item, with: resealed), "\(item.kind) as read: replaced")
            #expect(
                try await store.replaceSealed(item, with: Fixture.randomBytes(73)) == false,
                "\(item.kind) changed since it was read: left alone"
            )
            let now = try await store.sealedItems(after: nil, limit: 10).first { $0.position == item.position }
            #expect(now?.sealed == resealed)
        }

        // The rest of each row is as it was.
        let keys = try await store.signingKeys()
        #expect(keys.map(\.kid) == ["key-1", "key-2"])
        Fixture.expectSameTime(keys.first?.retiredAt, Fixture.time(1_000))
        #expect(keys.last?.retiredAt == nil)
        Fixture.expectSameTime(keys.first?.createdAt, Fixture.time(0))
        let stored = try #require(try await store.appleToken(userID: user.id))
        #expect(stored.encryptedRefreshToken != token.encryptedRefreshToken)
        token.encryptedRefreshToken = stored.encryptedRefreshToken
        Fixture.expectSameAppleToken(stored, token)
        let due = try await store.dueAppleRevocations(now: Fixture.time(100), limit: 10)
        #expect(due.map(\.id) == [queued.id])
        #expect(due.first?.encryptedRefreshToken != queued.encryptedRefreshToken)
        #expect(due.first?.userID == queued.userID && due.first?.attempts == 0)

        // An item that is gone is not brought back.
        let current = try #require(
            try await store.sealedItems(after: nil, limit: 10).first { $0.kind == .appleRevocation }
        )
        try await store.finishAppleRevocation(id: queued.id)
        #expect(try await store.replaceSealed(current, with: Fixture.randomBytes(73)) == false)
        #expect(try await store.sealedItems(after: nil, limit: 10).count == 3)
        let stranger = SealedItem(kind: .appleToken, id: UserID().description, sealed: token.encryptedRefreshToken)
        #expect(try await store.replaceSealed(stranger, with: Fixture.randomBytes(73)) == false, "no such user")
    }
}
