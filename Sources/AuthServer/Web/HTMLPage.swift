import Crypto
import HTTPTypes
import Hummingbird
import NIOCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An HTML page of siwa: one shared stylesheet, no script, no external asset, and a Content-Security-Policy that
/// allows exactly that stylesheet (by hash, so no `unsafe-inline`).
struct HTMLPage {
    var title: String
    /// Markup of `<main>`, already escaped with ``escape(_:)``.
    var main: String

    /// Escapes text for HTML content and quoted attribute values.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    var html: String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="color-scheme" content="light">
        <title>\(Self.escape(title))</title>
        <style>\(Self.stylesheet)</style>
        </head>
        <body>
        <main>
        \(main)
        </main>
        </body>
        </html>
        """
    }

    /// The page as a response with the security headers every page carries.
    func response(status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        Self.response(html, status: status, headers: headers, policy: Self.contentSecurityPolicy)
    }

    /// `html` answered with the headers every page of siwa carries, under `policy`.
    static func response(
        _ html: String,
        status: HTTPResponse.Status,
        headers: HTTPFields = [:],
        policy: String
    ) -> Response {
        var fields = headers
        fields[.contentType] = "text/html; charset=utf-8"
        fields[.contentSecurityPolicy] = policy
        fields[.cacheControl] = "no-store"
        fields[.xContentTypeOptions] = "nosniff"
        fields[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        fields[HTTPField.Name("X-Frame-Options")!] = "DENY"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// No script at all; the one inline stylesheet by hash; forms only to this site; never framed.
    static let contentSecurityPolicy = policy(formAction: nil)

    /// The pages' policy, with `formAction` (a CSP source) among the places a form may lead besides this site.
    static func policy(formAction: String?) -> String {
        "default-src 'none'; style-src '\(styleHash)'; img-src 'self' data:; form-action 'self'"
            + (formAction.map { " " + $0 } ?? "") + "; base-uri 'none'; frame-ancestors 'none'"
    }

    static let styleHash = "sha256-" + Data(SHA256.hash(data: Array(stylesheet.utf8))).base64EncodedString()

    static let stylesheet = """
        *{box-sizing:border-box}
        html{font:16px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI",system-ui,sans-serif;color:#1d1d1f;\
        background:#f5f5f7}
        body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;padding:1.5rem}
        main{width:100%;max-width:26rem;background:#fff;border-radius:18px;padding:2rem;\
        box-shadow:0 2px 16px rgba(0,0,0,.08)}
        h1{font-size:1.5rem;line-height:1.25;margin:0 0 .5rem}
        p{margin:.5rem 0 1rem}
        .muted{color:#515154}
        .notice{background:#f5f5f7;border-left:4px solid #0066cc;padding:.6rem .8rem;border-radius:6px}
        .error{border-left-color:#b3261e}
        a{color:#0066cc}
        a:focus-visible,button:focus-visible{outline:3px solid #0066cc;outline-offset:3px}
        .apple-button{display:flex;align-items:center;justify-content:center;gap:.4rem;width:100%;min-height:48px;\
        padding:0 1rem;border-radius:8px;font-size:19px;font-weight:500;letter-spacing:-.01em;text-decoration:none;\
        border:1px solid transparent}
        .apple-button svg{width:19px;height:23px;flex:none}
        .apple-button.black{background:#000;color:#fff}
        .apple-button.white{background:#fff;color:#000}
        .apple-button.white-outline{background:#fff;color:#000;border-color:#000}
        .button-stage{border-radius:12px;margin:1.5rem 0 1rem}
        .button-stage.dark{background:#1d1d1f;padding:1rem}
        .styles{font-size:.875rem}
        .styles a{margin-right:.75rem}
        dl{margin:1rem 0;display:grid;grid-template-columns:auto 1fr;gap:.4rem 1rem}
        dt{font-weight:600}
        dd{margin:0;overflow-wrap:anywhere}
        .badge{display:inline-block;margin-left:.4rem;padding:0 .5rem;border-radius:999px;background:#e8f0fe;\
        color:#003d99;font-size:.8rem;font-weight:600;vertical-align:middle}
        button.secondary{width:100%;min-height:44px;border-radius:8px;border:1px solid #1d1d1f;background:#fff;\
        color:#1d1d1f;font:inherit;cursor:pointer}
        code{background:#f5f5f7;padding:.1rem .35rem;border-radius:4px;overflow-wrap:anywhere}
        ul{margin:.5rem 0 1rem;padding-left:1.25rem}
        button.apple-button{font-family:inherit;cursor:pointer}
        .apple-button+button.secondary{margin-top:.75rem}
        .logo{margin:0 0 1.25rem}
        .logo img{display:block;max-width:100%;height:56px;width:auto}
        .help{font-size:.875rem;margin:1.5rem 0 0}
        a.continue{display:block;text-align:center;padding:.7rem 1rem;border-radius:8px;background:#0066cc;\
        color:#fff;text-decoration:none;font-weight:600}
        @media (max-width:30rem){body{padding:0;align-items:stretch}main{border-radius:0;box-shadow:none}}
        """
}
