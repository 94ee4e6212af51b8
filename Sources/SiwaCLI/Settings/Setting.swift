import Foundation

/// One setting, declared once in ``SettingsCatalog``: where it is read from, what it means, its type, its default and
/// the values it allows, and the code that turns its text into a value. The reader (``SettingsSource/read(_:)``),
/// `siwa doctor` and the generated `docs/configuration.md` all take it from here, so that they cannot disagree.
struct Setting<Value: Sendable>: AnySetting {
    let key: String
    let variable: String
    let meaning: String
    let isSecret: Bool
    let type: String
    let allowed: String
    /// The value when the setting is not given; `nil` when there is none (the setting is off, or derived from others
    /// as ``defaultText`` says).
    let defaultValue: Value?
    let defaultText: String
    let defaultSpelling: String?
    private let parser: @Sendable (String) throws(Refusal) -> Value

    typealias Refusal = SettingRefusal

    /// Declares a setting.
    /// - Parameters:
    ///   - key: the key in a configuration file (`database.path`).
    ///   - variable: the environment variable (`SIWA_DATABASE_PATH`).
    ///   - type: the type as the reference names it (`whole number`, `seconds`, `flag`, `list`, `URL`).
    ///   - allowed: the values allowed, as the reference shows them (`1 to 3650`); empty for any value of the type.
    ///   - defaultValue: the value when the setting is not given.
    ///   - defaultText: the default as the reference writes it; `nil` to write ``defaultValue`` with `format`.
    ///   - format: how a value is written, for the reference's default.
    ///   - isSecret: whether the value is never printed: read as secret, and doctor says only where it came from.
    ///   - meaning: what it means, in one or two sentences.
    ///   - parse: the value of a text (trimmed, never empty), or the refusal naming what was expected.
    init(
        key: String,
        variable: String,
        type: String,
        allowed: String = "",
        defaultValue: Value? = nil,
        defaultText: String? = nil,
        format: (Value) -> String = { "\($0)" },
        isSecret: Bool = false,
        meaning: String,
        parse: @escaping @Sendable (String) throws(Refusal) -> Value
    ) {
        self.key = key
        self.variable = variable
        self.type = type
        self.allowed = allowed
        self.defaultValue = defaultValue
        self.defaultSpelling = defaultText == nil ? defaultValue.map(format).flatMap { $0.isEmpty ? nil : $0 } : nil
        self.defaultText = defaultText ?? defaultSpelling ?? ""
        self.isSecret = isSecret
        self.meaning = meaning
        self.parser = parse
    }

    /// The value of `text`, as the reader takes it.
    /// - Throws: ``ServerSettings/Problem`` naming the variable and what was expected.
    func parse(_ text: String) throws(ServerSettings.Problem) -> Value {
        do {
            return try parser(text)
        } catch {
            throw ServerSettings.Problem(variable: variable, fix: error.fix)
        }
    }

    func refusal(of text: String) -> String? {
        do {
            _ = try parser(text)
            return nil
        } catch {
            return error.fix
        }
    }
}

/// Why a text is not a value of a setting, in words that follow the variable's name
/// (`expected a whole number from 1 to 3650, got 'abc'`).
struct SettingRefusal: Error {
    let fix: String
    init(_ fix: String) { self.fix = fix }
}

/// A setting whatever its type: what the reference, the sources' key lists and doctor need.
protocol AnySetting: Sendable {
    /// The key in a configuration file: `port` is `{"port": 8080}`, `database.path` is
    /// `{"database": {"path": "..."}}`.
    var key: String { get }
    /// The environment variable, `SIWA_` and the key in upper snake case (`database.path` is `SIWA_DATABASE_PATH`).
    /// Also accepted as `<variable>_FILE`, naming a file that holds the value.
    var variable: String { get }
    /// What it means, in one or two sentences.
    var meaning: String { get }
    /// A value that must never be printed: it is read as secret and doctor shows only where it came from.
    var isSecret: Bool { get }
    /// The type, as the reference names it.
    var type: String { get }
    /// The values allowed, as the reference shows them; empty for any value of the type.
    var allowed: String { get }
    /// The default as an operator would write it; empty when there is none.
    var defaultText: String { get }
    /// The default as a value of the setting is written (so that giving it changes nothing); `nil` when there is no
    /// default, or when ``defaultText`` describes it in words (`twice the rate`).
    var defaultSpelling: String? { get }
    /// Why `text` is no value of this setting; `nil` when it is one.
    func refusal(of text: String) -> String?
}

extension Setting where Value == String {
    /// Text, such as an address or a name; `check` refuses what the setting cannot use.
    static func text(
        _ key: String,
        _ variable: String,
        type: String = "text",
        default defaultValue: String? = nil,
        defaultText: String? = nil,
        isSecret: Bool = false,
        meaning: String,
        check: @escaping @Sendable (String) throws(Refusal) -> Void = { _ throws(Refusal) in }
    ) -> Setting {
        Setting(
            key: key,
            variable: variable,
            type: type,
            defaultValue: defaultValue,
            defaultText: defaultText,
            isSecret: isSecret,
            meaning: meaning
        ) { text throws(Refusal) in
            try check(text)
            return text
        }
    }
}

