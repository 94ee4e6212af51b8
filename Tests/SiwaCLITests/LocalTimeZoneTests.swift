import Testing

@testable import SiwaCLI

/// `siwa` names the system's zone file in `TZ` when it is unset (so that glibc's `localtime` stops checking the file on
/// every text log line), and leaves a `TZ` the operator chose alone, an empty one included (glibc reads it as UTC).
@Suite struct LocalTimeZoneTests {
    @Test func anUnsetTimeZoneNamesTheSystemsZoneFile() {
        #expect(LocalTimeZone.setting(current: nil) == ":/etc/localtime")
    }

    @Test(arguments: ["UTC", "Europe/Paris", ":/usr/share/zoneinfo/Asia/Tokyo", ""])
    func aTimeZoneTheOperatorSetIsKept(current: String) {
        #expect(LocalTimeZone.setting(current: current) == nil)
    }
}
