import AuthServer
import Foundation
import Testing

@testable import SiwaCLI

/// Each setting is declared once in `SettingsCatalog`, and the reader, the reference and doctor take it from there.
@Suite("Settings declarations")
struct SettingsDeclarationTests {
    private let base = [
        "SIWA_BUNDLE_IDS": "com.example.app",
        "SIWA_DATA_KEY": Data(repeating: 7, count: 32).base64EncodedString(),
    ]

    /// Giving a setting its declared default changes nothing the server gets: the default the reference prints is the
    /// one the server uses when the setting is absent.
    @Test func everyDeclaredDefaultIsWhatTheServerGetsWithoutIt() throws {
        // Given alone, the mode is refused: it needs a key set, whose keys would make the two loads differ.
        let exempt: Set<String> = ["SIWA_APPLE_KEY_SET_MODE"]
        let absent = try effective(ServerSettings.load(from: base, createsDataKey: false))
        var checked = 0
        for setting in SettingsCatalog.all where !exempt.contains(setting.variable) {
            guard let spelling = setting.defaultSpelling else { continue }
            #expect(setting.refusal(of: spelling) == nil, "\(setting.variable)'s default '\(spelling)' is refused")
            let given = try ServerSettings.load(
                from: base.merging([setting.variable: spelling]) { $1 },
                createsDataKey: false
            )
            #expect(effective(given) == absent, "\(setting.variable)=\(spelling) is not what its absence gives")
            checked += 1
        }
        #expect(checked > 35)
    }

    /// Every setting has a type, a meaning and one key and variable; the reference shows type and allowed values.
    @Test func everySettingIsDeclaredWhole() {
        #expect(Set(SettingsCatalog.all.map(\.variable)).count == SettingsCatalog.all.count)
        #expect(Set(SettingsCatalog.all.map(\.key)).count == SettingsCatalog.all.count)
        for setting in SettingsCatalog.all {
            #expect(setting.variable.hasPrefix("SIWA_") && !setting.type.isEmpty && !setting.meaning.isEmpty)
            let row = "| `\(setting.key)` | `\(setting.variable)` | \(setting.type) |"
            #expect(SettingsCatalog.markdownReference.contains(row), "\(setting.variable)")
        }
    }

    /// The refusals come from the declarations, in the words the operator reads.
    @Test func refusalsNameTheVariableAndWhatWasExpected() throws {
        let cases = [
            ("SIWA_AUDIT_RETENTION_DAYS", "abc", "expected a whole number from 1 to 3650, got 'abc'"),
            ("SIWA_PORT", "80.5", "expected a whole number from 0 to 65535, got '80.5'"),
            ("SIWA_ACCESS_TOKEN_LIFETIME", "-5", "expected a number from 60 to 86400, got '-5'"),
            ("SIWA_REQUIRE_SERVER_NONCE", "maybe", "expected true or false, got 'maybe'"),
            ("SIWA_ACCOUNT_DELETION_MODE", "purge", "expected delete or anonymise, got 'purge'"),
            (
                "SIWA_LOG_LEVEL", "loud",
                "expected trace, debug, info, notice, warning, error or critical, got 'loud'"
            ),
            (
                "SIWA_FORWARDED_HEADER", "x-real-ip",
                "expected x-forwarded-for or forwarded (the header your proxy writes), got 'x-real-ip'"
            ),
        ]
        for (variable, value, fix) in cases {
            let problem = try #require(throws: ServerSettings.Problem.self) {
                try ServerSettings.load(from: base.merging([variable: value]) { $1 }, createsDataKey: false)
            }
            #expect(problem.description == "\(variable): \(fix)")
        }
    }

    /// What the server gets from its settings, without what says only whether a setting was given, and without key
    /// material.
    private func effective(_ settings: ServerSettings) -> String {
        var out = ""
        dump(
            (
                settings.host, settings.port, settings.server, settings.appleIfConfigured, settings.databaseURL,
                settings.databasePath, settings.databaseMaxConnections, settings.tls == nil, settings.logLevel,
                settings.logFormat, settings.dataKeyFile, settings.dataKeys.ids
            ),
            to: &out
        )
        return out
    }
}
