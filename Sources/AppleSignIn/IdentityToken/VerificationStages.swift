import Crypto

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The stages of an identity token's verification, each runnable alone, for the benchmark's stage costs
/// (`siwa-benchmarks 3 stages`): what each stage costs beside the RSA check, so that a change can name what it bought.
/// Package access only; nothing in siwa calls it.
package enum VerificationStages {
    /// Each stage as the verification runs it, on `token`, which `verifier` must accept (its key already fetched).
    package static func stages(
        of token: String,
        verifier: IdentityTokenVerifier,
        expectedNonce: String
    ) async throws -> [(name: String, run: () throws -> Void)] {
        _ = try await verifier.verify(token, expectedNonce: expectedNonce)
        let parts = try SignedAppleJWT.decode(token)
        let kid = try SignedAppleJWT.keyID(parts)
        guard let key = verifier.keys.freshKey(for: kid) else { throw AppleSignInError.malformed("no fresh key") }
        let claims = try SignedAppleJWT.decodeClaims(parts)
        let configuration = verifier.configuration
        let now = verifier.clock.now
        let leeway = configuration.clockLeeway
        let jwt = SignedAppleJWT(
            claims: claims,
            audience: try SignedAppleJWT.matchAudience(claims, configuration: configuration),
            issuer: try SignedAppleJWT.checkIssuer(claims, configuration: configuration),
            issuedAt: try SignedAppleJWT.checkIssuedAt(claims, now: now, leeway: leeway),
            expiresAt: try SignedAppleJWT.checkExpiry(claims, now: now, leeway: leeway)
        )
        let identityToken = try IdentityToken(claims: jwt)
        var signingInput = Array(token.utf8)
        signingInput.removeSubrange(signingInput.lastIndex(of: UInt8(ascii: "."))!...)
        return [
            ("split, base64url, header, SHA-256", { _ = try SignedAppleJWT.decode(token) }),
            ("  of which SHA-256 of the signing input", { _ = SHA256.hash(data: signingInput) }),
            (
                "algorithm and kid",
                {
                    try SignedAppleJWT.checkAlgorithm(parts)
                    _ = try SignedAppleJWT.keyID(parts)
                }
            ),
            ("key from the cache", { _ = verifier.keys.freshKey(for: kid) }),
            ("signature (RSA check of the digest)", { try SignedAppleJWT.checkSignature(parts, key: key) }),
            ("claims object", { _ = try SignedAppleJWT.decodeClaims(parts) }),
            (
                "iss, aud, exp, iat",
                {
                    _ = try SignedAppleJWT.checkIssuer(claims, configuration: configuration)
                    _ = try SignedAppleJWT.matchAudience(claims, configuration: configuration)
                    _ = try SignedAppleJWT.checkExpiry(claims, now: now, leeway: leeway)
                    _ = try SignedAppleJWT.checkIssuedAt(claims, now: now, leeway: leeway)
                }
            ),
            ("typed claims", { _ = try IdentityToken(claims: jwt) }),
            (
                "nonce",
                {
                    try IdentityTokenVerifier.checkNonce(
                        identityToken,
                        expected: expectedNonce,
                        configuration: configuration
                    )
                }
            ),
            ("wall clock", { _ = verifier.clock.now }),
        ]
    }
}