extension Setting where Value == Int {
    /// A whole number within `range`: a count, a port, or whole seconds or days (`type`).
    static func wholeNumber(
        _ key: String,
        _ variable: String,
        type: String = "whole number",
        default defaultValue: Int?,
        defaultText: String? = nil,
        range: ClosedRange<Int>,
        meaning: String
    ) -> Setting {
        Setting(
            key: key,
            variable: variable,
            type: type,
            allowed: "\(range.lowerBound) to \(range.upperBound)",
            defaultValue: defaultValue,
            defaultText: defaultText,
            meaning: meaning
        ) { text throws(Refusal) in
            // A JSON or YAML number may arrive as `16.0`.
            guard let number = Double(text), number == number.rounded(), abs(number) < 1e15,
                range.contains(Int(number))
            else {
                throw Refusal("expected a whole number from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
            }
            return Int(number)
        }
    }
}

extension Setting where Value == Double {
    /// A number within `range`, fractions allowed: seconds, or a rate (`type`).
    static func number(
        _ key: String,
        _ variable: String,
        type: String = "number",
        default defaultValue: Double?,
        defaultText: String? = nil,
        range: ClosedRange<Double>,
        meaning: String
    ) -> Setting {
        let bounds = "\(Setting.plain(range.lowerBound)) to \(Setting.plain(range.upperBound))"
        return Setting(
            key: key,
            variable: variable,
            type: type,
            allowed: bounds,
            defaultValue: defaultValue,
            defaultText: defaultText,
            format: Setting.plain,
            meaning: meaning
        ) { text throws(Refusal) in
            guard let number = Double(text), range.contains(number) else {
                throw Refusal("expected a number from \(bounds), got '\(text)'")
            }
            return number
        }
    }
}

extension Setting where Value == Duration {
    /// Seconds within `range`, fractions allowed, as a `Duration`; 0 means off where `range` allows it.
    static func duration(
        _ key: String,
        _ variable: String,
        default defaultValue: Duration,
        range: ClosedRange<Double>,
        meaning: String
    ) -> Setting {
        let seconds = Setting<Double>.number(key, variable, default: nil, range: range, meaning: meaning)
        return Setting(
            key: key,
            variable: variable,
            type: "seconds",
            allowed: seconds.allowed,
            defaultValue: defaultValue,
            format: Setting.plainSeconds,
            meaning: meaning
        ) { text throws(Refusal) in
            do throws(ServerSettings.Problem) {
                return .milliseconds(Int64(try seconds.parse(text) * 1000))
            } catch {
                throw Refusal(error.fix)
            }
        }
    }
}

extension Setting where Value == Bool {
    /// true or false (also 1/0, yes/no, on/off).
    static func flag(
        _ key: String,
        _ variable: String,
        default defaultValue: Bool?,
        defaultText: String? = nil,
        meaning: String
    ) -> Setting {
        Setting(
            key: key,
            variable: variable,
            type: "flag",
            allowed: "true, false",
            defaultValue: defaultValue,
            defaultText: defaultText,
            meaning: meaning
        ) { text throws(Refusal) in
            switch text.lowercased() {
            case "1", "true", "yes", "on": return true
            case "0", "false", "no", "off": return false
            default: throw Refusal("expected true or false, got '\(text.lowercased())'")
            }
        }
    }
}

extension Setting where Value == [String] {
    /// A list: an array in a JSON or YAML file, comma-separated in the environment; `check` refuses a list the setting
    /// cannot use.
    static func list(
        _ key: String,
        _ variable: String,
        allowed: String = "",
        lowercased: Bool = false,
        meaning: String,
        check: @escaping @Sendable ([String]) throws(Refusal) -> Void = { _ throws(Refusal) in }
    ) -> Setting {
        list(key, variable, allowed: allowed, default: [], lowercased: lowercased, meaning: meaning) {
            items throws(Refusal) in
            try check(items)
            return items
        }
    }
}

extension Setting {
    /// A list made into a value by `make`: an array in a JSON or YAML file, comma-separated in the environment.
    static func list(
        _ key: String,
        _ variable: String,
        allowed: String = "",
        default defaultValue: Value,
        defaultText: String? = nil,
        lowercased: Bool = false,
        meaning: String,
        make: @escaping @Sendable ([String]) throws(Refusal) -> Value
    ) -> Setting {
        Setting(
            key: key,
            variable: variable,
            type: "list",
            allowed: allowed,
            defaultValue: defaultValue,
            // An empty list is no default to write.
            defaultText: defaultText ?? "",
            meaning: meaning
        ) { text throws(Refusal) in
            let items = text.split(separator: ",").map {
                let item = $0.trimmingCharacters(in: .whitespaces)
                return lowercased ? item.lowercased() : item
            }
            .filter { !$0.isEmpty }
            return try make(items)
        }
    }
}

extension Setting where Value: RawRepresentable<String> {
    /// One of `allowed`, by its name (any case); `hint` follows the names in the refusal.
    static func choice(
        _ key: String,
        _ variable: String,
        default defaultValue: Value?,
        allowed: [Value],
        hint: String = "",
        meaning: String
    ) -> Setting {
        let names = allowed.map(\.rawValue)
        let spelt = names.dropLast().joined(separator: ", ") + (names.count > 1 ? " or " : "") + (names.last ?? "")
        return Setting(
            key: key,
            variable: variable,
            type: "one of",
            allowed: names.joined(separator: ", "),
            defaultValue: defaultValue,
            format: \.rawValue,
            meaning: meaning
        ) { text throws(Refusal) in
            guard let value = Value(rawValue: text.lowercased()), names.contains(value.rawValue) else {
                throw Refusal("expected \(spelt)\(hint.isEmpty ? "" : " " + hint), got '\(text)'")
            }
            return value
        }
    }
}

extension Setting {
    /// A bound as people write it: `65535`, not `65535.0`.
    static func plain(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }

    /// A duration in seconds as people write it.
    static func plainSeconds(_ duration: Duration) -> String {
        plain(Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18)
    }
}
