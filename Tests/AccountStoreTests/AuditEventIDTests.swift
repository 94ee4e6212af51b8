import AccountStore
import Foundation
import Testing

@Suite("Time-ordered ids: audit events and sessions")
struct AuditEventIDTests {
    /// The log orders events of one millisecond by id: ids made later must sort later, as the stores compare them
    /// (lower-case text, byte by byte).
    @Test func idsSortInTheOrderTheyWereMade() {
        let ids = (0..<10_000).map { _ in AuditEvent.newID() }
        let texts = ids.map(AuditLogPosition.text)
        #expect(texts == texts.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        #expect(Set(ids).count == ids.count)
        for id in ids.prefix(100) {
            #expect(id.uuid.6 >> 4 == 7, "version 7")
            #expect(id.uuid.8 >> 6 == 0b10, "RFC 9562 variant")
        }
        let milliseconds = ids[0].uuid
        let stamp = [milliseconds.0, milliseconds.1, milliseconds.2, milliseconds.3, milliseconds.4, milliseconds.5]
            .reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(abs(Double(stamp) / 1_000 - Date().timeIntervalSince1970) < 60, "the time is in the id")
    }

    /// New sessions' ids come from the same clock (so that the indexes keyed by session id are appended to): version
    /// 7, in the order they were made, with audit ids made in between sorting between them.
    @Test func sessionIDsAreTimeOrderedToo() {
        var made: [UUID] = []
        for index in 0..<2_000 {
            made.append(index.isMultiple(of: 2) ? SessionID().rawValue : AuditEvent.newID())
        }
        let texts = made.map(\.lowercasedText)
        #expect(texts == texts.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        #expect(Set(made).count == made.count)
        let session = SessionID().rawValue
        #expect(session.uuid.6 >> 4 == 7, "version 7")
        #expect(session.uuid.8 >> 6 == 0b10, "RFC 9562 variant")
        #expect(SessionID(session.lowercasedText) == SessionID(session), "read back from its text")
    }

    /// A user's session list is newest first; two sessions started in the same millisecond too (the later id first).
    @Test func sessionsOfOneMillisecondAreListedNewestFirst() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let user = UserID()
        let (older, newer) = (SessionID(), SessionID())
        func session(_ id: SessionID) -> SessionRecord {
            SessionRecord(
                id: id,
                userID: user,
                createdAt: now,
                lastUsedAt: nil,
                expiresAt: now + 3_600,
                revokedAt: nil,
                metadata: SessionMetadata()
            )
        }
        #expect(SessionRecord.listedBefore(session(newer), session(older), now: now))
        #expect(!SessionRecord.listedBefore(session(older), session(newer), now: now))
    }
}
