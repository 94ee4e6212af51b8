import AppleSignIn

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writing for people: colour only when standard output is a terminal (and `NO_COLOR` is unset).
struct Terminal {
    let colours: Bool

    init() {
        colours = isatty(STDOUT_FILENO) == 1 && getenv("NO_COLOR") == nil
    }

    func green(_ text: String) -> String { colours ? "\u{1B}[32m\(text)\u{1B}[0m" : text }
    func red(_ text: String) -> String { colours ? "\u{1B}[31m\(text)\u{1B}[0m" : text }
    func yellow(_ text: String) -> String { colours ? "\u{1B}[33m\(text)\u{1B}[0m" : text }
    func dim(_ text: String) -> String { colours ? "\u{1B}[2m\(text)\u{1B}[0m" : text }

    /// Writes a line to standard output at once, unbuffered, whatever it is (a terminal, a file, a pipe): a
    /// long-running command's banner reaches a log when it is printed, not when a buffer fills or the process ends.
    static func say(_ text: String) {
        var line = text + "\n"
        line.withUTF8 { _ = write(STDOUT_FILENO, $0.baseAddress, $0.count) }
    }

    /// Writes to standard error.
    static func error(_ text: String) {
        var line = text + "\n"
        line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    /// Writes a question to standard error without ending the line, for the answer typed after it.
    static func prompt(_ text: String) {
        var text = text
        text.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    /// Whether standard input is a terminal (someone can answer a prompt).
    static var standardInputIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }

    /// Reports a failure: `{"error": code, "message": reason}` on standard output with `--json`, else a line on
    /// standard error.
    static func report(_ error: AppleSignInError, json: Bool) {
        if json {
            var out: [UInt8] = Array("{\"error\":".utf8)
            JSONWriter.appendString(error.code.description, to: &out)
            out.append(contentsOf: ",\"message\":".utf8)
            JSONWriter.appendString(error.reason, to: &out)
            out.append(UInt8(ascii: "}"))
            print(String(decoding: out, as: UTF8.self))
        } else {
            Terminal.error("error: \(error.code): \(error.reason)")
        }
    }
}
