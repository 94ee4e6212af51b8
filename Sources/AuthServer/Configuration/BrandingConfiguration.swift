/// How the pages end users see (`/login` and the web sign-in's error pages) present the product: its name, its
/// logo, the Sign in with Apple button's style within Apple's rules, where to get help, and where a signed-in browser
/// goes. Without any of it the pages say "Sign in" and nothing of a product.
public struct BrandingConfiguration: Sendable {
    /// The button styles Apple's Human Interface Guidelines allow: black, white, or white with an outline.
    public enum ButtonStyle: String, Sendable, CaseIterable {
        case black
        case white
        case whiteOutline = "white-outline"
    }

    /// A logo siwa serves at `GET /branding/logo`.
    public struct Logo: Sendable {
        /// The file's bytes.
        public var bytes: [UInt8]
        /// `image/png`, `image/svg+xml`, `image/jpeg` or `image/webp`.
        public var contentType: String

        /// The most bytes a logo may have: it is served with every sign-in page.
        public static let maximumSize = 256 * 1024

        /// - Parameters:
        ///   - bytes: The image.
        ///   - contentType: Its media type.
        public init(bytes: [UInt8], contentType: String) {
            self.bytes = bytes
            self.contentType = contentType
        }

        /// The media type of an image file by its extension, or `nil` for a kind siwa does not serve.
        public static func contentType(ofFile path: String) -> String? {
            let name = path.split(separator: "/").last ?? ""
            let suffix = name.contains(".") ? name.split(separator: ".").last.map { $0.lowercased() } ?? "" : ""
            return switch suffix {
            case "png": "image/png"
            case "svg": "image/svg+xml"
            case "jpg", "jpeg": "image/jpeg"
            case "webp": "image/webp"
            default: nil
            }
        }
    }

    /// The product's name as users know it (`Acme`); `nil`: the pages name no product.
    public var productName: String?
    /// The product's logo; `nil`: none.
    public var logo: Logo?
    /// The style of the Sign in with Apple button.
    public var buttonStyle: ButtonStyle
    /// Where users get help (an https URL or a `mailto:` address), linked from the sign-in and error pages.
    public var supportURL: String?
    /// Where a browser goes after signing in from `/login` (a path of this server, or a URL whose origin is allowed as
    /// a return URL); `nil`: back to `/login`, which then shows the account.
    public var afterSignInURL: String?
    /// Whether `/login` offers a switch between the button styles (`siwa demo` only: a product shows one).
    public var showsButtonStyles: Bool

    /// - Parameters:
    ///   - productName: The product's name; `nil`: none.
    ///   - logo: The logo; `nil`: none.
    ///   - buttonStyle: The button's style.
    ///   - supportURL: Where users get help.
    ///   - afterSignInURL: Where a browser goes after signing in from `/login`.
    ///   - showsButtonStyles: Whether `/login` offers a switch between the button styles (the demo's).
    public init(
        productName: String? = nil,
        logo: Logo? = nil,
        buttonStyle: ButtonStyle = .black,
        supportURL: String? = nil,
        afterSignInURL: String? = nil,
        showsButtonStyles: Bool = false
    ) {
        self.productName = productName
        self.logo = logo
        self.buttonStyle = buttonStyle
        self.supportURL = supportURL
        self.afterSignInURL = afterSignInURL
        self.showsButtonStyles = showsButtonStyles
    }
}
