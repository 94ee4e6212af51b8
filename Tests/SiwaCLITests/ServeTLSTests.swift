import Foundation
import SiwaTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `siwa serve` with its own TLS: settings it cannot use stop start-up naming them, and a renewed certificate is
/// picked up on SIGHUP and when its files change, without a restart. Needs `openssl` (scripts/with-chromium installs
/// it on CI).
@Suite(
    "siwa serve over https",
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"),
        "openssl is not installed: run through scripts/with-chromium (scripts/test does)"
    )
)
struct ServeTLSTests {
    let folder = try! TemporaryFolder("siwa-tls")

    /// A self-signed certificate for 127.0.0.1 with common name `name`, as `name.pem` and `name-key.pem`.
    private func certificate(_ name: String) async throws -> (certificate: String, key: String) {
        let (status, _, errors) = try await runChildProcess(
            "/usr/bin/openssl",
            arguments: [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                "\(name)-key.pem", "-out", "\(name).pem", "-days", "1", "-subj", "/CN=\(name)", "-addext",
                "subjectAltName=IP:127.0.0.1",
            ],
            directory: folder.path
        )
        try #require(status == 0, "\(String(decoding: errors, as: UTF8.self))")
        return (
            folder.url.appendingPathComponent("\(name).pem").path,
            folder.url.appendingPathComponent("\(name)-key.pem").path
        )
    }

    private func serve(_ settings: [String: String]) async throws -> SiwaProcess.Result {
        try await SiwaProcess.run(
            ["serve"],
            environment: [
                "SIWA_BUNDLE_IDS": "com.example.app", "SIWA_PORT": "0",
                "SIWA_DATABASE_PATH": folder.url.appendingPathComponent("s.sqlite").path,
                "SIWA_DATA_KEY_FILE": folder.url.appendingPathComponent("k").path,
            ].merging(settings) { $1 }
        )
    }

    @Test func settingsItCannotUseStopStartUpNamingThem() async throws {
        let first = try await certificate("first")
        let second = try await certificate("second")
        let mismatched = try await serve([
            "SIWA_TLS_CERTIFICATE_FILE": first.certificate, "SIWA_TLS_KEY_FILE": second.key,
        ])
        #expect(mismatched.status == 2)
        #expect(mismatched.stderr.contains("SIWA_TLS_KEY_FILE"), "\(mismatched.stderr)")
        let alone = try await serve(["SIWA_TLS_CERTIFICATE_FILE": first.certificate])
        #expect(alone.stderr.contains("set SIWA_TLS_CERTIFICATE_FILE and SIWA_TLS_KEY_FILE together"))
        let missing = try await serve([
            "SIWA_TLS_CERTIFICATE_FILE": first.certificate + ".gone", "SIWA_TLS_KEY_FILE": first.key,
        ])
        #expect(missing.stderr.contains("SIWA_TLS_CERTIFICATE_FILE"), "\(missing.stderr)")
        let plainPublicURL = try await serve([
            "SIWA_TLS_CERTIFICATE_FILE": first.certificate, "SIWA_TLS_KEY_FILE": first.key,
            "SIWA_PUBLIC_URL": "http://auth.example.com",
        ])
        #expect(plainPublicURL.status == 2)
        #expect(plainPublicURL.stderr.contains("SIWA_PUBLIC_URL"))
        let fractionalHSTS = try await serve([
            "SIWA_TLS_CERTIFICATE_FILE": first.certificate, "SIWA_TLS_KEY_FILE": first.key,
            "SIWA_TLS_HSTS_MAX_AGE": "1.5",
        ])
        #expect(fractionalHSTS.status == 2)
        #expect(fractionalHSTS.stderr.contains("SIWA_TLS_HSTS_MAX_AGE"), "\(fractionalHSTS.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("s.sqlite").path))
    }

