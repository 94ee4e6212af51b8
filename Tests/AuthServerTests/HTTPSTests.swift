import AuthServer
import Foundation
import SiwaTesting
import Testing

/// The web sign-in over https, both ways siwa is deployed: serving TLS itself, and behind nginx terminating TLS. A test
/// CA is made for the run and only the browser's own NSS database trusts it; headless Chromium signs in against the
/// emulator, the cookies come back `Secure`, and behind the proxy the rate limit keys on the real client.
@Suite(
    "Server: https in a browser",
    .enabled(
        if: ProcessInfo.processInfo.environment["SIWA_TEST_CHROMEDRIVER"] != nil,
        "SIWA_TEST_CHROMEDRIVER is not set: run through scripts/with-chromium (scripts/test does)"
    )
)
struct HTTPSTests {
    /// Signs in with a browser that trusts `authority`, starting at `origin`'s login page; returns the cookies.
    private func signIn(
        at origin: String,
        harness: ServerHarness,
        authority: TestCertificateAuthority,
        name: String
    ) async throws -> [WebDriverSession.Cookie] {
        let browser = try await WebDriverSession.startForTest(
            suite: "HTTPSTests",
            log: "chromedriver-\(name).log",
            environment: authority.browserEnvironment
        )
        do {
            try await browser.signInWithApple(
                from: origin + "/login",
                emulatorURL: harness.emulatorURL,
                email: "tls-\(name)@example.com",
                givenName: "Tess"
            )
            try await browser.screenshot(
                to: WebDriverSession.outputFolder("HTTPSTests").appendingPathComponent("\(name).png")
            )
            #expect(try await browser.pageSource().contains("Hello, Tess"))
            let cookies = try await browser.cookieList()
            await browser.quit()
            return cookies
        } catch {
            await browser.quit()
            throw error
        }
    }

    private func expectSecureSessionCookies(_ cookies: [WebDriverSession.Cookie]) {
        for name in ["siwa_session", "siwa_refresh"] {
            let cookie = cookies.first { $0.name == name }
            #expect(cookie != nil, "no \(name) cookie: \(cookies.map(\.name))")
            #expect(cookie?.secure == true, "\(name) is not Secure")
            #expect(cookie?.httpOnly == true, "\(name) is not HttpOnly")
        }
    }

    @Test func siwaServesTLSItself() async throws {
        let authority = try await TestCertificateAuthority.create()
        let tls = try ServerTLS(certificateFile: authority.serverCertificate, keyFile: authority.serverKey)
        let ownOrigin: @Sendable (Int) -> String = { "https://127.0.0.1:\($0)" }
        try await ServerHarness.run(
            configuration: WebSignInTests.configuration(),
            web: true,
            publicOrigin: ownOrigin,
            tls: tls
        ) { harness in
            let origin = "https://127.0.0.1:\(harness.listenPort)"
            #expect(try await authority.curl("GET", origin + "/healthz") == 200)
            let cookies = try await signIn(at: origin, harness: harness, authority: authority, name: "own-tls")
            expectSecureSessionCookies(cookies)
        }
    }

    @Test(
        .enabled(
            if: ProcessInfo.processInfo.environment["SIWA_TEST_NGINX"] != nil,
            "SIWA_TEST_NGINX is not set: run through scripts/with-nginx (scripts/test does)"
        )
    )
    func siwaBehindNginxTerminatingTLS() async throws {
        let authority = try await TestCertificateAuthority.create()
        let proxyPort = try freeLoopbackPort()
        var configuration = WebSignInTests.configuration()
        // The browser's sign-in takes a few of its own client's budget; the clients below spend theirs.
        configuration.authRateLimit = .init(requestsPerSecond: 0.001, burst: 12)
        configuration.trustedProxies = try TrustedProxies(["127.0.0.1"])
        let redirectPort = try freeLoopbackPort()
        let proxyOrigin: @Sendable (Int) -> String = { _ in "https://127.0.0.1:\(proxyPort)" }
        try await ServerHarness.run(configuration: configuration, web: true, publicOrigin: proxyOrigin) { harness in
            try await ReverseProxyTests.withNginx(
                upstreamPort: harness.listenPort,
                port: proxyPort,
                tls: (authority.serverCertificate, authority.serverKey),
                redirectPort: redirectPort
            ) { port in
                // The site's plain-http server only sends browsers to https.
                let (_, redirect, _) = try await runChildProcess(
                    "/usr/bin/curl",
                    arguments: [
                        "--silent", "--output", "/dev/null", "--write-out", "%{http_code} %{redirect_url}",
                        "--max-time", "10", "http://127.0.0.1:\(redirectPort)/login?x=1",
                    ]
                )
                #expect(String(decoding: redirect, as: UTF8.self) == "301 https://127.0.0.1/login?x=1")

                let origin = "https://127.0.0.1:\(port)"
                let cookies = try await signIn(at: origin, harness: harness, authority: authority, name: "nginx")
                expectSecureSessionCookies(cookies)

                // The rate limit keys on the client nginx names, not on nginx: one busy client is limited, another
                // is not.
                for _ in 0..<12 {
                    #expect(try await authority.curl("POST", origin + "/auth/apple/nonce", from: "127.0.0.2") == 200)
                }
                #expect(try await authority.curl("POST", origin + "/auth/apple/nonce", from: "127.0.0.2") == 429)
                #expect(try await authority.curl("POST", origin + "/auth/apple/nonce", from: "127.0.0.3") == 200)
            }
        }
    }

    /// The guide shows the site file an operator installs, as it is.
    @Test func theGuideShowsTheSiteFileAsItIs() throws {
        let site = try String(
            contentsOf: ReverseProxyTests.repository.appendingPathComponent("docs/deployment/nginx-site.conf"),
            encoding: .utf8
        )
        let guide = try String(
            contentsOf: ReverseProxyTests.repository.appendingPathComponent("docs/deploy.md"),
            encoding: .utf8
        )
        func lines(_ text: some StringProtocol) -> [String] {
            text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
        let block = try #require(
            guide.components(separatedBy: "```nginx\n").dropFirst().first { $0.hasPrefix("upstream siwa") }?
                .components(separatedBy: "```").first
        )
        #expect(lines(block) == lines(site))
    }
}
