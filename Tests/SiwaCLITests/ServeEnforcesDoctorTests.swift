import Crypto
import Foundation
import SiwaTesting
import Testing

@testable import SiwaCLI

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `siwa serve` does what `siwa doctor` says it would: a problem stops it before anything is written, a warning is
/// logged once at start in doctor's words, and a misspelt key in a configuration file is a problem with a did-you-mean.
@Suite("siwa serve enforces doctor")
struct ServeEnforcesDoctorTests {
    let folder = try! TemporaryFolder("siwa-enforce")

    /// The test run's environment without its own `SIWA_*` variables.
    private func environment(_ settings: [String: String]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SIWA_") }
        environment["NO_COLOR"] = "1"
        environment["SIWA_PORT"] = "0"
        environment["SIWA_METRICS_PORT"] = "0"
        environment.merge(settings) { $1 }
        return environment
    }

    /// `siwa serve` that is expected to refuse; bounded by `timeout` so that a serve that starts instead fails the
    /// test (status 124) rather than hanging it.
    private func serveRefusal(
        _ arguments: [String] = [],
        _ settings: [String: String]
    ) async throws -> (status: Int32, stderr: String) {
        let (status, _, errors) = try await runChildProcess(
            "/usr/bin/timeout",
            arguments: ["60", SiwaProcess.executable.path, "serve"] + arguments,
            environment: environment(settings),
            directory: folder.path
        )
        return (status, String(decoding: errors, as: UTF8.self))
    }