    /// The common name of the certificate the server on `port` presents now.
    private func presentedName(port: Int) async throws -> String? {
        let (_, out, _) = try await runChildProcess(
            "/bin/sh",
            arguments: [
                "-c",
                "openssl s_client -connect 127.0.0.1:\(port) </dev/null 2>/dev/null | openssl x509 -noout -subject",
            ]
        )
        let subject = String(decoding: out, as: UTF8.self)
        return subject.split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    /// Asks until the server presents `name` (the reload is asynchronous), for 10 s at most.
    private func waitUntilPresented(_ name: String, port: Int) async throws -> Bool {
        for _ in 0..<100 {
            if try await presentedName(port: port) == name { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Starts `siwa serve` with `live` as its certificate; stop it with `terminate`.
    private func startServer(
        _ live: (certificate: String, key: String),
        reloadInterval: Int,
        settings: [String: String] = [:]
    ) async throws -> (ChildProcess, port: Int, log: String) {
        try SiwaProcess.startServe(
            in: folder,
            settings: [
                "SIWA_BUNDLE_IDS": "com.example.app", "SIWA_DATABASE_PATH": "s.sqlite",
                "SIWA_TLS_CERTIFICATE_FILE": live.certificate, "SIWA_TLS_KEY_FILE": live.key,
                "SIWA_TLS_RELOAD_INTERVAL": String(reloadInterval),
            ].merging(settings) { $1 }
        )
    }

    /// Puts `renewed`'s files in place of `live`'s, each with one rename, as certbot and cert-manager do.
    private func renew(
        _ live: (certificate: String, key: String),
        with renewed: (certificate: String, key: String)
    )
        throws
    {
        for (from, to) in [(renewed.certificate, live.certificate), (renewed.key, live.key)] {
            try #require(rename(from, to) == 0, "rename \(from) to \(to): errno \(errno)")
        }
    }

    @Test func aRenewedCertificateIsServedAfterSIGHUP() async throws {
        let live = try await certificate("live")
        let renewed = try await certificate("renewed")
        // An interval long enough that only SIGHUP can explain the reload.
        let (server, port, log) = try await startServer(live, reloadInterval: 3600)
        defer {
            server.terminate(signal: SIGTERM)
            _ = server.waitForExit()
        }
        try #require(try await waitUntilPresented("live", port: port), "siwa serve did not serve https")
        try renew(live, with: renewed)
        #expect(try await presentedName(port: port) == "live", "nothing reloads before the signal")
        kill(server.pid, SIGHUP)  // terminate() would wait for an exit
        #expect(try await waitUntilPresented("renewed", port: port), "SIGHUP did not reload")
        #expect(server.isRunning)
        #expect(try String(contentsOfFile: log, encoding: .utf8).contains("reloaded the TLS certificate"))
    }

    @Test func aRenewedCertificateIsServedOnceItsFilesChange() async throws {
        let live = try await certificate("current")
        let renewed = try await certificate("next")
        let (server, port, _) = try await startServer(live, reloadInterval: 1)
        defer {
            server.terminate(signal: SIGTERM)
            _ = server.waitForExit()
        }
        try #require(try await waitUntilPresented("current", port: port), "siwa serve did not serve https")
        try renew(live, with: renewed)
        #expect(try await waitUntilPresented("next", port: port), "the changed files were not read")
    }

    /// The `Strict-Transport-Security` values of `GET /healthz` over https from the server on `port`, which presents
    /// `certificate` (trusted alone).
    private func hsts(port: Int, certificate: String) async throws -> [String] {
        let (status, out, errors) = try await runChildProcess(
            "/usr/bin/curl",
            arguments: [
                "--silent", "--show-error", "--output", "/dev/null", "--dump-header", "-", "--cacert", certificate,
                "--max-time", "10", "https://127.0.0.1:\(port)/healthz",
            ]
        )
        try #require(status == 0, "curl: \(String(decoding: errors, as: UTF8.self))")
        return String(decoding: out, as: UTF8.self).split(separator: "\r\n").compactMap { line in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "strict-transport-security" else { return nil }
            return parts[1].trimmingCharacters(in: .whitespaces)
        }
    }

    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "curl is not installed"),
        arguments: [(nil, ["max-age=31536000"]), ("600", ["max-age=600"]), ("0", [])] as [(String?, [String])]
    )
    func httpsAnswersCarryHSTSUnlessItIsSetOff(maxAge: String?, expected: [String]) async throws {
        let name = "hsts-\(maxAge ?? "default")"
        let live = try await certificate(name)
        let (server, port, log) = try await startServer(
            live,
            reloadInterval: 30,
            settings: maxAge.map { ["SIWA_TLS_HSTS_MAX_AGE": $0] } ?? [:]
        )
        defer {
            server.terminate(signal: SIGTERM)
            _ = server.waitForExit()
        }
        try #require(
            try await waitUntilPresented(name, port: port),
            "siwa serve did not serve https: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")"
        )
        #expect(try await hsts(port: port, certificate: live.certificate) == expected)
    }
}
