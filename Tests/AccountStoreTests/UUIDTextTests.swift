import AccountStore
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// siwa's own UUID helpers (made, written and read without Foundation's C helpers) give what Foundation gives.
@Suite struct UUIDTextTests {
    @Test func randomUUIDsAreVersion4Variant10AndDistinct() {
        var seen = Set<UUID>()
        for _ in 0..<2_000 {
            let uuid = UUID.random()
            #expect(uuid.uuid.6 >> 4 == 4)
            #expect(uuid.uuid.8 >> 6 == 0b10)
            seen.insert(uuid)
        }
        #expect(seen.count == 2_000)
        // Foundation reads the version and variant from the same bits.
        #expect(UUID.random().uuidString.lowercased().dropFirst(14).first == "4")
    }

    @Test func theTextIsFoundationsLowerCased() {
        for uuid in (0..<500).map({ _ in UUID() }) + [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))] {
            #expect(uuid.lowercasedText == uuid.uuidString.lowercased())
            #expect(UUID(text: uuid.lowercasedText) == uuid)
            #expect(UUID(text: uuid.uuidString) == uuid)  // upper case too, as Foundation reads it
        }
        #expect(
            UserID(UUID(text: "0192f2a4-7c1b-7d2e-8f3a-0123456789ab")).description
                == "0192f2a4-7c1b-7d2e-8f3a-0123456789ab"
        )
    }

    @Test func whatFoundationRefusesIsRefused() {
        let refused = [
            "", "0192f2a4-7c1b-7d2e-8f3a-0123456789a", "0192f2a4-7c1b-7d2e-8f3a-0123456789abc",
            "0192f2a47c1b-7d2e-8f3a-0123456789ab-", "0192f2a4-7c1b-7d2e-8f3a_0123456789ab",
            "0192f2g4-7c1b-7d2e-8f3a-0123456789ab", "{0192f2a4-7c1b-7d2e-8f3a-0123456789ab}",
            "0192f2a4-7c1b-7d2e-8f3a-0123456789aé",
        ]
        for text in refused {
            #expect(UUID(text: text) == nil, "\(text)")
            #expect(UUID(uuidString: text) == nil, "Foundation: \(text)")
            #expect(UserID(text) == nil)
            #expect(SessionID(text) == nil)
        }
        // Stricter than Foundation, whose `sscanf` skips a leading space in a group: an id is 36 digits and dashes.
        #expect(UUID(uuidString: " 192f2a4-7c1b-7d2e-8f3a-0123456789ab") != nil)
        #expect(UUID(text: " 192f2a4-7c1b-7d2e-8f3a-0123456789ab") == nil)
    }
}
