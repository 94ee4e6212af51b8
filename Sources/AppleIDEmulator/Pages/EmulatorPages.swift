/// The emulator's HTML: Apple's consent page, the auto-submitting `form_post` page, and Apple's error page; the console
/// (``ConsolePage``) builds on the same page.
enum EmulatorPages {
    static func escape(_ text: String) -> String {
        var out = ""
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

    /// A whole page: the banner that says this is not Apple, then `body` (markup, already escaped).
    /// - Parameter stylesheet: the page's one inline stylesheet.
    static func page(title: String, body: String, stylesheet: String = EmulatorPages.stylesheet) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escape(title))</title>
        <style>\(stylesheet)</style>
        </head>
        <body><main>
        <p class="banner">Apple ID emulator (siwa) — not Apple</p>
        \(body)
        </main></body>
        </html>
        """
    }

    /// The look of Apple's pages.
    static let stylesheet = """
        body { font: 16px -apple-system, system-ui, sans-serif; background: #f5f5f7; color: #1d1d1f; margin: 0; }
        main { max-width: 26rem; margin: 3rem auto; background: #fff; border-radius: 18px; padding: 2rem;
               box-shadow: 0 2px 12px rgba(0,0,0,.08); }
        h1 { font-size: 1.4rem; margin-top: 0; }
        .banner { font-size: .8rem; color: #6e6e73; text-transform: uppercase; letter-spacing: .05em; }
        label { display: block; margin: .8rem 0 .2rem; font-weight: 600; }
        input[type=text], input[type=email] { width: 100%; box-sizing: border-box; padding: .6rem;
               border: 1px solid #d2d2d7; border-radius: 8px; font-size: 1rem; }
        fieldset { border: 1px solid #d2d2d7; border-radius: 8px; margin-top: 1rem; }
        .buttons { display: flex; gap: .8rem; margin-top: 1.5rem; }
        button { flex: 1; padding: .8rem; border-radius: 8px; font-size: 1rem; border: 1px solid #1d1d1f;
                 background: #fff; color: #1d1d1f; cursor: pointer; }
        button.primary { background: #000; color: #fff; }
        button:focus-visible, input:focus-visible { outline: 3px solid #0071e3; outline-offset: 2px; }
        code { background: #f5f5f7; padding: .1rem .3rem; border-radius: 4px; }
        """

    /// The consent page of `GET /auth/authorize`.
    static func consent(_ parameters: AuthorizeParameters, firstName: String, lastName: String, email: String) -> String
    {
        let hidden = [
            ("client_id", parameters.client_id), ("redirect_uri", parameters.redirect_uri),
            ("response_type", parameters.response_type), ("response_mode", parameters.response_mode),
            ("scope", parameters.scope), ("state", parameters.state), ("nonce", parameters.nonce),
        ].compactMap { name, value in
            value.map { #"<input type="hidden" name="\#(name)" value="\#(escape($0))">"# }
        }.joined(separator: "\n")
        return page(
            title: "Sign in with Apple",
            body: """
                <h1>Sign in to <code>\(escape(parameters.client_id ?? ""))</code> with your Apple ID</h1>
                <form method="post" action="/auth/authorize">
                \(hidden)
                <label for="email">Apple ID (test account)</label>
                <input type="email" id="email" name="email" value="\(escape(email))" required autocomplete="off">
                <label for="given_name">First name</label>
                <input type="text" id="given_name" name="given_name" value="\(escape(firstName))">
                <label for="family_name">Last name</label>
                <input type="text" id="family_name" name="family_name" value="\(escape(lastName))">
                <fieldset>
                <legend>Email the app receives</legend>
                <label><input type="radio" name="hide_email" value="false" checked> Share My Email</label>
                <label><input type="radio" name="hide_email" value="true"> Hide My Email</label>
                </fieldset>
                <div class="buttons">
                <button type="submit" name="action" value="cancel">Cancel</button>
                <button type="submit" name="action" value="continue" class="primary">Continue</button>
                </div>
                </form>
                """
        )
    }

    /// The page that POSTs the authorization result to the developer's `redirect_uri`, as Apple's does.
    static func formPost(to redirectURI: String, fields: [(String, String)]) -> String {
        let inputs = fields.map { #"<input type="hidden" name="\#(escape($0.0))" value="\#(escape($0.1))">"# }
            .joined(separator: "\n")
        return page(
            title: "Signing in…",
            body: """
                <form method="post" action="\(escape(redirectURI))" id="apple-form-post">
                \(inputs)
                <noscript><button type="submit" class="primary">Continue to the app</button></noscript>
                </form>
                <script>document.getElementById("apple-form-post").submit();</script>
                """
        )
    }

    /// Apple's error page for a bad authorize request.
    static func error(_ error: AppleOAuthError) -> String {
        page(
            title: "Sign in with Apple: error",
            body: """
                <h1>Your request could not be completed</h1>
                <p><code>\(escape(error.error))</code></p>
                <p>\(escape(error.description ?? ""))</p>
                """
        )
    }
}
