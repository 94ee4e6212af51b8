import AppleSignIn
import Crypto
import Hummingbird

/// Binds a web sign-in to the browser that started it (login CSRF).
///
/// Without it, an attacker who consents with their own Apple ID and keeps Apple's auto-submitting form can have a
/// victim's browser post it to the callback, and the victim is signed in as the attacker. The authorize route sets
/// this cookie with a tag of the flow's `state`; the callback accepts a state only from a browser whose cookie holds
/// its tag.
///
/// Apple's `form_post` is a cross-site POST, which carries no `SameSite=Lax` cookie, so this one is
/// `SameSite=None; Secure`, named with the `__Host-` prefix on https (no subdomain can set or shadow it). On
/// `http://localhost` and `http://127.0.0.1` (development) browsers treat the origin as secure and keep `Secure`
/// cookies, so the same attributes work; on other plain-http origins it falls back to `SameSite=Lax`, which a
/// cross-site callback does not carry: there the web flow needs https, as Apple requires anyway.
///
/// The cookie holds the tags of the browser's last few flows (two tabs may sign in at once); a tag is the first 16
/// bytes of SHA-256 over the state, base64url. It proves nothing to anyone but the browser that holds it.
struct FlowBindingCookie {
    let configuration: AuthServerConfiguration

    /// Flows a browser may have going at once.
    static let maximumFlows = 3

    var name: String { configuration.usesSecureCookies ? "__Host-siwa_flow" : "siwa_flow" }

    /// The tag of a flow's state.
    static func tag(of state: String) -> String {
        let digest = SHA256.hash(data: Array("siwa-flow-binding|\(state)".utf8))
        return Base64URL.encode(Array(digest.prefix(16)))
    }

    /// The tags the request's cookie holds.
    func tags(in request: Request) -> [String] {
        guard let value = request.cookies[name]?.value, !value.isEmpty, value.utf8.count <= 256 else { return [] }
        return value.split(separator: ".").map(String.init)
    }

    /// Whether the request comes from the browser that started the flow of `state`.
    func binds(_ state: String, in request: Request) -> Bool {
        tags(in: request).contains(Self.tag(of: state))
    }

    /// Adds the new flow's tag to the browser's cookie (keeping its latest flows).
    func add(state: String, from request: Request, to response: inout Response) {
        let tags = [Self.tag(of: state)] + tags(in: request).prefix(Self.maximumFlows - 1)
        response.setCookie(cookie(tags.joined(separator: "."), maxAge: Int(configuration.web.stateLifetime)))
    }

    /// Removes a finished flow's tag (and the cookie with the last one).
    func remove(state: String, from request: Request, on response: inout Response) {
        let all = tags(in: request)
        guard !all.isEmpty else { return }
        let remaining = all.filter { $0 != Self.tag(of: state) }
        response.setCookie(
            cookie(
                remaining.joined(separator: "."),
                maxAge: remaining.isEmpty ? 0 : Int(configuration.web.stateLifetime)
            )
        )
    }

    private func cookie(_ value: String, maxAge: Int) -> Cookie {
        if configuration.usesSecureCookies || isLoopbackHTTP {
            return Cookie(
                name: name,
                value: value,
                maxAge: maxAge,
                path: "/",
                secure: true,
                httpOnly: true,
                sameSite: .none
            )
        }
        return Cookie(
            name: name,
            value: value,
            maxAge: maxAge,
            path: "/",
            secure: false,
            httpOnly: true,
            sameSite: .lax
        )
    }

    /// `http://localhost…` or `http://127.0.0.1…`: browsers keep `Secure` cookies there.
    private var isLoopbackHTTP: Bool {
        let url = configuration.publicURL.lowercased()
        return ["http://localhost", "http://127.0.0.1", "http://[::1]"].contains { prefix in
            url == prefix || url.hasPrefix(prefix + ":") || url.hasPrefix(prefix + "/")
        }
    }
}
