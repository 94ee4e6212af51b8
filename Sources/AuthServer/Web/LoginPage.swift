import AccountStore
import Foundation

/// `GET /login`: the Sign in with Apple button when signed out; the user's name, email and a Sign out button when
/// signed in. Works without JavaScript: the button is a link to the authorize route, Sign out a form.
struct LoginPage {
    typealias ButtonStyle = BrandingConfiguration.ButtonStyle

    enum Notice: Equatable {
        case cancelled
        case signedOut
        case webSignInDisabled
    }

    var user: UserRecord?
    var branding = BrandingConfiguration()
    var style: ButtonStyle = .black
    var notice: Notice?
    /// Where the button goes.
    var authorizePath = "/auth/apple/authorize?returnUrl=%2Flogin"

    var page: HTMLPage {
        let product = branding.productName.map { " · \($0)" } ?? ""
        return HTMLPage(
            title: (user == nil ? "Sign in" : "Your account") + product,
            main: Self.logo(branding) + (user.map(signedIn) ?? signedOut) + Self.support(branding)
        )
    }

    /// The product's logo above a page, when there is one.
    static func logo(_ branding: BrandingConfiguration) -> String {
        guard branding.logo != nil else { return "" }
        let name = HTMLPage.escape(branding.productName ?? "")
        return "<p class=\"logo\"><img src=\"/branding/logo\" alt=\"\(name)\" height=\"56\"></p>\n"
    }

    /// Where to get help, below a page, when the product says.
    static func support(_ branding: BrandingConfiguration) -> String {
        guard let url = branding.supportURL else { return "" }
        let whose = branding.productName.map { "\(HTMLPage.escape($0)) support" } ?? "support"
        return "\n<p class=\"muted help\">Need help? <a href=\"\(HTMLPage.escape(url))\">Contact \(whose)</a>.</p>"
    }

    private var noticeMarkup: String {
        switch notice {
        case .cancelled?:
            return #"<p class="notice" role="status">Sign-in was cancelled. You can try again whenever you like.</p>"#
        case .signedOut?:
            return #"<p class="notice" role="status">You have signed out.</p>"#
        case .webSignInDisabled?:
            return #"<p class="notice error" role="alert">Web sign-in is not configured on this server "#
                + "(it needs a Services ID).</p>"
        case nil:
            return ""
        }
    }

    private var signedOut: String {
        let heading = branding.productName.map { "Sign in to \(HTMLPage.escape($0))" } ?? "Sign in"
        var markup = """
            <h1>\(heading)</h1>
            <p class="muted">Use your Apple Account to continue.</p>
            \(noticeMarkup)
            """
        if notice != .webSignInDisabled {
            markup += """

                <div class="button-stage\(style == .white ? " dark" : "")">
                <a class="apple-button \(style.rawValue)" href="\(HTMLPage.escape(authorizePath))">\
                \(Self.appleLogo)<span>Sign in with Apple</span></a>
                </div>
                """
            // A product shows its one style; the demo lets a developer compare Apple's.
            if branding.showsButtonStyles {
                markup += "\n<p class=\"styles muted\">Button style: \(styleLinks)</p>"
            }
        }
        return markup
    }

    private var styleLinks: String {
        ButtonStyle.allCases.map { candidate in
            let label = candidate.rawValue.replacingOccurrences(of: "-", with: " ")
            return candidate == style
                ? #"<a href="/login?style=\#(candidate.rawValue)" aria-current="page">\#(label)</a>"#
                : #"<a href="/login?style=\#(candidate.rawValue)">\#(label)</a>"#
        }.joined(separator: " ")
    }

    private func signedIn(_ user: UserRecord) -> String {
        let name = [user.givenName, user.familyName].compactMap { $0 }.joined(separator: " ")
        let greeting = name.isEmpty ? "You are signed in" : "Hello, \(HTMLPage.escape(name))"
        var details = ""
        if !name.isEmpty { details += "<dt>Name</dt><dd>\(HTMLPage.escape(name))</dd>\n" }
        if let email = user.email {
            let badge = user.isPrivateEmail ? #" <span class="badge">Relay address</span>"# : ""
            details += "<dt>Email</dt><dd>\(HTMLPage.escape(email))\(badge)</dd>\n"
        } else {
            details += "<dt>Email</dt><dd class=\"muted\">not shared</dd>\n"
        }
        return """
            <h1>\(greeting)</h1>
            <p class="muted">Signed in with Apple.</p>
            <dl>
            \(details)</dl>
            \(branding.afterSignInURL.map { "<p><a class=\"continue\" href=\"\(HTMLPage.escape($0))\">Continue to \(HTMLPage.escape(branding.productName ?? "the app"))</a></p>" } ?? "")
            <form method="post" action="/auth/logout">
            <button type="submit" class="secondary">Sign out</button>
            </form>
            """
    }

    /// Apple's logo, drawn in the button's text colour.
    static let appleLogo = """
        <svg viewBox="0 0 24 24" aria-hidden="true" focusable="false" fill="currentColor">\
        <path d="M12.152 6.896c-.948 0-2.415-1.078-3.96-1.04-2.04.027-3.91 1.183-4.961 3.014-2.117 3.675-.546 9.103 \
        1.519 12.09 1.013 1.454 2.208 3.09 3.792 3.039 1.52-.065 2.09-.987 3.935-.987 1.831 0 2.35.987 3.96.948 \
        1.637-.026 2.676-1.48 3.676-2.948 1.156-1.688 1.636-3.325 1.662-3.415-.039-.013-3.182-1.221-3.22-4.857-.026\
        -3.04 2.48-4.494 2.597-4.559-1.429-2.09-3.623-2.324-4.39-2.376-2-.156-3.675 1.09-4.61 1.09zM15.53 3.83c.843\
        -1.012 1.4-2.427 1.245-3.83-1.207.052-2.662.805-3.532 1.818-.78.896-1.454 2.338-1.273 3.714 1.338.104 \
        2.715-.688 3.559-1.701"/></svg>
        """
}
