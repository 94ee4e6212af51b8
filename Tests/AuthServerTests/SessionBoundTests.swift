import AccountStore
import Foundation
import Testing

@testable import AuthServer

/// The ids an identity token's sessions take, which every instance must derive alike and which no other session may
/// take by chance.
@Suite("Server: the session ids of an identity token")
struct SessionBoundTests {
    @Test func everyInstanceDerivesTheSameDistinctIDs() {
        let expiry = Date(timeIntervalSince1970: 1_795_779_019.025)
        let ids = SignInService.boundSessionIDs("header.payload.signature", expiresAt: expiry, limit: 3)
        #expect(ids.count == 3)
        #expect(Set(ids).count == 3)
        #expect(ids == SignInService.boundSessionIDs("header.payload.signature", expiresAt: expiry, limit: 3))
        let other = SignInService.boundSessionIDs("header.payload.signaturf", expiresAt: expiry, limit: 3)
        #expect(Set(ids).isDisjoint(with: other))
    }

    @Test func theyAreVersionEightAndOrderedByTheTokensExpiry() {
        let expiry = Date(timeIntervalSince1970: 1_795_779_019.025)
        let ids = SignInService.boundSessionIDs("token", expiresAt: expiry, limit: 2)
        for id in ids {
            let text = id.description
            #expect(text.hasPrefix(String(1_795_779_019_025, radix: 16).leftPadded(to: 12).inserting("-", at: 8)))
            #expect(Array(text)[14] == "8", "version 8, never a time-ordered id's 7")
            #expect("89ab".contains(Array(text)[19]), "RFC 9562 variant")
        }
        #expect(ids[0].description < ids[1].description)
    }

    @Test func theBoundIsCappedWhereAStoreCanLookItsIDsUp() {
        let ids = SignInService.boundSessionIDs("token", expiresAt: Date(), limit: 1_000)
        #expect(ids.count == SessionBound.maximumLimit)
        #expect(Set(ids).count == SessionBound.maximumLimit)
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }

    fileprivate func inserting(_ separator: Character, at offset: Int) -> String {
        var copy = self
        copy.insert(separator, at: copy.index(copy.startIndex, offsetBy: offset))
        return copy
    }
}
