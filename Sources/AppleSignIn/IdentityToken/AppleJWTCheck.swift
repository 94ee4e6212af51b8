#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One check of something Apple signs, in the one list that both ``IdentityTokenVerifier/verify(_:expectedNonce:)``
/// (stops at the first failure) and ``IdentityTokenVerifier/inspect(_:expectedNonce:)`` (runs every check and reports
/// each, for `siwa verify`) walk, in the spirit of swift-certificates' `VerifierPolicy` list: a check added to
/// ``common`` appears in both by construction.
struct AppleJWTCheck: Sendable {
    /// What the checks have established so far; each check reads what the earlier ones found.
    struct Progress {
        let token: String
        var parts: SignedAppleJWT.Parts?
        var key: AppleSigningKey?
        var claims: JSONObjectView?
        var issuer: String?
        var audience: ClientID?
        var expiresAt: Date?
        var issuedAt: Date?
        /// Set by the identity-token check (``IdentityTokenVerifier``).
        var identityToken: IdentityToken?
        /// Set by the notification check.
        var notification: ServerNotification?

        init(token: String) {
            self.token = token
        }

        /// The JWT as the checks found it. Verification reaches here only when every check of
        /// ``AppleJWTCheck/common`` passed; inspection goes on after a failed check, so that every later problem is
        /// reported too, and reads what failed as the token states it (an audience not allowed, an expired `exp`).
        /// A claim the token lacks or cannot state is not made up: the later check then reports it not checked.
        func jwt(now: Date) throws(AppleSignInError) -> SignedAppleJWT {
            guard let claims else { throw AppleJWTCheck.notChecked("claims") }
            // The fallbacks are read only when a check failed (inspection): verification never reaches them.
            guard let audience = audience ?? claims["aud"]?.stringValue.map({ ClientID($0) }) else {
                throw AppleJWTCheck.notChecked("aud")
            }
            guard let issuer = issuer ?? claims["iss"]?.stringValue else { throw AppleJWTCheck.notChecked("iss") }
            guard let issuedAt = issuedAt ?? Self.date(claims, "iat") else { throw AppleJWTCheck.notChecked("iat") }
            guard let expiresAt = expiresAt ?? Self.date(claims, "exp") else { throw AppleJWTCheck.notChecked("exp") }
            return SignedAppleJWT(
                claims: claims,
                audience: audience,
                issuer: issuer,
                issuedAt: issuedAt,
                expiresAt: expiresAt
            )
        }

        /// The time a numeric claim states, if it is a finite number.
        private static func date(_ claims: JSONObjectView, _ name: String) -> Date? {
            guard let seconds = claims.number(name), seconds.isFinite else { return nil }
            return Date(timeIntervalSince1970: seconds)
        }
    }

    /// What every check may use.
    struct Context: Sendable {
        let keys: AppleKeyCache
        let configuration: AppleSignInConfiguration
        let now: Date
        /// Whether the checks should say what passed (`inspect`); `verify` skips building the words.
        let describes: Bool
        /// The raw nonce an identity token must carry (or its SHA-256 hex), if the caller expects one.
        let expectedNonce: String?

        func detail(_ text: @autoclosure () -> String) -> String { describes ? text() : "" }
    }

    /// The check's name in `siwa verify`'s report (`structure`, `algorithm`, ...).
    let name: String
    /// Whether the checks after it cannot run without what it finds: `inspect` stops at its failure.
    let isPrerequisite: Bool
    /// What the check needs fetched before it runs, for the one check that may wait (the key, from Apple's key set,
    /// nearly always already cached). Every other check is synchronous: an async call per check cost a verification
    /// its task-allocator frames and executor checks ten times over.
    let fetch: (@Sendable (inout Progress, Context) async throws(AppleSignInError) -> Void)?
    /// Finds without waiting what ``fetch`` would, when it can (the key, when the cache holds it fresh), and says
    /// whether it did: verification then makes no async call at all.
    let fetchWithoutWaiting: (@Sendable (inout Progress, Context) throws(AppleSignInError) -> Bool)?
    /// Runs the check: throws its failure, or returns what passed (empty unless the context describes).
    let run: @Sendable (inout Progress, Context) throws(AppleSignInError) -> String

    init(
        _ name: String,
        isPrerequisite: Bool = false,
        fetch: (@Sendable (inout Progress, Context) async throws(AppleSignInError) -> Void)? = nil,
        fetchWithoutWaiting: (@Sendable (inout Progress, Context) throws(AppleSignInError) -> Bool)? = nil,
        _ run: @escaping @Sendable (inout Progress, Context) throws(AppleSignInError) -> String
    ) {
        self.name = name
        self.isPrerequisite = isPrerequisite
        self.fetch = fetch
        self.fetchWithoutWaiting = fetchWithoutWaiting
        self.run = run
    }

    /// Fetches what the check needs, if anything, and runs it.
    func callAsFunction(_ progress: inout Progress, _ context: Context) async throws(AppleSignInError) -> String {
        if let fetch { try await fetch(&progress, context) }
        return try run(&progress, context)
    }

    /// What stops a check that needs what an earlier one did not find.
    static func notChecked(_ missing: String) -> AppleSignInError {
        AppleSignInError(.unknownKey, "not checked: no \(missing) to check it with")
    }