    private func doctor(
        _ arguments: [String] = [],
        _ settings: [String: String]
    ) async throws -> (status: Int32, findings: [[String: Any]], stdout: String) {
        let (status, out, _) = try await runChildProcess(
            SiwaProcess.executable.path,
            arguments: ["doctor", "--json"] + arguments,
            environment: environment(settings),
            directory: folder.path
        )
        let stdout = String(decoding: out, as: UTF8.self)
        let object = try #require(try JSONSerialization.jsonObject(with: out) as? [String: Any], "\(stdout)")
        return (status, try #require(object["findings"] as? [[String: Any]]), stdout)
    }

    private var base: [String: String] {
        [
            "SIWA_BUNDLE_IDS": "com.example.app",
            "SIWA_DATABASE_PATH": folder.path + "/s.sqlite",
            "SIWA_DATA_KEY_FILE": folder.path + "/data.key",
        ]
    }

    /// Nothing was created: the refusal came before the data key and the database.
    private func expectNothingCreated() {
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/s.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/data.key"))
    }

    /// A port another process holds stops serve before anything is written, naming the listener and its settings:
    /// the metrics port of a second siwa on one host, or the public port.
    @Test(arguments: ["SIWA_METRICS_PORT", "SIWA_PORT"])
    func aTakenPortStopsServeNamingItsSetting(variable: String) async throws {
        let port = try freeLoopbackPort()
        let holder = try RawSocketListener(port: port)
        defer { holder.close() }
        let refusal = try await serveRefusal([], base.merging([variable: "\(port)"]) { $1 })
        #expect(refusal.status == 2, "\(refusal.stderr)")
        let listener = variable == "SIWA_PORT" ? "the public port" : "the metrics listener"
        #expect(refusal.stderr.contains(variable), "\(refusal.stderr)")
        #expect(refusal.stderr.contains("\(listener) cannot listen on 127.0.0.1:\(port)"), "\(refusal.stderr)")
        #expect(refusal.stderr.contains("in use by another process"), "\(refusal.stderr)")
        expectNothingCreated()
        // Doctor tries the same bind, and says the same.
        let (status, findings, stdout) = try await doctor([], base.merging([variable: "\(port)"]) { $1 })
        #expect(status == 1, "\(stdout)")
        let settings = variable == "SIWA_PORT" ? "SIWA_HOST/SIWA_PORT" : "SIWA_METRICS_HOST/SIWA_METRICS_PORT"
        let finding = try #require(findings.first { $0["setting"] as? String == settings }, "\(stdout)")
        #expect(finding["refuses"] as? Bool == true)
        #expect((finding["message"] as? String)?.contains("\(listener) cannot listen on 127.0.0.1:\(port)") == true)
    }

    /// Doctor run beside the service it checks (as the guide runs it after a key rotation) finds the ports held by
    /// that siwa, which answers there: a remark, not the problem a foreign process would be.
    @Test func portsHeldByARunningSiwaAreNoProblemToDoctor() async throws {
        let port = try freeLoopbackPort(in: 10_000..<20_000)
        let metricsPort = try freeLoopbackPort(in: 10_000..<20_000)
        let settings = base.merging(["SIWA_PORT": "\(port)", "SIWA_METRICS_PORT": "\(metricsPort)"]) { $1 }
        let log = folder.path + "/serve.log"
        let server = try ChildProcess(
            SiwaProcess.executable.path,
            arguments: ["serve"],
            environment: environment(settings),
            directory: folder.path,
            stdout: log,
            stderr: log
        )
        defer { server.terminate(signal: SIGTERM) }
        try #require(
            try await SiwaProcess.waitUntilServing(port: port),
            "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")"
        )
        let (status, findings, stdout) = try await doctor([], settings)
        #expect(status != 1, "\(stdout)")
        for (name, path) in [("SIWA_HOST/SIWA_PORT", "/readyz"), ("SIWA_METRICS_HOST/SIWA_METRICS_PORT", "/metrics")] {
            let finding = try #require(findings.first { $0["setting"] as? String == name }, "\(stdout)")
            #expect(finding["note"] as? Bool == true, "\(finding)")
            #expect(
                (finding["message"] as? String)?.contains("is held by a running siwa (it answers \(path))") == true,
                "\(finding)"
            )
        }
    }

    /// Secure cookies on an http public URL break every web sign-in (browsers drop them, the flow cookie too): a
    /// problem, so serve refuses before anything is written.
    @Test func secureCookiesOnAnHTTPPublicURLStopServe() async throws {
        let settings = base.merging([
            "SIWA_SECURE_COOKIES": "true", "SIWA_PUBLIC_URL": "http://auth.example.com",
        ]) { $1 }
        let refusal = try await serveRefusal([], settings)
        #expect(refusal.status == 2, "\(refusal.stderr)")
        #expect(refusal.stderr.contains("error: SIWA_SECURE_COOKIES: cookies are marked Secure"), "\(refusal.stderr)")
        expectNothingCreated()
        let (status, findings, _) = try await doctor([], settings)
        #expect(status != 0)
        let finding = try #require(findings.first { $0["setting"] as? String == "SIWA_SECURE_COOKIES" })
        #expect(finding["refuses"] as? Bool == true, "a problem (✗), not a warning: \(finding)")
    }

    @Test func aMisspeltKeyResemblesTheSettingItMeant() {
        #expect(SettingsCatalog.closest(to: "trustedProxy") == "trustedProxies")
        #expect(SettingsCatalog.closest(to: "SIWA_TRUSTED_PROXY") == "SIWA_TRUSTED_PROXIES")
        #expect(SettingsCatalog.closest(to: "ratelimit") == "rateLimit")
        #expect(SettingsCatalog.closest(to: "database.pth") == "database.path")
        #expect(SettingsCatalog.closest(to: "colourScheme") == nil)
        #expect(SettingsCatalog.closest(to: "SIWA_TEST_POSTGRES_URL") == nil)
    }

    /// A typo such as `trustedProxy` used to leave every client sharing the proxy's rate-limit bucket, silently.
    @Test(arguments: [
        (
            "siwa.json", #"{"bundleIDs": ["com.example.app"], "trustedProxy": "10.0.0.1"}"#, "trustedProxy",
            "trustedProxies"
        ),
        ("siwa.yaml", "bundleIDs:\n  - com.example.app\ndatabase:\n  pth: x.sqlite\n", "database.pth", "database.path"),
        ("siwa.env", "SIWA_BUNDLE_IDS=com.example.app\nSIWA_RATELIMIT=5\n", "SIWA_RATELIMIT", "SIWA_RATE_LIMIT"),
    ])
    func aKeyThatIsNoSettingStopsServeWithADidYouMean(
        file: String,
        text: String,
        unknown: String,
        meant: String
    ) async throws {
        let config = try folder.write(file, text)
        var settings = base
        settings["SIWA_BUNDLE_IDS"] = nil
        let refused = try await serveRefusal(["--config", config], settings)
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("'\(unknown)' is no setting: did you mean '\(meant)'?"), "\(refused.stderr)")
        expectNothingCreated()

        let doctor = try await doctor(["--config", config], settings)
        #expect(doctor.status == 1, "\(doctor.stdout)")
        let finding = try #require(doctor.findings.first { $0["setting"] as? String == unknown }, "\(doctor.stdout)")
        #expect(finding["refuses"] as? Bool == true)
        #expect((finding["message"] as? String)?.contains("did you mean '\(meant)'") == true)
    }

    /// The same typo in `.env`, which serve reads without being told.
    @Test func aMisspeltVariableInDotEnvStopsServe() async throws {
        _ = try folder.write(".env", "SIWA_TRUSTED_PROXY=10.0.0.1\n")
        let refused = try await serveRefusal([], base)
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("did you mean 'SIWA_TRUSTED_PROXIES'?"), "\(refused.stderr)")
        expectNothingCreated()
    }

    /// In the environment, which other tools share, a variable that resembles a setting is a warning, not a refusal.
    @Test func aMisspeltEnvironmentVariableIsAWarning() async throws {
        let result = try await doctor([], base.merging(["SIWA_TRUSTED_PROXY": "10.0.0.1"]) { $1 })
        let finding = try #require(
            result.findings.first { $0["setting"] as? String == "SIWA_TRUSTED_PROXY" },
            "\(result.stdout)"
        )
        #expect(finding["ok"] as? Bool == false)
        #expect(finding["refuses"] == nil)
        #expect((finding["message"] as? String)?.contains("did you mean 'SIWA_TRUSTED_PROXIES'") == true)
        #expect(result.status == 3, "\(result.stdout)")
    }

    /// Doctor used to say serve would start when the database's folder is missing; serve then failed on its first
    /// write, after creating its data key.
    @Test func aMissingDataFolderStopsServeAndDoctorSaysSo() async throws {
        var settings = base
        settings["SIWA_DATABASE_PATH"] = folder.path + "/missing/s.sqlite"
        let doctor = try await doctor([], settings)
        #expect(doctor.status == 1, "\(doctor.stdout)")
        let finding = try #require(
            doctor.findings.first { $0["setting"] as? String == "SIWA_DATABASE_PATH" && $0["ok"] as? Bool == false },
            "\(doctor.stdout)"
        )
        #expect(finding["refuses"] as? Bool == true)
        let message = try #require(finding["message"] as? String)
        #expect(message.contains("the directory \(folder.path)/missing for"))

        let refused = try await serveRefusal([], settings)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains(message), "serve says it in doctor's words: \(refused.stderr)")
        expectNothingCreated()
    }

    /// A warning does not stop serve: it is logged once, at start, in doctor's words. `allowUnknownSettings` turns a
    /// key that is no setting into one.
    @Test func warningsAreLoggedOnceAtStart() async throws {
        let key = P256.Signing.PrivateKey()
        let keyFile = try folder.write("AuthKey_OTHERKEY01.p8", key.pemRepresentation)
        let config = try folder.write("siwa.json", #"{"allowUnknownSettings": true, "futureSetting": 1}"#)
        var settings = base
        settings.merge([
            "SIWA_TEAM_ID": "ABCDE12345", "SIWA_KEY_ID": "KEY1234567", "SIWA_PRIVATE_KEY_FILE": keyFile,
            "SIWA_CONFIG": config,
        ]) { $1 }
        let doctor = try await doctor([], settings)
        #expect(doctor.status == 3, "warnings only: \(doctor.stdout)")
        let warnings = doctor.findings.filter { $0["ok"] as? Bool == false }.compactMap { $0["message"] as? String }
        #expect(warnings.count == 2, "\(doctor.stdout)")

        let (server, port, log) = try SiwaProcess.startServe(in: folder, settings: settings)
        defer {
            server.terminate(signal: SIGTERM)
            _ = server.waitForExit()
        }
        try #require(try await SiwaProcess.waitUntilServing(port: port), "siwa serve did not start")
        let text = try String(contentsOfFile: log, encoding: .utf8)
        for warning in warnings {
            #expect(text.components(separatedBy: warning).count == 2, "logged once: \(warning)\n\(text)")
        }
        #expect(text.contains("the key file is named AuthKey_OTHERKEY01.p8 but SIWA_KEY_ID is KEY1234567"))
        #expect(text.contains("'futureSetting' is no setting"))
    }
}
