import AccountStore
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Testing

@testable import AuthServer

/// The console's page frame and its form tokens.
@Suite struct AdminPageTests {
    @Test func thePageMarksItsSectionEscapesAndAllowsOnlyItsStylesheet() {
        let page = AdminPage(title: "Users <all>", section: .users, signedInAs: "Ada <admin>", main: "<p>x</p>")
        let html = page.html
        #expect(html.contains("<a href=\"/admin/users\" aria-current=\"page\">Users</a>"))
        #expect(html.contains("<a href=\"/admin/audit\">Audit log</a>"))
        #expect(html.contains("<h1>Users &lt;all&gt;</h1>"))
        #expect(html.contains("Ada &lt;admin&gt;"))
        #expect(!html.contains("<script"))
        let hash = "sha256-" + Data(SHA256.hash(data: Array(AdminPage.stylesheet.utf8))).base64EncodedString()
        #expect(AdminPage.contentSecurityPolicy.contains("style-src '\(hash)'"))
        #expect(AdminPage.contentSecurityPolicy.contains("default-src 'none'"))
        #expect(AdminPage.contentSecurityPolicy.contains("frame-ancestors 'none'"))
        let response = page.response(status: .forbidden)
        #expect(response.status == .forbidden)
        #expect(response.headers[.contentSecurityPolicy] == AdminPage.contentSecurityPolicy)
        #expect(response.headers[.cacheControl] == "no-store")
    }

    /// Two instances on one key file, one started before a data-key rotation and one after: each accepts the other's
    /// forms once it holds both keys, one that has not re-read the file refuses only forms made under the new key, and
    /// retiring the old key ends the forms made under it.
    @Test func formTokensOutliveADataKeyRotationAcrossInstances() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("form-tokens-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("siwa-data.key").path
        func write(_ keys: [SymmetricKey]) throws {
            let lines = keys.map { key in key.withUnsafeBytes { Data($0).base64EncodedString() } }
            try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        }
        func sealer() throws -> DataSealer {
            DataSealer(
                keys: try DataKeyRing.parse(file: String(contentsOfFile: file, encoding: .utf8)),
                source: .file(file)
            )
        }
        let old = SymmetricKey(size: .bits256)
        let new = SymmetricKey(size: .bits256)
        let session = SessionID()

        try write([old])
        let sealerA = try sealer()
        let instanceA = FormToken(sealer: sealerA, purpose: .adminForms)
        let before = instanceA.token(for: session)

        try write([new, old])  // `siwa keys rotate-data-key`: the new key seals, the old one stays
        let sealerB = try sealer()
        let instanceB = FormToken(sealer: sealerB, purpose: .adminForms)
        #expect(instanceB.accepts(before, for: session), "a page loaded from A before the rotation, posted to B")
        let after = instanceB.token(for: session)
        #expect(after != before, "B makes its tokens under the key that seals now")
        #expect(!instanceA.accepts(after, for: session), "A has not read the new key yet")
        #expect(try sealerA.reload(force: true))
        #expect(instanceA.accepts(after, for: session))
        #expect(instanceA.accepts(before, for: session))
        #expect(instanceA.token(for: session) == after, "both instances now make the same tokens")

        try write([new])  // `siwa keys retire-data-key`
        #expect(try sealerB.reload(force: true))
        #expect(!instanceB.accepts(before, for: session), "a form made under a retired key")
        #expect(instanceB.accepts(after, for: session))
    }

    @Test func aFormTokenIsWorthSomethingOnlyInItsOwnSession() {
        let key = SymmetricKey(size: .bits256)
        let tokens = FormToken(dataKey: key, purpose: .adminForms)
        let mine = SessionID()
        let token = tokens.token(for: mine)
        #expect(token.utf8.count == 43)
        #expect(tokens.accepts(token, for: mine))
        #expect(tokens.token(for: mine) == token, "stable for a session: every instance computes the same")
        #expect(
            FormToken(dataKey: key, purpose: .adminForms).accepts(token, for: mine),
            "another instance with the data key"
        )
        #expect(!tokens.accepts(token, for: SessionID()), "another session's token")
        #expect(
            !FormToken(dataKey: SymmetricKey(size: .bits256), purpose: .adminForms).accepts(token, for: mine),
            "another data key"
        )
        let consents = FormToken(dataKey: key, purpose: .clientConsent)
        #expect(!consents.accepts(token, for: mine), "a console form's token is no consent's")
        #expect(!tokens.accepts(consents.token(for: mine), for: mine), "nor the other way round")
        let aboutOne = consents.token(for: mine, about: "client-one")
        #expect(consents.accepts(aboutOne, for: mine, about: "client-one"))
        #expect(!consents.accepts(aboutOne, for: mine, about: "client-two"), "bound to what it is about")
        #expect(!consents.accepts(aboutOne, for: mine), "and not a token about nothing")
        var changed = Array(token)
        changed[5] = changed[5] == "A" ? "B" : "A"
        #expect(!tokens.accepts(String(changed), for: mine))
        #expect(!tokens.accepts(nil, for: mine))
        #expect(!tokens.accepts("", for: mine))
        #expect(!tokens.accepts(token + "A", for: mine))
        #expect(!tokens.accepts(String(repeating: "%", count: 43), for: mine))
    }
}
