import AppleSignIn
import AppleSignInAsyncHTTPClient
import Foundation
import HTTPTypes
import SiwaTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A headless Chromium driven through chromedriver's W3C WebDriver protocol (JSON over HTTP on 127.0.0.1).
final class WebDriverSession: Sendable {
    private let driver: ChildProcess
    private let authority: String
    private let sessionID: String

    static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts chromedriver on a free loopback port and opens a browser.
    /// - Parameters:
    ///   - chromedriver: the chromedriver executable.
    ///   - javaScript: `false` runs the browser with JavaScript off.
    ///   - log: where chromedriver writes its log.
    ///   - environment: the browser's environment (a `HOME` whose NSS database trusts a test CA, say); the test
    ///     process's by default.
    static func start(
        chromedriver: String,
        javaScript: Bool = true,
        log: URL,
        environment: [String: String]? = nil
    ) async throws -> WebDriverSession {
        let port = try freeLoopbackPort()
        let process = try ChildProcess(
            chromedriver,
            arguments: ["--port=\(port)", "--allowed-ips=127.0.0.1", "--log-path=\(log.path)"],
            environment: environment
        )
        let authority = "127.0.0.1:\(port)"
        do {
            try await waitUntilReady(authority)
            var options: [String: Any] = [
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1024,900", "--no-first-run", "--no-default-browser-check",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-extensions", "--no-proxy-server",
                    // Only loopback: any other host name fails to resolve (`localhost` is a second loopback site).
                    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE localhost",
                ]
            ]
            if let binary = ProcessInfo.processInfo.environment["SIWA_TEST_CHROMIUM"] { options["binary"] = binary }
            if !javaScript { options["prefs"] = ["profile.managed_default_content_settings.javascript": 2] }
            let created = try await command(
                authority,
                .post,
                "/session",
                ["capabilities": ["alwaysMatch": ["browserName": "chrome", "goog:chromeOptions": options]]]
            )
            guard let value = created as? [String: Any], let sessionID = value["sessionId"] as? String else {
                throw Failure(description: "chromedriver answered no session: \(String(describing: created))")
            }
            return WebDriverSession(driver: process, authority: authority, sessionID: sessionID)
        } catch {
            await stop(process, authority: authority)
            throw error
        }
    }

    private init(driver: ChildProcess, authority: String, sessionID: String) {
        self.driver = driver
        self.authority = authority
        self.sessionID = sessionID
    }

    /// Closes the browser and stops chromedriver.
    func quit() async {
        _ = try? await Self.command(authority, .delete, "/session/\(sessionID)", nil)
        await Self.stop(driver, authority: authority)
    }

    /// Asks chromedriver to shut down, then kills it. (SIGTERM would not do: the test process ignores it for its
    /// graceful-shutdown handler, and children inherit ignored signals.)
    private static func stop(_ process: ChildProcess, authority: String) async {
        _ = try? await command(authority, .get, "/shutdown", nil)
        for _ in 0..<50 where process.isRunning {
            try? await Task.sleep(for: .milliseconds(100))
        }
        process.terminate()
    }

    // MARK: Commands

    func navigate(to url: String) async throws {
        try await session(.post, "/url", ["url": url])
    }

    func currentURL() async throws -> String {
        try await session(.get, "/url") as? String ?? ""
    }

    func pageSource() async throws -> String {
        try await session(.get, "/source") as? String ?? ""
    }

    /// The first element matching a CSS selector.
    func element(_ selector: String) async throws -> String {
        let value = try await session(.post, "/element", ["using": "css selector", "value": selector])
        guard let element = (value as? [String: Any])?[Self.elementKey] as? String else {
            throw Failure(description: "no element matches \(selector)")
        }
        return element
    }

    /// Runs `script` in the page (the session must allow JavaScript) and returns what it returns.
    func execute(_ script: String) async throws -> Any? {
        try await session(.post, "/execute/sync", ["script": script, "args": [Any]()])
    }

    func click(_ selector: String) async throws {
        let element = try await element(selector)
        try await session(.post, "/element/\(element)/click", [:])
    }

    func type(_ text: String, into selector: String) async throws {
        let element = try await element(selector)
        try await session(.post, "/element/\(element)/clear", [:])
        try await session(.post, "/element/\(element)/value", ["text": text])
    }

    /// Every cookie of the current page, by name (HttpOnly ones included).
    func cookies() async throws -> [String: String] {
        let list = try await session(.get, "/cookie") as? [[String: Any]] ?? []
        var out: [String: String] = [:]
        for cookie in list {
            if let name = cookie["name"] as? String, let value = cookie["value"] as? String { out[name] = value }
        }
        return out
    }

    /// A cookie as the browser keeps it.
    struct Cookie: Sendable {
        var name: String
        var secure: Bool
        var httpOnly: Bool
        var sameSite: String?
    }

    /// Every cookie of the current page with its flags.
    func cookieList() async throws -> [Cookie] {
        let list = try await session(.get, "/cookie") as? [[String: Any]] ?? []
        return list.compactMap { cookie in
            guard let name = cookie["name"] as? String else { return nil }
            return Cookie(
                name: name,
                secure: cookie["secure"] as? Bool ?? false,
                httpOnly: cookie["httpOnly"] as? Bool ?? false,
                sameSite: cookie["sameSite"] as? String
            )
        }
    }

    /// The current value of a form field (what a user would copy from it).
    func value(of selector: String) async throws -> String {
        let element = try await element(selector)
        return try await session(.get, "/element/\(element)/property/value") as? String ?? ""
    }

    /// Resizes the browser window (W3C `Set Window Rect`), to see a page as a phone or a desktop shows it.
    func setWindowSize(width: Int, height: Int) async throws {
        try await session(.post, "/window/rect", ["width": width, "height": height])
    }

    /// Saves a PNG screenshot of the viewport.
    func screenshot(to file: URL) async throws {
        let encoded = try await session(.get, "/screenshot") as? String ?? ""
        guard let png = Data(base64Encoded: encoded) else { throw Failure(description: "the screenshot is not base64") }
        try png.write(to: file)
    }

    /// Saves a PNG screenshot of the viewport in the output folder of the browser tests of `suite`.
    func screenshot(named name: String, suite: String) async throws {
        try await screenshot(to: Self.outputFolder(suite).appendingPathComponent(name))
    }

    /// Screenshots of the page at a desktop's size and a phone's (`NAME-WIDTH.png`), back to the desktop after.
    func screenshots(
        named name: String,
        suite: String,
        desktop: (width: Int, height: Int),
        phone: (width: Int, height: Int)
    ) async throws {
        try await screenshot(named: "\(name)-\(desktop.width).png", suite: suite)
        try await setWindowSize(width: phone.width, height: phone.height)
        try await screenshot(named: "\(name)-\(phone.width).png", suite: suite)
        try await setWindowSize(width: desktop.width, height: desktop.height)
    }

    /// Waits until `condition` holds on the current URL and page source (up to 15 s).
    func wait(
        for what: String,
        _ condition: @Sendable (_ url: String, _ source: String) -> Bool
    ) async throws {
        for _ in 0..<150 {
            let url = try await currentURL()
            let source = try await pageSource()
            if condition(url, source) { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Failure(description: "timed out waiting for \(what); at \(try await currentURL())")
    }

    /// The web sign-in as a user goes through it: siwa's login page at `login`, its Sign in with Apple button, the
    /// emulator's consent page at `emulatorURL` (an email and a given name typed in), Continue, and back to the login
    /// page signed in.
    func signInWithApple(from login: String, emulatorURL: String, email: String, givenName: String) async throws {
        try await navigate(to: login)
        try await wait(for: "the login page") { url, source in url == login && source.contains("Sign in with Apple") }
        try await click("a.apple-button")
        try await wait(for: "the consent page") { url, _ in url.hasPrefix(emulatorURL) }
        try await type(email, into: "#email")
        try await type(givenName, into: "#given_name")
        try await click(#"button[value="continue"]"#)
        try await wait(for: "the signed-in page") { url, source in url == login && source.contains("Sign out") }
    }

    // MARK: Tests

    /// Where the browser tests of `suite` put screenshots and chromedriver logs: `$SIWA_TEST_OUTPUT_DIR/<suite>`, or
    /// `.build/test-output/<suite>`.
    static func outputFolder(_ suite: String) -> URL {
        if let folder = ProcessInfo.processInfo.environment["SIWA_TEST_OUTPUT_DIR"] {
            return URL(fileURLWithPath: folder).appendingPathComponent(suite)
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/test-output/\(suite)")
    }

    /// A browser for a test of `suite`: the chromedriver that `SIWA_TEST_CHROMEDRIVER` names (`scripts/with-chromium`
    /// sets it), logging to `log` in the suite's output folder.
    static func startForTest(
        suite: String,
        javaScript: Bool = true,
        log: String,
        environment: [String: String]? = nil
    ) async throws -> WebDriverSession {
        let chromedriver = try #require(ProcessInfo.processInfo.environment["SIWA_TEST_CHROMEDRIVER"])
        let folder = outputFolder(suite)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return try await start(
            chromedriver: chromedriver,
            javaScript: javaScript,
            log: folder.appendingPathComponent(log),
            environment: environment
        )
    }

    // MARK: Wire

    @discardableResult
    private func session(
        _ method: HTTPRequest.Method,
        _ path: String,
        _ body: [String: Any]? = nil
    ) async throws
        -> Any?
    {
        try await Self.command(authority, method, "/session/\(sessionID)\(path)", body)
    }

    private static func command(
        _ authority: String,
        _ method: HTTPRequest.Method,
        _ path: String,
        _ body: [String: Any]?
    ) async throws -> Any? {
        var request = HTTPRequest(method: method, scheme: "http", authority: authority, path: path)
        var bytes: [UInt8]?
        if let body {
            request.headerFields[.contentType] = "application/json"
            bytes = Array(try JSONSerialization.data(withJSONObject: body))
        } else if method == .post {
            request.headerFields[.contentType] = "application/json"
            bytes = Array("{}".utf8)
        }
        let answer = try await AsyncHTTPClientTransport().send(request, body: bytes, timeout: .seconds(60))
        let json = try? JSONSerialization.jsonObject(with: Data(answer.body), options: [.fragmentsAllowed])
        let value = (json as? [String: Any])?["value"]
        guard answer.response.status == .ok else {
            let error = (value as? [String: Any]).map { "\($0["error"] ?? ""): \($0["message"] ?? "")" } ?? ""
            throw Failure(description: "WebDriver \(method) \(path): \(answer.response.status.code) \(error)")
        }
        return value
    }

    private static func waitUntilReady(_ authority: String) async throws {
        for _ in 0..<100 {
            if let status = try? await command(authority, .get, "/status", nil) as? [String: Any],
                status["ready"] as? Bool == true
            {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Failure(description: "chromedriver did not start on \(authority)")
    }
}
