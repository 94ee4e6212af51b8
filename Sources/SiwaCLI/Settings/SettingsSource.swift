import AppleSignIn
import Configuration
import Foundation
import SystemPackage
import Yams

/// Where siwa's settings come from, merged by swift-configuration: the environment, secret files, a `.env` file and a
/// configuration file, in that order of precedence (see ``SettingsCatalog``). Every command reads its settings through
/// one of these, and ``ServerSettings`` validates them, so that `serve`, `doctor` and the operator commands agree.
struct SettingsSource: Sendable {
    private let reader: ConfigReader
    /// The variables a `<variable>_FILE` secret file supplied (doctor says so instead of printing the value).
    let fromSecretFiles: Set<String>
    /// The configuration file read, if any.
    let configFile: String?
    /// Keys in the configuration file, and `SIWA_*` keys in the `.env` file, that are no setting: a typo would
    /// otherwise be silently ignored, so every command refuses them (``ServerSettings/load(from:createsDataKey:purpose:)``).
    let unknownFileKeys: [String]
    /// `SIWA_*` environment variables that are no setting but resemble one (a variable like no setting at all may
    /// belong to another tool): a warning.
    let unknownVariables: [String]

    /// A source with only these variables: the demo's fixed settings, and tests.
    init(environment: [String: String]) {
        reader = ConfigReader(provider: Self.environmentProvider(environment))
        fromSecretFiles = []
        configFile = nil
        unknownFileKeys = []
        unknownVariables = []
    }

    /// The process's settings.
    /// - Parameters:
    ///   - environment: the process environment (`SIWA_*`, `<variable>_FILE`, `SIWA_CONFIG`).
    ///   - configFile: `--config`; `SIWA_CONFIG` when `nil`.
    ///   - dotEnvFile: read when it exists.
    ///   - fixed: settings over every other source (`siwa demo`'s ties to its own emulator).
    ///   - defaults: settings under every other source (`siwa demo`'s choices for a demo).
    /// - Throws: ``ServerSettings/Problem`` naming a file that cannot be read or parsed.
    static func load(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        configFile: String? = nil,
        dotEnvFile: String = ".env",
        fixed: [String: String] = [:],
        defaults: [String: String] = [:]
    ) async throws -> SettingsSource {
        var providers: [any ConfigProvider] = [environmentProvider(environment)]
        if !fixed.isEmpty { providers.insert(environmentProvider(fixed), at: 0) }
        var dotEnv: [String: String] = [:]
        if FileManager.default.fileExists(atPath: dotEnvFile) {
            guard let text = try? String(contentsOfFile: dotEnvFile, encoding: .utf8) else {
                throw ServerSettings.Problem(variable: dotEnvFile, fix: "cannot read \(dotEnvFile)")
            }
            dotEnv = Self.parseEnvFile(text)
        }
        // `<variable>_FILE`, from the environment or the .env file: the file's content is the value, a secret.
        var secretValues: [AbsoluteConfigKey: ConfigValue] = [:]
        var fromSecretFiles: Set<String> = []
        for setting in SettingsCatalog.byVariable.values {
            let fileVariable = setting.variable + "_FILE"
            // SIWA_PRIVATE_KEY_FILE and SIWA_DATA_KEY_FILE are settings of their own (a key file, which the data
            // key's is created when missing), not this convention.
            guard SettingsCatalog.byVariable[fileVariable] == nil,
                let path = (environment[fileVariable] ?? dotEnv[fileVariable]).flatMap({ $0.isEmpty ? nil : $0 })
            else { continue }
            if environment[setting.variable] != nil {
                throw ServerSettings.Problem(
                    variable: fileVariable,
                    fix: "\(setting.variable) is set too: set the value or the file, not both"
                )
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ServerSettings.Problem(variable: fileVariable, fix: "cannot read \(path)")
            }
            var text = String(decoding: data, as: UTF8.self)
            while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
            secretValues[AbsoluteConfigKey(ConfigKey(setting.key))] = ConfigValue(.string(text), isSecret: true)
            fromSecretFiles.insert(setting.variable)
        }
        if !secretValues.isEmpty { providers.append(InMemoryProvider(name: "secret files", values: secretValues)) }
        if !dotEnv.isEmpty { providers.append(environmentProvider(dotEnv)) }

        let file = configFile ?? environment["SIWA_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        var unknown = dotEnv.keys.filter { $0.hasPrefix("SIWA_") && !Self.isKnownVariable($0) }.sorted()
        if let file {
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw ServerSettings.Problem(variable: "--config", fix: "cannot read \(file)")
            }
            do {
                // A JSON file's `oidc.clients` or `webhooks.endpoints` is an array of objects, which the file
                // provider cannot read: such a file is read here instead, with the array as its JSON text.
                let provider: any ConfigProvider
                let keys: [String]
                if file.lowercased().hasSuffix(".json"), let read = try jsonWithClients(file) {
                    (provider, keys) = read
                } else {
                    (provider, keys) = try await fileProvider(file)
                }
                providers.append(provider)
                unknown += keys.filter { SettingsCatalog.byKey[$0] == nil }.sorted()
            } catch let problem as ServerSettings.Problem {
                throw problem
            } catch {
                throw ServerSettings.Problem(variable: "--config", fix: "cannot parse \(file): \(error)")
            }
        }
        if !defaults.isEmpty { providers.append(environmentProvider(defaults)) }
        return SettingsSource(
            reader: ConfigReader(providers: providers),
            fromSecretFiles: fromSecretFiles,
            configFile: file,
            unknownFileKeys: unknown,
            unknownVariables: environment.keys.filter {
                $0.hasPrefix("SIWA_") && !isKnownVariable($0) && SettingsCatalog.closest(to: $0) != nil
            }
            .sorted()
        )
    }

