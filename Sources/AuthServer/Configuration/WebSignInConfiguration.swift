#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Settings of the web sign-in (`/login`, `/auth/apple/authorize`, `/auth/apple/callback`) and of browser sessions.
///
/// The web routes also need `AppleSignInConfiguration.servicesID`: without it they answer 503 `web_signin_disabled`.
public struct WebSignInConfiguration: Sendable {
    /// The `redirect_uri` registered for the Services ID; `nil`: the public URL + `/auth/apple/callback`.
    public var callbackURL: String?
    /// Origins a return URL (and a cookie-authenticated request's `Origin`) may have besides the public URL's own,
    /// such as `https://app.example.com`.
    public var allowedReturnOrigins: [String]
    /// Android packages that may finish the flow through `returnUrl=android:<package>`.
    public var allowedAndroidPackages: [String]
    /// Seconds between the redirect to Apple and the callback (default 10 minutes).
    public var stateLifetime: TimeInterval
    /// The cookie holding the access token.
    public var sessionCookieName: String
    /// The cookie holding the refresh token.
    public var refreshCookieName: String
    /// The text Apple gives for domain verification, served at
    /// `/.well-known/apple-developer-domain-association.txt`; `nil`: 404.
    public var domainAssociation: String?
    /// Mark cookies `Secure`; `nil`: when the public URL is https.
    public var secureCookies: Bool?

    public init(
        callbackURL: String? = nil,
        allowedReturnOrigins: [String] = [],
        allowedAndroidPackages: [String] = [],
        stateLifetime: TimeInterval = 600,
        sessionCookieName: String = "siwa_session",
        refreshCookieName: String = "siwa_refresh",
        domainAssociation: String? = nil,
        secureCookies: Bool? = nil
    ) {
        self.callbackURL = callbackURL
        self.allowedReturnOrigins = allowedReturnOrigins
        self.allowedAndroidPackages = allowedAndroidPackages
        self.stateLifetime = stateLifetime
        self.sessionCookieName = sessionCookieName
        self.refreshCookieName = refreshCookieName
        self.domainAssociation = domainAssociation
        self.secureCookies = secureCookies
    }
}

extension AuthServerConfiguration {
    /// The public URL without a trailing `/`.
    var publicBaseURL: String {
        publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL
    }

    /// The web flow's `redirect_uri`.
    public var webCallbackURL: String {
        web.callbackURL ?? publicBaseURL + "/auth/apple/callback"
    }

    /// Whether cookies are marked `Secure`.
    public var usesSecureCookies: Bool {
        web.secureCookies ?? publicURL.lowercased().hasPrefix("https://")
    }
}
