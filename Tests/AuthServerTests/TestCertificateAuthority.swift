import Foundation
import SiwaTesting
import Testing

/// A certificate authority made for one test run with `openssl`, and a server certificate it signed for 127.0.0.1 and
/// localhost; with `certutil`, an NSS database (in a `HOME` of its own) that trusts the CA, as Chromium on Linux reads
/// it. Nothing is trusted system-wide, and the browser is not told to ignore certificate errors. Its folder is removed
/// when the last copy of the authority goes, once the test is done with it.
struct TestCertificateAuthority {
    let folder: TemporaryFolder
    var caCertificate: String { folder.url.appendingPathComponent("ca.pem").path }
    var serverCertificate: String { folder.url.appendingPathComponent("server.pem").path }
    var serverKey: String { folder.url.appendingPathComponent("server-key.pem").path }
    /// A `HOME` whose `.pki/nssdb` trusts the CA (for the browser's environment).
    var browserHome: String { folder.url.appendingPathComponent("home").path }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func create() async throws -> TestCertificateAuthority {
        let authority = TestCertificateAuthority(folder: try TemporaryFolder("siwa-ca"))
        let folder = authority.folder.url
        let nssdb = folder.appendingPathComponent("home/.pki/nssdb")
        try FileManager.default.createDirectory(at: nssdb, withIntermediateDirectories: true)
        let ca = ["-subj", "/CN=siwa test CA \(UUID().uuidString.prefix(8))"]
        try await run(
            "openssl",
            ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca-key.pem"],
            in: folder
        )
        try await run(
            "openssl",
            ["req", "-x509", "-new", "-key", "ca-key.pem", "-out", "ca.pem", "-days", "2", "-sha256"] + ca
                + ["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
            in: folder
        )
        try await run(
            "openssl",
            ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "server-ec.pem"],
            in: folder
        )
        // PKCS#8, the form every server reads.
        try await run(
            "openssl",
            ["pkcs8", "-topk8", "-nocrypt", "-in", "server-ec.pem", "-out", "server-key.pem"],
            in: folder
        )
        try await run(
            "openssl",
            ["req", "-new", "-key", "server-key.pem", "-out", "server.csr", "-subj", "/CN=localhost"],
            in: folder
        )
        try """
        subjectAltName=IP:127.0.0.1,DNS:localhost
        basicConstraints=critical,CA:FALSE
        keyUsage=critical,digitalSignature
        extendedKeyUsage=serverAuth
        """.write(to: folder.appendingPathComponent("server.ext"), atomically: true, encoding: .utf8)
        try await run(
            "openssl",
            [
                "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
                "-out", "server.pem", "-days", "2", "-sha256", "-extfile", "server.ext",
            ],
            in: folder
        )
        try await run("certutil", ["-N", "-d", "sql:\(nssdb.path)", "--empty-password"], in: folder)
        try await run(
            "certutil",
            ["-A", "-d", "sql:\(nssdb.path)", "-n", "siwa-test-ca", "-t", "C,,", "-i", authority.caCertificate],
            in: folder
        )
        return authority
    }

    /// The browser's environment: the test process's, with the CA-trusting `HOME`.
    var browserEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = browserHome
        return environment
    }

    private static func run(_ tool: String, _ arguments: [String], in folder: URL) async throws {
        let path = ["/usr/bin/\(tool)", "/bin/\(tool)", "/usr/local/bin/\(tool)"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let path else {
            throw Failure(description: "\(tool) is not installed (scripts/with-chromium installs it)")
        }
        let (status, _, errors) = try await runChildProcess(path, arguments: arguments, directory: folder.path)
        guard status == 0 else {
            throw Failure(
                description: "\(tool) \(arguments.joined(separator: " ")): \(String(decoding: errors, as: UTF8.self))"
            )
        }
    }

    /// `curl` over https trusting only this CA, from `source` (a loopback address): the status code, or `nil` when
    /// the connection or the certificate check failed.
    func curl(_ method: String, _ url: String, from source: String = "127.0.0.1") async throws -> Int? {
        let (status, out, _) = try await runChildProcess(
            "/usr/bin/curl",
            arguments: [
                "--silent", "--output", "/dev/null", "--write-out", "%{http_code}", "--cacert", caCertificate,
                "--interface", source, "--max-time", "10", "-X", method, url,
            ]
        )
        guard status == 0 else { return nil }
        return Int(String(decoding: out, as: UTF8.self))
    }
}
