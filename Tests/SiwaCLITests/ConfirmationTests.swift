import Testing

@testable import SiwaCLI

/// The decision and the answer parsing behind `siwa users delete`'s prompt (a subprocess never has a terminal).
@Suite("Confirmation")
struct ConfirmationTests {
    @Test func yesProceedsATerminalAsksAndAScriptIsRefused() {
        #expect(Confirmation(yes: true, standardInputIsTerminal: false) == .proceed)
        #expect(Confirmation(yes: true, standardInputIsTerminal: true) == .proceed)
        #expect(Confirmation(yes: false, standardInputIsTerminal: true) == .ask)
        #expect(Confirmation(yes: false, standardInputIsTerminal: false) == .refuse)
    }

    @Test(arguments: ["y", "Y", "yes", "YES", " yes ", "y\n"])
    func yOrYesAgrees(_ answer: String) {
        #expect(Confirmation.accepts(answer))
    }

    @Test(arguments: [nil, "", "n", "no", "N", "yep", "ye", "delete", "y es", "1"])
    func anythingElseIsNo(_ answer: String?) {
        #expect(!Confirmation.accepts(answer))
    }
}