    private init(
        reader: ConfigReader,
        fromSecretFiles: Set<String>,
        configFile: String?,
        unknownFileKeys: [String],
        unknownVariables: [String]
    ) {
        self.reader = reader
        self.fromSecretFiles = fromSecretFiles
        self.configFile = configFile
        self.unknownFileKeys = unknownFileKeys
        self.unknownVariables = unknownVariables
    }

    /// A setting's variable, its `<variable>_FILE`, or `SIWA_CONFIG`.
    private static func isKnownVariable(_ name: String) -> Bool {
        if name == "SIWA_CONFIG" || SettingsCatalog.byVariable[name] != nil { return true }
        return name.hasSuffix("_FILE") && SettingsCatalog.byVariable[String(name.dropLast(5))] != nil
    }

    /// `SIWA_*` variables: the provider looks `siwa.<key>` up, which it spells `SIWA_<KEY>`.
    private static func environmentProvider(_ variables: [String: String]) -> some ConfigProvider {
        EnvironmentVariablesProvider(
            // An empty variable is unset, so that it does not hide the file's value.
            environmentVariables: variables.filter {
                $0.key.hasPrefix("SIWA_") && !$0.value.trimmingCharacters(in: .whitespaces).isEmpty
            },
            secretsSpecifier: .dynamic { name, _ in
                SettingsCatalog.byVariable[name.uppercased()]?.isSecret == true
            }
        ).prefixKeys(with: "siwa")
    }

    /// A JSON or YAML file by its extension, else `KEY=value` lines; and the setting keys the file holds.
    private static func fileProvider(_ path: String) async throws -> (any ConfigProvider, [String]) {
        let lowercased = path.lowercased()
        if lowercased.hasSuffix(".json") {
            let provider = try await FileProvider<JSONSnapshot>(filePath: FilePath(path))
            return (provider, try jsonKeys(path))
        }
        if lowercased.hasSuffix(".yaml") || lowercased.hasSuffix(".yml") {
            let provider = try await FileProvider<YAMLSnapshot>(filePath: FilePath(path))
            return (provider, try yamlKeys(path))
        }
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let variables = Self.parseEnvFile(text)
        let keys = variables.keys.map { variable in
            SettingsCatalog.byVariable[variable]?.key ?? variable
        }
        return (environmentProvider(variables), keys)
    }

