import AccountStore
import AppleSignIn
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AccountStoreConformance {
    /// The checks of the admin API's service tokens: stored by hash, names unique among unrevoked tokens, revocation,
    /// the noted use, and the audit events that name the token.
    static let adminTokenChecks: [Check] = [
        Check("createAdminToken stores a token found by its hash alone, and records its creation", adminTokenIsStored),
        Check("a name is unique among the service tokens not revoked", adminTokenNamesAreUnique),
        Check("revokeAdminToken revokes the unrevoked token of a name once, and records it", adminTokenIsRevoked),
        Check("noteAdminTokenUse keeps the time of the last use", adminTokenUseIsNoted),
        Check("an audit event by a service token reads back with the token's name", serviceTokenActorIsStored),
    ]

    private static func adminToken(
        _ name: String,
        _ scope: AdminTokenScope = .read,
        at milliseconds: Int64
    ) -> AdminToken {
        AdminToken(
            name: name,
            scope: scope,
            createdAt: Fixture.time(milliseconds),
            createdBy: .operator,
            expiresAt: Fixture.time(milliseconds + 86_400_000)
        )
    }

    static func adminTokenIsStored(_ store: any AccountStore) async throws {
        let token = adminToken("report", .write, at: 0)
        try await store.createAdminToken(token, tokenHash: Array(repeating: 1, count: 32))
        let found = try #require(try await store.adminToken(tokenHash: Array(repeating: 1, count: 32)))
        #expect(found.id == token.id)
        #expect(found.name == "report")
        #expect(found.scope == .write)
        #expect(found.createdBy == .operator)
        Fixture.expectSameTime(found.createdAt, Fixture.time(0))
        Fixture.expectSameTime(found.expiresAt, Fixture.time(86_400_000))
        #expect(found.lastUsedAt == nil)
        #expect(found.revokedAt == nil)
        #expect(try await store.adminToken(tokenHash: Array(repeating: 2, count: 32)) == nil, "another hash: none")
        #expect(try await store.adminTokens().map(\.id) == [token.id])
        let events = try await store.auditEvents(
            AuditEventFilter(types: [.adminTokenCreated]),
            limit: 10,
            after: nil
        ).items
        #expect(events.count == 1)
        #expect(events.first?.actor == .operator)
        #expect(events.first?.details["token"] == "report")
        #expect(events.first?.details["scope"] == "write")
    }

    static func adminTokenNamesAreUnique(_ store: any AccountStore) async throws {
        try await store.createAdminToken(adminToken("bot", at: 0), tokenHash: Array(repeating: 1, count: 32))
        await #expect(throws: StoreError.duplicate) {
            try await store.createAdminToken(adminToken("bot", at: 10), tokenHash: Array(repeating: 2, count: 32))
        }
        #expect(try await store.adminTokens().count == 1, "the refused token is not stored")
        try await store.revokeAdminToken(named: "bot", by: .operator, now: Fixture.time(20))
        let second = adminToken("bot", at: 30)
        try await store.createAdminToken(second, tokenHash: Array(repeating: 3, count: 32))
        #expect(try await store.adminTokens().map(\.name) == ["bot", "bot"], "a revoked token's name is free again")
        #expect(try await store.adminTokens().last?.id == second.id, "oldest first")
    }

    static func adminTokenIsRevoked(_ store: any AccountStore) async throws {
        let token = adminToken("leaked", at: 0)
        try await store.createAdminToken(token, tokenHash: Array(repeating: 1, count: 32))
        let admin = AdminSubject(UserID())
        let revoked = try #require(
            try await store.revokeAdminToken(named: "leaked", by: .admin(admin), now: Fixture.time(5))
        )
        #expect(revoked.id == token.id)
        Fixture.expectSameTime(revoked.revokedAt, Fixture.time(5))
        #expect(try await store.revokeAdminToken(named: "leaked", by: .operator, now: Fixture.time(6)) == nil, "once")
        #expect(try await store.revokeAdminToken(named: "unknown", by: .operator, now: Fixture.time(6)) == nil)
        let stored = try #require(try await store.adminToken(tokenHash: Array(repeating: 1, count: 32)))
        Fixture.expectSameTime(stored.revokedAt, Fixture.time(5), "a revoked token is still found, to say so")
        let events = try await store.auditEvents(
            AuditEventFilter(types: [.adminTokenRevoked]),
            limit: 10,
            after: nil
        ).items
        #expect(events.map(\.actor) == [.admin(admin)])
        #expect(events.first?.details["token"] == "leaked")
    }

    static func adminTokenUseIsNoted(_ store: any AccountStore) async throws {
        let token = adminToken("bot", at: 0)
        try await store.createAdminToken(token, tokenHash: Array(repeating: 1, count: 32))
        try await store.noteAdminTokenUse(token.id, at: Fixture.time(42))
        let stored = try #require(try await store.adminTokens().first)
        Fixture.expectSameTime(stored.lastUsedAt, Fixture.time(42))
    }

    static func serviceTokenActorIsStored(_ store: any AccountStore) async throws {
        let user = try await store.signIn(Fixture.facts(), now: Fixture.time(0)).user
        try await store.appendAuditEvent(
            AuditEvent(time: Fixture.time(10), type: .accountDisabled, userID: user.id, actor: .serviceToken("ops-bot"))
        )
        let events = try await store.auditEvents(
            AuditEventFilter(types: [.accountDisabled]),
            limit: 10,
            after: nil
        ).items
        #expect(events.map(\.actor) == [.serviceToken("ops-bot")])
    }
}
