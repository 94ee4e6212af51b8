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
