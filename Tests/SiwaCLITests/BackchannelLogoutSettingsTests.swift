import AccountStore
import AuthServer
import Foundation
import Testing

@testable import SiwaCLI

/// A client's `backchannelLogoutURI` is read and checked like a webhook endpoint's URL, with errors that name the
/// client and the field.
@Suite("Settings: a relying party's back-channel logout URI")
struct BackchannelLogoutSettingsTests {
    static func entry(_ uri: String) -> String {
        #"[{"id": "grafana", "secretSHA256": ""# + String(repeating: "ab", count: 32)
            + #"", "redirectURIs": ["https://grafana.example.com/cb"], "backchannelLogoutURI": ""# + uri
            + #"", "backchannelLogoutSessionRequired": true}]"#
    }

    @Test func anHTTPSURIIsAnEndpointOfItsClientsEndedSessions() throws {
        let clients = try ServerSettings.openIDClients(Self.entry("https://grafana.example.com/backchannel"))
        let endpoint = try #require(clients.first?.backchannelLogoutEndpoint)
        #expect(endpoint.name == "backchannel:grafana")
        #expect(endpoint.events == [.sessionEnded])
        #expect(endpoint.channel == .openID("grafana"))
        #expect(clients.first?.backchannelLogoutSessionRequired == true)
        try WebhookConfiguration().checkEndpoints([endpoint])
    }

    @Test func aFragmentOrARelativeURIIsRefusedWhenRead() {
        for uri in ["https://grafana.example.com/backchannel#x", "/backchannel", "grafana"] {
            #expect(throws: (any Error).self, "\(uri)") { try ServerSettings.openIDClients(Self.entry(uri)) }
        }
    }

    @Test func plainHTTPAndTheOperatorsNetworkAreRefusedNamingTheClient() throws {
        for uri in ["http://grafana.example.com/backchannel", "https://10.0.0.8/backchannel", "https://[::1]/b"] {
            let endpoint = try #require(
                try ServerSettings.openIDClients(Self.entry(uri)).first?.backchannelLogoutEndpoint
            )
            do {
                try WebhookConfiguration().checkEndpoints([endpoint])
                Issue.record("\(uri) was accepted")
            } catch {
                #expect(error.description.hasPrefix("client grafana: \"backchannelLogoutURI\""), "\(error)")
            }
        }
    }
}