    /// `KEY=VALUE` lines; `#` comments, blank lines and `export ` prefixes allowed; quotes around values removed.
    static func parseEnvFile(_ text: String) -> [String: String] {
        var values: [String: String] = [:]
        for rawLine in text.split(whereSeparator: \.isNewline) {
            var line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("export ") { line.removeFirst("export ".count) }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
                value = String(value.dropFirst().dropLast())
            }
            values[key] = value
        }
        return values
    }

    /// A JSON file whose `oidc.clients` or `webhooks.endpoints` is an array or object, as a provider of its leaves
    /// (those two as their JSON text; strings, numbers, booleans and arrays of strings as the file provider reads
    /// them) and its keys; `nil` for any other file.
    private static func jsonWithClients(_ file: String) throws -> (InMemoryProvider, [String])? {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        let root = try JSONReader.parseObject(data)
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        // The settings whose value is JSON (`oidc.clients`, `webhooks.endpoints`), as their JSON text.
        var jsonTexts: [String: String] = [:]
        for key in Self.jsonValuedKeys {
            let parts = key.split(separator: ".").map(String.init)
            switch root[parts[0]]?[parts[1]] {
            case .array, .object:
                let value = (object?[parts[0]] as? [String: Any])?[parts[1]] ?? []
                jsonTexts[key] = String(decoding: try JSONSerialization.data(withJSONObject: value), as: UTF8.self)
            default: break
            }
        }
        guard !jsonTexts.isEmpty else { return nil }
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        func add(_ value: JSONValue, _ key: String) throws {
            let content: ConfigContent
            switch value {
            case _ where jsonTexts[key] != nil:
                content = .string(jsonTexts[key] ?? "")
            case .object(let members):
                for member in members { try add(member.value, key.isEmpty ? member.key : key + "." + member.key) }
                return
            case .bool(let flag): content = .bool(flag)
            case .number(let text): content = Int(text).map(ConfigContent.int) ?? .double(Double(text) ?? 0)
            case .string(let text): content = .string(text)
            case .array(let items):
                let texts = items.compactMap(\.stringValue)
                guard texts.count == items.count else {
                    throw ServerSettings.Problem(
                        variable: "--config",
                        fix: "\(key) in \(file) must be a list of strings"
                    )
                }
                content = .stringArray(texts)
            case .null: return
            }
            values[AbsoluteConfigKey(ConfigKey(key))] = ConfigValue(content, isSecret: false)
        }
        try add(root, "")
        return (InMemoryProvider(name: file, values: values), values.keys.map { $0.components.joined(separator: ".") })
    }

    /// The settings whose value is JSON, which a JSON configuration file may give as an array or object.
    static let jsonValuedKeys = ["oidc.clients", "webhooks.endpoints"]

    /// The dotted leaf keys of a JSON file (`{"database": {"path": …}}` holds `database.path`).
    private static func jsonKeys(_ path: String) throws -> [String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ServerSettings.Problem(variable: "--config", fix: "\(path) must hold a JSON object")
        }
        func leaves(_ object: [String: Any], _ prefix: String) -> [String] {
            object.flatMap { key, value -> [String] in
                if let nested = value as? [String: Any] { return leaves(nested, prefix + key + ".") }
                return [prefix + key]
            }
        }
        return leaves(object, "")
    }

    /// The dotted leaf keys of a YAML file, as ``jsonKeys(_:)`` reads a JSON file's.
    private static func yamlKeys(_ path: String) throws -> [String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        guard let root = try Yams.load(yaml: text) else { return [] }
        guard let mapping = root as? [String: Any] else {
            throw ServerSettings.Problem(variable: "--config", fix: "\(path) must hold a YAML mapping")
        }
        func leaves(_ mapping: [String: Any], _ prefix: String) -> [String] {
            mapping.flatMap { key, value -> [String] in
                // `oidc.clients` may be a mapping of clients: its own keys are no settings.
                if let nested = value as? [String: Any], prefix + key != "oidc.clients" {
                    return leaves(nested, prefix + key + ".")
                }
                return [prefix + key]
            }
        }
        return leaves(mapping, "")
    }

    /// The value of a setting when it is given, parsed by its declaration; `nil` when it is not given.
    /// - Throws: ``ServerSettings/Problem`` naming the variable, in the declaration's words.
    func given<Value>(_ setting: KeyPath<SettingsCatalog, Setting<Value>>) throws(ServerSettings.Problem) -> Value? {
        let declaration = SettingsCatalog.declared[keyPath: setting]
        guard let text = text(of: declaration) else { return nil }
        return try declaration.parse(text)
    }

    /// The value of a setting that has a default: as given, else the declared default.
    /// - Throws: ``ServerSettings/Problem`` naming the variable, in the declaration's words.
    func value<Value>(_ setting: KeyPath<SettingsCatalog, Setting<Value>>) throws(ServerSettings.Problem) -> Value {
        let declaration = SettingsCatalog.declared[keyPath: setting]
        guard let value = try given(setting) ?? declaration.defaultValue else {
            preconditionFailure("\(declaration.variable) has no default: read it with given(_:)")
        }
        return value
    }

    /// Whether a setting is given at all, whatever its value.
    func isGiven(_ setting: KeyPath<SettingsCatalog, some AnySetting>) -> Bool {
        text(of: SettingsCatalog.declared[keyPath: setting]) != nil
    }

    /// The text of `setting` wherever it came from, read with swift-configuration's typed reads: a list becomes
    /// comma-separated, a number or a boolean its usual spelling. `nil` when unset or empty.
    func text(of setting: any AnySetting) -> String? {
        let key = ConfigKey(setting.key)
        let secret = setting.isSecret
        let text: String?
        if let string = reader.string(forKey: key, isSecret: secret) {
            text = string
        } else if let list = reader.stringArray(forKey: key, isSecret: secret) {
            text = list.joined(separator: ",")
        } else if let number = reader.int(forKey: key, isSecret: secret) {
            text = String(number)
        } else if let number = reader.double(forKey: key, isSecret: secret) {
            text = String(number)
        } else if let flag = reader.bool(forKey: key, isSecret: secret) {
            text = String(flag)
        } else {
            text = nil
        }
        return text.map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
    }
}
