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
            #expect(source.value(setting.variable) == "value-of-\(setting.key)", "\(setting.key) ≠ \(setting.variable)")
        }
    }

    @Test func anEmptyVariableIsUnset() {
        #expect(SettingsSource(environment: ["SIWA_PORT": "  "]).value("SIWA_PORT") == nil)
    }
}
