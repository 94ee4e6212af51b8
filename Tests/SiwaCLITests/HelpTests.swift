import Foundation
import Testing

/// Every command's and group's `--help`, walked from `siwa --help` down through each SUBCOMMANDS list, so that a
/// command added later is checked too.
@Suite("siwa --help")
struct HelpTests {
    /// The subcommand names in a help text's SUBCOMMANDS section.
    private static func subcommands(in help: String) -> [String] {
        guard let section = help.components(separatedBy: "SUBCOMMANDS:").dropFirst().first else { return [] }
        var names: [String] = []
        for line in section.split(separator: "\n", omittingEmptySubsequences: false).dropFirst() {
            if line.isEmpty || !line.hasPrefix("  ") { break }
            // A name starts at two spaces of indent; deeper indents continue the previous abstract.
            guard !line.hasPrefix("   "), let name = line.split(separator: " ").first else { continue }
            names.append(String(name))
        }
        return names
    }

    @Test func everyCommandAndGroupShowsAnExample() async throws {
        var pending: [[String]] = [[]]
        var checked: [String] = []
        while let path = pending.popLast() {
            let result = try await SiwaProcess.run(path + ["--help"])
            let name = (["siwa"] + path).joined(separator: " ")
            #expect(result.status == 0, "\(name) --help exited \(result.status)")
            #expect(result.stdout.contains("Example"), "\(name) --help shows no example")
            // A backslash is a shell line's continuation in an example, and nothing else (a `\\` meant for the
            // source's line continuation once reached the screen).
            let prose = result.stdout.components(separatedBy: "Example").first ?? ""
            #expect(!prose.contains("\\"), "\(name) --help prints a stray backslash: \(prose)")
            #expect(!result.stdout.contains("\\\\"), "\(name) --help prints a doubled backslash")
            checked.append(name)
            pending += Self.subcommands(in: result.stdout).filter { $0 != "help" }.map { path + [$0] }
        }
        // The walk found the groups and their commands, not only the top.
        for name in [
            "siwa users", "siwa users list", "siwa keys rotate", "siwa keys rotate-data-key", "siwa transfer import",
            "siwa demo",
        ] {
            #expect(checked.contains(name), "\(name) was not reached: \(checked)")
        }
    }

    /// The version is written once: `siwa --version` prints it and the changelog's newest entry is that version.
    @Test func theVersionIsTheChangelogsNewestEntry() async throws {
        let version = try await SiwaProcess.run(["--version"])
        #expect(version.status == 0)
        let printed = version.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(printed.split(separator: ".").count == 3, "\(printed)")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let changelog = try String(contentsOf: root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let newest = try #require(changelog.split(separator: "\n").first { $0.hasPrefix("## ") })
        #expect(newest.hasPrefix("## \(printed) "), "CHANGELOG.md's newest entry is \(newest), siwa is \(printed)")
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("LICENSE").path))
    }
}
