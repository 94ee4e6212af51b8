import AuthServer
import Foundation
import Testing

@testable import SiwaCLI

/// The settings table against swift-configuration's own spelling of environment variables: each key of the file is
/// found under the variable the reference names, so a file key and its `SIWA_*` variable are one setting.
@Suite("Settings catalog")
struct SettingsCatalogTests {
    @Test func everyKeyIsReadFromTheVariableTheReferenceNames() {
        let settings = SettingsCatalog.sections.flatMap(\.settings)
        #expect(settings.count == SettingsCatalog.byVariable.count, "a variable is listed twice")
        for setting in settings {
            let source = SettingsSource(environment: [setting.variable: "value-of-\(setting.key)"])
            #expect(source.text(of: setting) == "value-of-\(setting.key)", "\(setting.key) ≠ \(setting.variable)")
        }
    }

    /// `SIWA_AUDIT_RETENTION_DAYS` reaches housekeeping (90 days by default).
    @Test func theAuditRetentionReachesHousekeeping() throws {
        let base = ["SIWA_BUNDLE_IDS": "com.example.app", "SIWA_DATA_KEY_FILE": "/nonexistent/siwa-test.key"]
        let defaults = try ServerSettings.load(from: base, createsDataKey: false)
        #expect(defaults.server.housekeeping.auditRetention == 90 * 86_400)
        let set = try ServerSettings.load(
            from: base.merging(["SIWA_AUDIT_RETENTION_DAYS": "30"]) { $1 },
            createsDataKey: false
        )
        #expect(set.server.housekeeping.auditRetention == 30 * 86_400)
    }

    @Test func anEmptyVariableIsUnset() {
        #expect(!SettingsSource(environment: ["SIWA_PORT": "  "]).isGiven(\.server.port))
    }
}
