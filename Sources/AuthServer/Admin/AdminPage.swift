import Crypto
import HTTPTypes
import Hummingbird
import NIOCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A page of the operator console (`/admin`): a header with the sections, who is signed in and as what, and a Sign out
/// button, then the section's content; a page for someone who is not an admin (a refusal) has none of these. Like every page of siwa: one stylesheet allowed by hash, no script, no external asset, never framed. The
/// layout works from 390 px (tables scroll sideways inside their own box) to 1,400 px wide.
struct AdminPage {
    enum Section: String, CaseIterable, Sendable {
        case overview
        case users
        case audit
        case tokens

        var title: String {
            switch self {
            case .overview: "Overview"
            case .users: "Users"
            case .audit: "Audit log"
            case .tokens: "Service tokens"
            }
        }

        var path: String {
            switch self {
            case .overview: "/admin"
            case .users: "/admin/users"
            case .audit: "/admin/audit"
            case .tokens: "/admin/tokens"
            }
        }
    }

    var title: String
    /// The section the page belongs to (marked in the navigation), `nil` for pages outside them (refusals).
    var section: Section?
    /// Who is signed in, as shown in the header (already a display name, escaped here); `nil` for a page seen by
    /// someone who is not an admin, which then shows no navigation.
    var signedInAs: String?
    /// The signed-in admin's role as shown beside the name (escaped here), e.g. `admin (configuration)`.
    var role: String? = nil
    /// A notice above the page's content, on every page (Apple refusing siwa's client secret), already escaped.
    var banner: String? = nil
    /// Markup of `<main>`, already escaped.
    var main: String

    var html: String {
        // The sections and the account are an admin's only: a refusal shows neither the console's map nor a name.
        let navigation =
            signedInAs == nil
            ? ""
            : "<nav aria-label=\"Sections\">"
                + Section.allCases.map { item in
                    let current = item == section ? " aria-current=\"page\"" : ""
                    return "<a href=\"\(item.path)\"\(current)>\(item.title)</a>"
                }.joined() + "</nav>"
        let who =
            signedInAs.map { name in
                let role = self.role.map { " <span class=\"role\">\(HTMLPage.escape($0))</span>" } ?? ""
                return """
                    <div class="who"><span>Signed in as <strong>\(HTMLPage.escape(name))</strong>\(role)</span>\
                    <form method="post" action="/auth/logout"><button type="submit" class="signout">Sign out</button>\
                    </form></div>
                    """
            } ?? ""
        return """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="color-scheme" content="light">
            <meta name="robots" content="noindex">
            <title>\(HTMLPage.escape(title)) · siwa console</title>
            <style>\(Self.stylesheet)</style>
            </head>
            <body>
            <header><a class="brand" href="/admin">siwa console</a>\(navigation)\(who)</header>
            <main>
            \(banner ?? "")<h1>\(HTMLPage.escape(title))</h1>
            \(main)
            </main>
            \(signedInAs == nil ? "" : "<footer>siwa \(SiwaVersion.current)</footer>")
            </body>
            </html>
            """
    }

    /// The page as a response with the headers every page of siwa carries.
    func response(status: HTTPResponse.Status = .ok) -> Response {
        HTMLPage.response(html, status: status, policy: Self.contentSecurityPolicy)
    }

    /// No script; the stylesheet by hash; forms post only here; never framed.
    static let contentSecurityPolicy =
        "default-src 'none'; style-src '\(styleHash)'; img-src 'self' data:; form-action 'self'; base-uri 'none'; "
        + "frame-ancestors 'none'"

    static let styleHash = "sha256-" + Data(SHA256.hash(data: Array(stylesheet.utf8))).base64EncodedString()

