import Foundation

/// Asking before a command destroys something (`siwa users delete`): on a terminal the user answers a prompt; a
/// script, whose standard input is not a terminal, must pass `--yes`, since nobody is there to answer.
enum Confirmation: Equatable {
    /// `--yes` was given: go ahead.
    case proceed
    /// Show what will happen and ask.
    case ask
    /// Refuse: no `--yes` and nobody to ask.
    case refuse

    init(yes: Bool, standardInputIsTerminal: Bool) {
        if yes {
            self = .proceed
        } else {
            self = standardInputIsTerminal ? .ask : .refuse
        }
    }

    /// Whether an answer to a `[y/N]` prompt agrees: `y` or `yes` in any case, spaces ignored; anything else, an
    /// empty line and end of input included, is no.
    static func accepts(_ answer: String?) -> Bool {
        guard let answer else { return false }
        let word = answer.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        return word == "y" || word == "yes"
    }
}