    /// The checks of everything Apple signs (identity tokens and server-to-server notifications), in order.
    static let common: [AppleJWTCheck] = [
        AppleJWTCheck("structure", isPrerequisite: true) { progress, context throws(AppleSignInError) in
            progress.parts = try SignedAppleJWT.decode(progress.token)
            return context.detail("three base64url parts, JSON header")
        },
        AppleJWTCheck("algorithm") { progress, context throws(AppleSignInError) in
            guard let parts = progress.parts else { throw notChecked("header") }
            try SignedAppleJWT.checkAlgorithm(parts)
            return context.detail("RS256")
        },
        AppleJWTCheck(
            "key",
            fetch: { progress, context throws(AppleSignInError) in
                guard let parts = progress.parts else { throw notChecked("header") }
                progress.key = try await context.keys.key(for: try SignedAppleJWT.keyID(parts))
            },
            fetchWithoutWaiting: { progress, context throws(AppleSignInError) in
                guard let parts = progress.parts else { throw notChecked("header") }
                progress.key = context.keys.freshKey(for: try SignedAppleJWT.keyID(parts))
                return progress.key != nil
            },
            { progress, context throws(AppleSignInError) in
                guard let key = progress.key else { throw notChecked("key") }
                return context.detail("kid '\(key.keyID)' is in Apple's key set")
            }
        ),
        AppleJWTCheck("signature") { progress, context throws(AppleSignInError) in
            guard let parts = progress.parts, let key = progress.key else { throw notChecked("key") }
            try SignedAppleJWT.checkSignature(parts, key: key)
            return context.detail("RS256 signature verifies with '\(key.keyID)'")
        },
        AppleJWTCheck("payload", isPrerequisite: true) { progress, context throws(AppleSignInError) in
            guard let parts = progress.parts else { throw notChecked("payload") }
            progress.claims = try SignedAppleJWT.decodeClaims(parts)
            return context.detail("the claims are one JSON object")
        },
        AppleJWTCheck("issuer") { progress, context throws(AppleSignInError) in
            guard let claims = progress.claims else { throw notChecked("claims") }
            let issuer = try SignedAppleJWT.checkIssuer(claims, configuration: context.configuration)
            progress.issuer = issuer
            return context.detail(issuer)
        },
        AppleJWTCheck("audience") { progress, context throws(AppleSignInError) in
            guard let claims = progress.claims else { throw notChecked("claims") }
            let audience = try SignedAppleJWT.matchAudience(claims, configuration: context.configuration)
            progress.audience = audience
            return context.detail(audience.rawValue)
        },
        AppleJWTCheck("expiry") { progress, context throws(AppleSignInError) in
            guard let claims = progress.claims else { throw notChecked("claims") }
            let expiresAt = try SignedAppleJWT.checkExpiry(
                claims,
                now: context.now,
                leeway: context.configuration.clockLeeway
            )
            progress.expiresAt = expiresAt
            return context.detail(
                "expires \(SignedAppleJWT.wholeSeconds(expiresAt.timeIntervalSince(context.now))) s from now"
            )
        },
        AppleJWTCheck("issued-at") { progress, context throws(AppleSignInError) in
            guard let claims = progress.claims else { throw notChecked("claims") }
            let issuedAt = try SignedAppleJWT.checkIssuedAt(
                claims,
                now: context.now,
                leeway: context.configuration.clockLeeway
            )
            progress.issuedAt = issuedAt
            return context.detail(
                "issued \(SignedAppleJWT.wholeSeconds(context.now.timeIntervalSince(issuedAt))) s ago"
            )
        },
    ]

    /// The identity token's own check, after ``common``: its typed claims, and the nonce when the context expects one.
    static let identityToken = AppleJWTCheck("claims") { progress, context throws(AppleSignInError) in
        let token = try IdentityToken(claims: try progress.jwt(now: context.now))
        if let expectedNonce = context.expectedNonce {
            try IdentityTokenVerifier.checkNonce(token, expected: expectedNonce, configuration: context.configuration)
        }
        progress.identityToken = token
        return context.detail(
            context.expectedNonce == nil ? "typed claims decode" : "typed claims decode; nonce matches"
        )
    }

    /// Everything an identity token goes through, built once.
    static let identityTokenChecks = common + [identityToken]

    /// Everything a notification's payload goes through, built once.
    static let notificationChecks = common + [notification]

    /// A server-to-server notification's own check, after ``common``: `jti` and the `events` claim.
    static let notification = AppleJWTCheck("event") { progress, context throws(AppleSignInError) in
        let jwt = try progress.jwt(now: context.now)
        guard let id = jwt.claims["jti"]?.stringValue, !id.isEmpty else { throw .malformed("claim 'jti' is missing") }
        let event = try ServerNotificationEvent(eventsClaim: jwt.claims["events"])
        progress.notification = ServerNotification(id: id, aud: jwt.audience, issuedAt: jwt.issuedAt, event: event)
        return context.detail("\(event.type) for \(event.sub)")
    }

    /// Runs `checks` in order and stops at the first failure (verification).
    static func verify(
        _ token: String,
        _ checks: [AppleJWTCheck],
        context: Context
    ) async throws(AppleSignInError) -> Progress {
        var progress = Progress(token: token)
        for check in checks {
            // Only a fetch is awaited, and only when what it fetches is not at hand: calling each check through the
            // async `callAsFunction` made an async frame per check.
            if let fetch = check.fetch, try !(check.fetchWithoutWaiting?(&progress, context) ?? false) {
                try await fetch(&progress, context)
            }
            _ = try check.run(&progress, context)
        }
        return progress
    }

    /// Runs every check of `checks` and reports each (inspection); stops after a failed prerequisite.
    static func inspect(
        _ token: String,
        _ checks: [AppleJWTCheck],
        context: Context
    ) async -> (progress: Progress, results: [TokenInspection.Check]) {
        var progress = Progress(token: token)
        var results: [TokenInspection.Check] = []
        for check in checks {
            do {
                results.append(.init(name: check.name, outcome: .success(try await check(&progress, context))))
            } catch {
                results.append(.init(name: check.name, outcome: .failure(error)))
                if check.isPrerequisite { break }
            }
        }
        return (progress, results)
    }
}
