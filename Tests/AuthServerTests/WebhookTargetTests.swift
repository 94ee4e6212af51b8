import Foundation
import Testing

@testable import AuthServer

/// The rules of where a webhook may go: https, no credentials in the URL, nothing into the operator's own network.
@Suite("Webhook targets")
struct WebhookTargetTests {
    @Test(arguments: [
        "127.0.0.1", "127.8.9.10", "0.0.0.0", "10.1.2.3", "100.64.0.1", "169.254.169.254", "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1", "192.0.2.7", "198.18.0.1", "224.0.0.1", "255.255.255.255", "::1", "::", "fd00::1", "fe80::1",
        "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "2001:db8::1",
    ])
    func anAddressOfTheOperatorsNetworkIsRefused(address: String) {
        #expect(!WebhookTargetRules().admits(address: address))
    }

    @Test(arguments: [
        "93.184.215.14", "172.32.0.1", "100.128.0.1", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8",
    ])
    func aPublicAddressIsAdmitted(address: String) {
        #expect(WebhookTargetRules().admits(address: address))
    }

    @Test func anAllowedNetworkIsAdmittedAndNothingElseOfItsRange() throws {
        let rules = WebhookTargetRules(allowedNetworks: try AddressRanges(["10.20.0.0/16"]))
        #expect(rules.admits(address: "10.20.3.4"))
        #expect(!rules.admits(address: "10.21.0.1"))
        #expect(!rules.admits(address: "not-an-address"))
        #expect(try rules.checkedURL("https://10.20.3.4/hooks").host == "10.20.3.4")
    }

    @Test func anHTTPSURLOfAPublicHostIsTaken() throws {
        let rules = WebhookTargetRules()
        #expect(try rules.checkedURL("https://api.example.com/siwa/events?team=1").absoluteString.hasPrefix("https://"))
        #expect(try rules.checkedURL("https://[2606:4700:4700::1111]:8443/hook").port == 8443)
    }

    @Test(arguments: [
        ("http://api.example.com/hook", "plain http"),
        ("ftp://api.example.com/hook", "scheme ftp"),
        ("https://user:secret@api.example.com/hook", "user name or password"),
        ("https:///hook", "no host"),
        ("https://api.example.com/hook#part", "fragment"),
        ("https://169.254.169.254/latest/meta-data", "169.254.169.254"),
        ("https://[::1]/hook", "::1"),
        ("https://[::ffff:192.168.0.1]/hook", "::ffff:192.168.0.1"),
        ("https://localhost/hook", "this machine"),
        ("https://a.localhost/hook", "this machine"),
        ("not a url", "not a URL"),
    ])
    func aURLThatCouldReachWhereItMustNotIsRefusedSayingWhy(url: String, reason: String) {
        let error = #expect(throws: WebhookTargetRefusal.self) { try WebhookTargetRules().checkedURL(url) }
        #expect(error?.reason.contains(reason) == true, "\(url): \(error?.reason ?? "")")
        #expect(error?.reason.contains("secret@") != true, "a refusal never repeats the URL's credentials")
    }

    @Test func plainHTTPIsForLoopbackInDevelopmentOnly() throws {
        let development = WebhookTargetRules(allowsPlainHTTPToLoopback: true)
        #expect(try development.checkedURL("http://127.0.0.1:9000/hook").port == 9000)
        #expect(try development.checkedURL("http://[::1]:9000/hook").port == 9000)
        for url in ["http://api.example.com/hook", "http://10.0.0.1/hook", "http://localhost:9000/hook"] {
            #expect(throws: WebhookTargetRefusal.self, "\(url)") { try development.checkedURL(url) }
        }
        #expect(throws: WebhookTargetRefusal.self) { try WebhookTargetRules().checkedURL("http://127.0.0.1:9000/") }
        #expect(throws: WebhookTargetRefusal.self, "https to loopback still needs its network allowed") {
            try development.checkedURL("https://127.0.0.1:9000/")
        }
    }
}