    static let stylesheet = """
        *{box-sizing:border-box}
        html{font:15px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI",system-ui,sans-serif;color:#1d1d1f;\
        background:#f5f5f7}
        body{margin:0}
        header{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1.25rem;padding:.75rem 1.25rem;\
        background:#1d1d1f;color:#fff}
        header a{color:#fff;text-decoration:none}
        .brand{font-weight:700}
        nav{display:flex;flex-wrap:wrap;gap:.25rem 1rem}
        nav a{padding:.25rem 0;border-bottom:2px solid transparent}
        nav a[aria-current=page]{border-bottom-color:#fff}
        .who{margin-left:auto;display:flex;flex-wrap:wrap;align-items:center;gap:.5rem .75rem;font-size:.875rem;\
        color:#d2d2d7}
        .who strong{color:#fff;font-weight:600}
        .role{display:inline-block;padding:0 .45rem;border:1px solid #6e6e73;border-radius:999px;font-size:.75rem}
        button.signout{min-height:32px;padding:0 .7rem;background:transparent;border-color:#d2d2d7;color:#fff}
        .danger-zone{border:1px solid #f2b8b5}
        .danger-zone h2{color:#8c1d18;margin-top:0}
        .muted{color:#515154}
        .attention{list-style:none;padding:0;margin:0}
        .attention li{padding:.35rem 0;border-bottom:1px solid #e5e5ea}
        .attention li:last-child{border-bottom:0}
        form.search label{display:flex;flex-direction:column;gap:.15rem;font-size:.8rem;font-weight:600}
        footer{max-width:84rem;margin:0 auto;padding:0 1.25rem 1.25rem;font-size:.8rem;color:#515154}
        main{max-width:84rem;margin:0 auto;padding:1.25rem}
        h1{font-size:1.5rem;margin:.25rem 0 1rem}
        h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
        a{color:#0066cc}
        a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible{outline:3px solid #0066cc;\
        outline-offset:2px}
        .cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(11rem,1fr));gap:.75rem;margin:0 0 1rem}
        .card{background:#fff;border-radius:12px;padding:.75rem 1rem;box-shadow:0 1px 6px rgba(0,0,0,.06)}
        .card .value{font-size:1.6rem;font-weight:700}
        .panel{background:#fff;border-radius:12px;padding:1rem;box-shadow:0 1px 6px rgba(0,0,0,.06);margin:0 0 1rem}
        .scroll{overflow-x:auto}
        table{border-collapse:collapse;width:100%;font-size:.875rem}
        th,td{text-align:left;padding:.4rem .6rem;border-bottom:1px solid #e5e5ea;vertical-align:top}
        td.number,th.number{text-align:right;font-variant-numeric:tabular-nums}
        caption{text-align:left;font-weight:600;padding:.25rem 0}
        svg.chart{display:block;max-width:100%;height:auto}
        .legend{display:flex;flex-wrap:wrap;gap:.25rem 1rem;list-style:none;padding:0;margin:.5rem 0;\
        font-size:.875rem}
        .legend svg{vertical-align:-2px}
        .badge{display:inline-block;padding:0 .5rem;border-radius:999px;background:#e8f0fe;color:#003d99;\
        font-size:.75rem;font-weight:600}
        .badge.warn{background:#fdecea;color:#8c1d18}
        .badge.muted{background:#f5f5f7;color:#515154}
        form.inline{display:inline}
        form.action{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem;margin:.5rem 0}
        form.action label{display:flex;align-items:center;gap:.4rem}
        form.search{display:flex;flex-wrap:wrap;gap:.5rem;margin:0 0 1rem}
        input,select{font:inherit;padding:.4rem .6rem;border:1px solid #c7c7cc;border-radius:8px;min-height:40px}
        input[type=search]{flex:1 1 16rem}
        button{font:inherit;min-height:40px;padding:0 .9rem;border-radius:8px;border:1px solid #1d1d1f;\
        background:#1d1d1f;color:#fff;cursor:pointer}
        button.secondary{background:#fff;color:#1d1d1f}
        button.danger{background:#b3261e;border-color:#b3261e}
        dl{display:grid;grid-template-columns:minmax(8rem,auto) 1fr;gap:.35rem 1rem;margin:0}
        dt{font-weight:600}
        dd{margin:0;overflow-wrap:anywhere}
        .notice{background:#fff;border-left:4px solid #0066cc;padding:.6rem .8rem;border-radius:6px;margin:0 0 1rem}
        .notice.error{border-left-color:#b3261e}
        .pager{display:flex;gap:1rem;margin:.75rem 0}
        .visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
        @media (max-width:40rem){main{padding:.75rem}.who{margin-left:0;width:100%}}
        """
}
