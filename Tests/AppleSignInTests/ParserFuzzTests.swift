import SiwaTesting
import Testing

@testable import AppleSignIn

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Randomized hostile input for the parsers that read what an attacker sends: the JWT parser (identity tokens and
/// notification payloads), the `form_post` parser, the notification body parser, and the JSON and base64url readers
/// under them. Each test draws thousands of cases from a seeded generator (real Apple tokens mutated, random bytes,
/// truncations, bit flips, deep nesting, huge numbers); a crash or a hang fails the run, and the seed is printed so a
/// failure reproduces with `SIWA_FUZZ_SEED=<seed> swift test --filter ParserFuzzTests`. `scripts/fuzz` runs the same
/// parsers under libFuzzer for as long as you like.
@Suite("Parser fuzz")
struct ParserFuzzTests {
    static let fixtures: RealAppleFixtures = {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        return try! RealAppleFixtures(directory: directory)
    }()

    /// `SIWA_FUZZ_SEED`, or a fresh one; printed either way.
    static let seed: UInt64 = {
        let seed =
            ProcessInfo.processInfo.environment["SIWA_FUZZ_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...(1 << 53))
        print("ParserFuzzTests seed: \(seed) (rerun with SIWA_FUZZ_SEED=\(seed))")
        return seed
    }()

    /// Longest a single parse may take before it counts as a hang.
    static let hangLimit: Duration = .seconds(1)

    // MARK: - JWT parser

    /// Every byte-level mutation of a real, valid Apple token is refused (base64url is canonical, so any change alters
    /// the signed bytes or the signature), and none crashes or hangs.
    @Test func mutatedRealTokensNeverVerify() async throws {
        var random = FuzzRandom(seed: Self.seed, stream: 1)
        for (index, fixture) in Self.fixtures.tokens.enumerated() {
            let verifier = try realVerifier(aud: fixture.aud, at: (fixture.iat + fixture.exp) / 2)
            _ = try await verifier.verify(fixture.token)  // the original verifies
            let original = Array(fixture.token.utf8)
            for round in 0..<160 {
                let mutated = random.mutate(original, dictionary: Self.tokenDictionary)
                guard mutated != original else { continue }
                let token = String(decoding: mutated, as: UTF8.self)
                await timed("token \(index) round \(round)") {
                    do {
                        _ = try await verifier.verify(token)
                        Issue.record("a mutated token verified (seed \(Self.seed), token \(index), round \(round))")
                    } catch {}
                    _ = await verifier.inspect(token, expectedNonce: "nonce")
                }
            }
        }
    }

    /// Random and structured junk as a whole token: random bytes, random base64url parts, huge and deeply nested
    /// headers, tokens at and beyond the length limit.
    @Test func junkTokensAreRefused() async throws {
        var random = FuzzRandom(seed: Self.seed, stream: 2)
        let fixture = Self.fixtures.tokens[0]
        let verifier = try realVerifier(aud: fixture.aud, at: fixture.iat + 1)
        for round in 0..<2_000 {
            let token = random.junkToken()
            await timed("junk token \(round)") {
                await #expect(throws: AppleSignInError.self) { try await verifier.verify(token) }
                _ = await verifier.inspect(token)
            }
        }
        for size in [16 * 1024, 16 * 1024 + 1, 1 << 20] {  // the limit is 16 KiB
            let token = String(repeating: "A", count: size / 3) + "." + String(repeating: "B", count: size / 3) + ".C"
            await timed("token of \(size) bytes") {
                await #expect(throws: AppleSignInError.malformed) { try await verifier.verify(token) }
            }
        }
    }

    /// Hostile claims inside a correctly signed token: huge, negative, fractional, non-finite and textual numbers in
    /// `exp` and `iat`, duplicate keys, deep nesting, wrong types. Signed by test keys, so every claim check runs.
    @Test func hostileClaimsInSignedTokens() async throws {
        var random = FuzzRandom(seed: Self.seed, stream: 3)
        let apple = try TestAppleKeys(count: 1)
        let clock = ManualWallClock(unixTime: 1_750_000_000)
        let configuration = try AppleSignInConfiguration(bundleIDs: [ClientID("com.example.app")])
        let keys = AppleKeyCache(source: StaticAppleKeySource(keySet: try apple.keySet()), clock: clock)
        let verifier = IdentityTokenVerifier(configuration: configuration, keys: keys, clock: clock)
        for round in 0..<150 {
            let claims = random.hostileClaims(now: 1_750_000_000)
            let token = try apple.sign(headerJSON: #"{"kid":"test-key-1","alg":"RS256"}"#, claimsJSON: claims)
            await timed("signed claims \(round): \(claims.prefix(200))") {
                _ = try? await verifier.verify(token)
                _ = await verifier.inspect(token, expectedNonce: "nonce")
                let body = Array(#"{"payload":"\#(token)"}"#.utf8)
                _ = try? await verifier.verifyNotification(body: body)
            }
        }
        // Each huge number answers an error, never a trap in the arithmetic that reports how far off it is.
        for number in Self.hugeNumbers {
            for claim in ["exp", "iat"] {
                let other = claim == "exp" ? #""iat":1750000000"# : #""exp":1750000600"#
                let claims =
                    #"{"iss":"https://appleid.apple.com","aud":"com.example.app","sub":"001234.a.1","#
                    + #"\#(other),"\#(claim)":\#(number)}"#
                let token = try apple.sign(headerJSON: #"{"kid":"test-key-1","alg":"RS256"}"#, claimsJSON: claims)
                await timed("\(claim)=\(number.prefix(40))") {
                    _ = try? await verifier.verify(token)
                    _ = await verifier.inspect(token)
                }
            }
        }
    }

    /// The claim checks run (by `inspect`) on thousands of unsigned, randomly built or mutated claim sets.
    @Test func randomClaimsThroughEveryCheck() async throws {
        var random = FuzzRandom(seed: Self.seed, stream: 4)
        let fixture = Self.fixtures.tokens[0]
        let verifier = try realVerifier(aud: fixture.aud, at: fixture.iat + 1)
        let parts = fixture.token.split(separator: ".").map(String.init)
        for round in 0..<3_000 {
            var claims = Array(random.hostileClaims(now: Int(fixture.iat)).utf8)
            if random.chance(2) { claims = random.mutate(claims, dictionary: Self.jsonDictionary) }
            let token = parts[0] + "." + Base64URL.encode(claims) + "." + parts[2]
            await timed("claims round \(round)") {
                await #expect(throws: AppleSignInError.self) { try await verifier.verify(token) }
                _ = await verifier.inspect(token, expectedNonce: "nonce")
            }
        }
    }

    // MARK: - Notifications

    /// Real notification bodies mutated, and junk bodies: never accepted unless unchanged, never a crash or hang.
    @Test func mutatedNotificationBodies() async throws {
        var random = FuzzRandom(seed: Self.seed, stream: 5)
        for (index, fixture) in Self.fixtures.notifications.enumerated() {
            let verifier = try realVerifier(aud: fixture.aud, at: (fixture.iat + fixture.exp) / 2)
            _ = try await verifier.verifyNotification(body: fixture.body)
            for round in 0..<250 {
                let body =
                    random.chance(4)
                    ? Array(random.junkJSON().utf8) : random.mutate(fixture.body, dictionary: Self.jsonDictionary)
                await timed("notification \(index) round \(round)") {
                    guard let notification = try? await verifier.verifyNotification(body: body) else { return }
                    // Only changes outside the signed payload (white space, extra members) may still verify.
                    #expect(notification.aud.rawValue == fixture.aud)
                    #expect(notification.event.sub.rawValue == fixture.sub)
                }
            }
        }
    }

    // MARK: - form_post

    /// Random, mutated and oversized callback bodies: a parsed callback or `malformed`, nothing else.
    @Test func formPostBodies() throws {
        var random = FuzzRandom(seed: Self.seed, stream: 6)
        let token = Self.fixtures.tokens[0].token
        let user = #"{"name":{"firstName":"Jane","lastName":"Appleseed"},"email":"jane@example.com"}"#
        let valid = Array(
            FormURLEncoding.encode([("state", "s-1"), ("code", "c.0.abc"), ("id_token", token), ("user", user)]).utf8
        )
        let parsed = try AuthorizationCallback(formBody: valid)
        #expect(parsed == .authorized(code: "c.0.abc", idToken: token, state: "s-1", user: try .init(json: user)))
        for round in 0..<4_000 {
            let body: [UInt8]
            switch random.next(below: 4) {
            case 0: body = random.bytes(count: random.next(below: 512))
            case 1: body = Array(FormURLEncoding.encode(random.formPairs()).utf8)
            default: body = random.mutate(valid, dictionary: Self.formDictionary)
            }
            let start = ContinuousClock.now
            do {
                _ = try AuthorizationCallback(formBody: body)
            } catch {
                #expect(error == AppleSignInError.malformed, "round \(round), seed \(Self.seed)")
            }
            #expect(ContinuousClock.now - start < Self.hangLimit, "round \(round), seed \(Self.seed)")
        }
        let oversized = Array(repeating: UInt8(ascii: "a"), count: AuthorizationCallback.maximumBodySize + 1)
        #expect(throws: AppleSignInError.malformed) { try AuthorizationCallback(formBody: oversized) }
    }

    /// A form encoded by siwa decodes to the same fields (unique names, any UTF-8).
    @Test func formEncodingRoundTrips() {
        var random = FuzzRandom(seed: Self.seed, stream: 7)
        for round in 0..<2_000 {
            let pairs = random.formPairs()
            let decoded = FormURLEncoding.decode(Array(FormURLEncoding.encode(pairs).utf8))
            let expected = Dictionary(uniqueKeysWithValues: pairs)
            #expect(decoded == expected, "round \(round), seed \(Self.seed)")
        }
    }

    /// The lenient reading agrees with the strict one on every form the strict one accepts (random pairs, names
    /// unique), and also keeps what the strict one refuses: a name given twice, each time in order, and an escape
    /// that is not valid, as written.
    @Test func lenientFormPairsAgreeWithTheStrictDecoder() {
        var random = FuzzRandom(seed: Self.seed, stream: 11)
        for round in 0..<2_000 {
            let pairs = random.formPairs()
            let body = Array(FormURLEncoding.encode(pairs).utf8)
            let lenient = FormURLEncoding.lenientPairs(body)
            #expect(lenient.map(\.name) == pairs.map(\.0), "round \(round), seed \(Self.seed)")
            #expect(lenient.map(\.value) == pairs.map(\.1), "round \(round), seed \(Self.seed)")
            for (name, value) in pairs {
                #expect(FormURLEncoding.decodeComponent(FormURLEncoding.percentEncode(name)) == name)
                #expect(FormURLEncoding.decodeComponent(FormURLEncoding.percentEncode(value)) == value)
            }
        }
        let refused = Array("a=1&a=2+3&b=%ZZ&%E2%82%AC=%FF&c".utf8)
        #expect(FormURLEncoding.decode(refused) == nil)
        let kept = FormURLEncoding.lenientPairs(refused)
        #expect(kept.map(\.name) == ["a", "a", "b", "€", "c"])
        #expect(kept.map(\.value) == ["1", "2 3", "%ZZ", "%FF", ""])
        #expect(FormURLEncoding.decodeComponent("a%2Bb+c") == "a+b c")
        #expect(FormURLEncoding.decodeComponent("%ZZ") == nil)
        #expect(FormURLEncoding.decodeComponent("%FF") == nil)
    }

    // MARK: - The readers underneath

    /// JSON: random documents, mutations, nesting far past the limit, huge numbers, invalid UTF-8 and duplicate keys.
    @Test func jsonReader() {
        var random = FuzzRandom(seed: Self.seed, stream: 8)
        for round in 0..<5_000 {
            var document = Array(random.junkJSON().utf8)
            if random.chance(2) { document = random.mutate(document, dictionary: Self.jsonDictionary) }
            let start = ContinuousClock.now
            _ = try? JSONReader.parse(document)
            #expect(ContinuousClock.now - start < Self.hangLimit, "round \(round), seed \(Self.seed)")
        }
        for depth in [JSONReader.maximumDepth + 1, 10_000, 1_000_000] {
            #expect(throws: JSONReader.Failure.self) {
                try JSONReader.parse(Array(repeating: UInt8(ascii: "["), count: depth))
            }
            let objects = String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
            #expect(throws: JSONReader.Failure.self) { try JSONReader.parse(Array(objects.utf8)) }
        }
        #expect(throws: JSONReader.Failure.self) { try JSONReader.parse(Array(#"{"exp":1,"exp":2}"#.utf8)) }
        #expect(throws: JSONReader.Failure.self) { try JSONReader.parse([0x22, 0xC0, 0xAF, 0x22]) }
        #expect(throws: JSONReader.Failure.self) { try JSONReader.parse(Array(#""\ud800""#.utf8)) }
    }

    /// A token's claims are read as a view of the object's members (`JSONObjectView`), not a tree: it must refuse
    /// exactly the documents the tree reader refuses, with the same failure, and find every member the tree has,
    /// with the same value. Random documents, mutated real claims, escaped and non-ASCII keys, and two keys that are
    /// different bytes of one length but equal strings.
    @Test func claimsViewReadsAsTheTree() throws {
        var random = FuzzRandom(seed: Self.seed, stream: 10)
        let realClaims = try Self.fixtures.tokens.map { fixture in
            try #require(Base64URL.decode(String(fixture.token.split(separator: ".")[1])))
        }
        var documents = [
            #"{"su\u0062":"a","sub":"b"}"#, #"{"su\u0062":"a"}"#, #"{"\u212B":1,"A\u030A":2}"#,
            #"{"é":1,"e\u0301":2}"#, #"{"a":1,"a":2}"#, #" { "a" : [ 1 , { "b" : null } ] } "#, "{}", "[]", "",
            #"{"a":1}x"#, #"{"a":"\ud800"}"#, #"{"a\ud800":1}"#, #"{"a":"x\u0000"}"#, #"{"a":01}"#, #"{"a":-}"#,
            #"{"a":"tab\there"}"#, "{\"a\":\"raw\ttab\"}", #"{"ключ":"значение","k":"v"}"#,
            // Keys that share their first eight bytes and length but differ after them; a duplicate after many
            // keys, after one key that is not plain, and of a key that is not plain.
            #"{"abcdefgh1":1,"abcdefgh2":2,"abcdefgh1":3}"#, #"{"abcdefgh1":1,"abcdefgh2":2}"#,
            "{" + (0..<40).map { #""k\#($0)":\#($0)"# }.joined(separator: ",") + #","k17":1}"#,
            "{" + (0..<40).map { #""k\#($0)":\#($0)"# }.joined(separator: ",") + "}",
            #"{"\u006b":1,"a":2,"b":3,"a":4}"#, #"{"a":1,"b":2,"\u0061":3}"#, #"{"a":1,"\u0062":2,"b":3}"#,
        ].map { Array($0.utf8) }
        documents += realClaims
        for round in 0..<4_000 {
            if random.chance(2) {
                let claims = realClaims[random.next(below: realClaims.count)]
                documents.append(random.mutate(claims, dictionary: Self.jsonDictionary))
            } else {
                var document = Array(random.junkJSON().utf8)
                if random.chance(2) { document = random.mutate(document, dictionary: Self.jsonDictionary) }
                documents.append(document)
            }
            _ = round
        }
        for document in documents {
            let label = "\(String(decoding: document.prefix(200), as: UTF8.self)) (seed \(Self.seed))"
            // The document alone, and (as a token's header and claims are) inside a larger buffer.
            let padded = Array("{\"x\":1}".utf8) + document + Array("]\"".utf8)
            let inside = 7..<(7 + document.count)
            for view in [
                Result { try JSONReader.parseObjectView(document) },
                Result { try JSONReader.parseObjectView(padded, range: inside) },
            ] {
                switch (Result { try JSONReader.parseObject(document) }, view) {
                case (.success(.object(let members)), .success(let view)):
                    #expect(view.members.count == members.count, "\(label)")
                    #expect(Array(view.text) == document, "\(label)")
                    for member in members { #expect(view[member.key] == member.value, "\(label)") }
                    // Names that share a key's first eight bytes, or its length, but are other names; and names of
                    // the key's length that differ in one of its first eight bytes only.
                    var near: [String] = []
                    for member in members {
                        let key = member.key
                        near += [key + "x", String(key.dropLast()), String(key.dropLast()) + "~"]
                        for offset in 0..<min(8, key.utf8.count) {
                            var bytes = Array(key.utf8)
                            let replaced: UInt8 = bytes[offset] == UInt8(ascii: "~") ? 0x7D : 0x7E
                            bytes[offset] = replaced
                            near.append(String(decoding: bytes, as: UTF8.self))
                        }
                    }
                    for absent in ["nope", "exp ", "", "\u{212B}"] + near
                    where !members.contains(where: { $0.hasKey(absent) }) {
                        #expect(view[absent] == nil, "\(absent) in \(label)")
                    }
                    // Names looked up together, in one walk, find what each finds by itself: keys of the object
                    // and near names, up to sixteen, in any order.
                    var together: [String] = []
                    for name in (members.map(\.key) + near + ["nope", ""]).shuffled(using: &random)
                    where together.count < JSONObjectView.Found.capacity && !together.contains(name) {
                        together.append(name)
                    }
                    let found = view.members(named: JSONObjectView.Names(together))
                    for (place, name) in together.enumerated() {
                        #expect(found[place].flatMap(view.value(at:)) == view[name], "\(name) in \(label)")
                    }
                case (.failure(let tree), .failure(let view)):
                    #expect("\(tree)" == "\(view)", "\(label)")
                case (let tree, let view):
                    Issue.record("the tree reader gave \(tree), the view \(view): \(label)")
                }
            }
        }
    }

    /// Plain strings are scanned eight bytes at a time: a byte that ends or spoils a plain string (a quote, an escape,
    /// a control character, a byte of 0x80 or more), at every position of a word and across words, is found exactly
    /// where the byte-by-byte reader finds it; bytes that do not (space, `~`, DEL) leave the string plain.
    @Test func plainStringsAreScannedWordByWord() throws {
        let inserts: [(bytes: [UInt8], plain: Bool)] = [
            ([0x20], true), ([0x7E], true), ([0x7F], true), ([0x21], true), ([0x23], true), ([0x5B], true),
            ([0x5D], true), ([0x5C, 0x6E], false), ([0x5C, 0x22], false),
            ([0x5C, 0x75, 0x30, 0x30, 0x34, 0x31], false),
            ([0xC3, 0xA9], false), ([0xE2, 0x82, 0xAC], false), ([0x00], false), ([0x01], false), ([0x1F], false),
            ([0x09], false), ([0x80], false), ([0xFF], false), ([0x22], false),
        ]
        for length in [0, 1, 7, 8, 9, 15, 16, 17, 31] {
            for position in 0...length {
                for insert in inserts {
                    let text =
                        Array(repeating: UInt8(ascii: "a"), count: position) + insert.bytes
                        + Array(repeating: UInt8(ascii: "b"), count: length - position)
                    let document = Array(#"{"k":""#.utf8) + text + Array(#"","z":1}"#.utf8)
                    let label = "\(insert.bytes) at \(position) of \(length)"
                    switch (
                        Result { try JSONReader.parseObject(document) },
                        Result { try JSONReader.parseObjectView(document) }
                    ) {
                    case (.success(let tree), .success(let view)):
                        #expect(view["k"] == tree["k"], "\(label)")
                        #expect(view["z"] == .number("1"), "\(label)")
                        let plain = view.withPlainString("k") { Array($0) }
                        if case .plain(let bytes) = plain {
                            #expect(insert.plain && bytes == text, "\(label)")
                        } else {
                            #expect(!insert.plain, "\(label)")
                        }
                        let index = try #require(view.members.indices.first { view.value(at: $0) == tree["k"] })
                        #expect(
                            view.plainString(at: index) == (insert.plain ? tree["k"]?.stringValue : nil),
                            "\(label)"
                        )
                    case (.failure(let tree), .failure(let view)):
                        #expect("\(tree)" == "\(view)", "\(label)")
                        #expect(!insert.plain, "\(label)")
                    case (let tree, let view):
                        Issue.record("the tree reader gave \(tree), the view \(view): \(label)")
                    }
                }
            }
        }
    }

    /// An identity token's typed claims are read in one walk over the claims' members, with plain strings, literal
    /// booleans and small integers read where they are: the token (or the failure) must be exactly what the rules
    /// read by name from the tree make of the same claims. Every claim the token reads, with values of every kind
    /// (escaped, non-ASCII, lenient booleans, huge and fractional numbers, null, nesting), keys sometimes escaped, and
    /// mutated real claims.
    @Test func identityTokenClaimsReadAsByName() throws {
        var random = FuzzRandom(seed: Self.seed, stream: 11)
        let strings = [
            #""001234.abcdef0123456789abcdef0123456789.1234""#, #""x@privaterelay.appleid.com""#, #""""#, #""a\u0062""#,
            #""caf\u00e9""#, #""café""#, #""\"quoted\"""#, "null",
        ]
        let booleans = ["true", "false", #""true""#, #""false""#, #""True""#, "null", "1"]
        let numbers = [
            "0", "2", "7", "123456789012345", "1234567890123456", "-1", "2.5", "1e3", "1749999990",
            "9223372036854775808", "1e400", "null", #""2""#,
        ]
        let others = ["[]", #"["a"]"#, #"{"a":1}"#]
        let anything = strings + booleans + numbers + others
        let names: [(String, [String])] = [
            ("sub", strings), ("email", strings), ("email_verified", booleans), ("is_private_email", booleans),
            ("nonce", strings), ("nonce_supported", booleans), ("transfer_sub", strings), ("org_id", strings),
            ("c_hash", strings), ("at_hash", strings), ("real_user_status", numbers), ("auth_time", numbers),
            ("iss", strings), ("aud", strings), ("exp", numbers),
        ]
        var documents = try Self.fixtures.tokens.map { fixture in
            try #require(Base64URL.decode(String(fixture.token.split(separator: ".")[1])))
        }
        for _ in 0..<3_000 {
            var members: [String] = []
            for (name, kind) in names where name == "sub" || random.chance(2) {
                // Keys with an escape are the same key: a walk that compared bytes only would miss them.
                let key =
                    random.chance(8)
                    ? String(name.dropLast()) + "\\u00" + String(name.utf8.last!, radix: 16) : name
                // Mostly a value of the claim's kind (every kind of it), sometimes anything.
                let values = random.chance(8) ? anything : kind
                members.append("\"\(key)\":\(values[random.next(below: values.count)])")
            }
            var document = Array(("{" + members.shuffled(using: &random).joined(separator: ",") + "}").utf8)
            if random.chance(8) { document = random.mutate(document, dictionary: Self.jsonDictionary) }
            documents.append(document)
        }
        var read = 0
        for document in documents {
            guard case .object(let members)? = try? JSONReader.parseObject(document) else { continue }
            let tree = JSONValue.object(members)
            let label = "\(String(decoding: document.prefix(300), as: UTF8.self)) (seed \(Self.seed))"
            // The claims alone, and (as a token's are, after its header) inside a larger buffer.
            let padded = Array(#"{"kid":"k","alg":"RS256"}"#.utf8) + document + Array("]\"".utf8)
            for view in [
                try JSONReader.parseObjectView(document),
                try JSONReader.parseObjectView(padded, range: 25..<(25 + document.count)),
            ] {
                let jwt = SignedAppleJWT(
                    claims: view,
                    audience: ClientID("com.example.app"),
                    issuer: AppleSignInConfiguration.appleIssuer,
                    issuedAt: Date(timeIntervalSince1970: 1_750_000_000),
                    expiresAt: Date(timeIntervalSince1970: 1_750_000_600)
                )
                let walked = Result { () throws(AppleSignInError) in try IdentityToken(claims: jwt) }
                switch (walked, Self.byName(tree, jwt)) {
                case (.success(let walked), .success(let byName)):
                    #expect(walked == byName, "\(label)")
                    read += 1
                case (.failure(let walked), .failure(let byName)):
                    #expect(walked.description == byName.description, "\(label)")
                case (let walked, let byName):
                    Issue.record("one walk gave \(walked), by name \(byName): \(label)")
                }
            }
        }
        #expect(read > 100, "enough claim sets read through to a token")
    }

    /// The typed claims read claim by claim from the tree, by the rules `IdentityToken(claims:)` keeps: its reading
    /// before the one walk.
    private static func byName(_ claims: JSONValue, _ jwt: SignedAppleJWT) -> Result<IdentityToken, AppleSignInError> {
        Result { () throws(AppleSignInError) -> IdentityToken in
            guard let sub = claims["sub"]?.stringValue, !sub.isEmpty else { throw .malformed("claim 'sub' is missing") }
            var token = IdentityToken(
                iss: jwt.issuer,
                sub: AppleUserID(sub),
                aud: jwt.audience,
                issuedAt: jwt.issuedAt,
                expiresAt: jwt.expiresAt
            )
            token.email = try claims.optionalString("email")
            token.emailVerified = try claims.optionalBool("email_verified")
            token.isPrivateEmail = try claims.optionalBool("is_private_email")
            token.nonce = try claims.optionalString("nonce")
            token.nonceSupported = try claims.optionalBool("nonce_supported")
            token.transferSub = try claims.optionalString("transfer_sub").map(AppleUserID.init)
            token.orgId = try claims.optionalString("org_id")
            token.cHash = try claims.optionalString("c_hash")
            token.atHash = try claims.optionalString("at_hash")
            if let status = claims["real_user_status"] {
                guard let value = status.int64Value, let int = Int(exactly: value) else {
                    throw .malformed("claim 'real_user_status' is not an integer")
                }
                token.realUserStatus = RealUserStatus(rawValue: int)
            }
            if let authTime = claims["auth_time"] {
                guard let seconds = authTime.doubleValue, seconds.isFinite else {
                    throw .malformed("claim 'auth_time' is not a number")
                }
                token.authTime = Date(timeIntervalSince1970: seconds)
            }
            return token
        }
    }

    /// Base64url: decoding is canonical (what decodes re-encodes to the same text) and encoding round-trips.
    @Test func base64URL() {
        // RFC 4648's test vectors (section 10), without padding.
        let vectors = [
            "": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy",
        ]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.encode(plain.utf8.lazy.map { $0 }) == encoded)  // not contiguous: the copying path
        }
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        var random = FuzzRandom(seed: Self.seed, stream: 9)
        for round in 0..<5_000 {
            let bytes = random.bytes(count: random.next(below: 64))
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes, "round \(round), seed \(Self.seed)")
            let text = random.chance(2) ? random.base64URLText(count: random.next(below: 64)) : random.asciiText()
            if let decoded = Base64URL.decode(text) {
                #expect(Base64URL.encode(decoded) == text, "round \(round), seed \(Self.seed)")
            }
        }
    }

    // MARK: - Helpers

    private func realVerifier(aud: String, at time: TimeInterval) throws -> IdentityTokenVerifier {
        let clock = ManualWallClock(unixTime: time)
        let keys = AppleKeyCache(
            source: StaticAppleKeySource(keySet: try AppleKeySet(jwks: Self.fixtures.jwks)),
            clock: clock
        )
        let configuration = try AppleSignInConfiguration(bundleIDs: [ClientID(aud)])
        return IdentityTokenVerifier(configuration: configuration, keys: keys, clock: clock)
    }

    /// Runs one case; a case slower than ``hangLimit`` is recorded as a hang.
    private func timed(_ label: String, _ body: () async throws -> Void) async rethrows {
        let start = ContinuousClock.now
        try await body()
        let elapsed = ContinuousClock.now - start
        #expect(elapsed < Self.hangLimit, "\(label) took \(elapsed) (seed \(Self.seed))")
    }

    static let hugeNumbers = [
        "1e300", "-1e300", "1e308", "1.7976931348623157e308", "1e309", "-1e309", "9223372036854775807",
        "9223372036854775808", "-9223372036854775809", "18446744073709551616",
        String(repeating: "9", count: 400), "1" + String(repeating: "0", count: 5_000), "1e-400", "0.0000001",
        "-0", "1E+99999", "4.9e-324", "1560008310.999999999999",
    ]

    static let tokenDictionary: [[UInt8]] = [
        ".", "..", "=", "==", "+", "/", "%2E", "eyJ", "e30", "bnVsbA", "W10", "AAAA", "\u{0}", "\u{FFFD}",
    ].map { Array($0.utf8) }

    static let jsonDictionary: [[UInt8]] =
        [
            "{", "}", "[", "]", "\"", "\\", "\\u", "\\ud800", ":", ",", "null", "true", "1e999", "-", "0", "\"alg\":",
            "\"none\"", "\"kid\":\"../../etc/passwd\"", "\"exp\":", "\"iat\":", "\"aud\":[", "\"events\":\"{",
            "\"payload\":", "\u{0}", "\u{7F}",
        ].map { Array($0.utf8) } + [[0xC0], [0xFF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82]]

    static let formDictionary: [[UInt8]] = [
        "&", "=", "%", "%2", "%zz", "%00", "%C0%AF", "%FF", "+", "&state=", "&code=", "&id_token=", "&user=", "&error=",
        "user_cancelled_authorize", "%7B", "%22",
    ].map { Array($0.utf8) }
}

/// A seeded SplitMix64 generator and the mutations and hostile documents the fuzz tests draw from it.
struct FuzzRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64, stream: UInt64) {
        state = seed &+ stream &* 0x9E37_79B9_7F4A_7C15
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func next(below bound: Int) -> Int {
        bound <= 1 ? 0 : Int(next() % UInt64(bound))
    }

    /// True one time in `n`.
    mutating func chance(_ n: Int) -> Bool { next(below: n) == 0 }

    mutating func bytes(count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
    }

    mutating func base64URLText(count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        return String(decoding: (0..<count).map { _ in alphabet[next(below: alphabet.count)] }, as: UTF8.self)
    }

    mutating func asciiText() -> String {
        String(decoding: (0..<next(below: 40)).map { _ in UInt8(next(below: 128)) }, as: UTF8.self)
    }

    /// One to four byte-level mutations: bit flips, byte changes, insertions (random or from `dictionary`),
    /// deletions, truncation, duplication of a range.
    mutating func mutate(_ input: [UInt8], dictionary: [[UInt8]]) -> [UInt8] {
        var bytes = input
        for _ in 0...next(below: 4) {
            let position = next(below: bytes.count + 1)
            switch next(below: 7) {
            case 0 where !bytes.isEmpty:
                let index = min(position, bytes.count - 1)
                bytes[index] ^= 1 << UInt8(next(below: 8))
            case 1 where !bytes.isEmpty:
                bytes[min(position, bytes.count - 1)] = UInt8(truncatingIfNeeded: next())
            case 2: bytes.insert(contentsOf: self.bytes(count: 1 + next(below: 8)), at: position)
            case 3: bytes.insert(contentsOf: dictionary[next(below: dictionary.count)], at: position)
            case 4:
                let end = min(bytes.count, position + 1 + next(below: 16))
                bytes.removeSubrange(position..<end)
            case 5: bytes.removeSubrange(position...)
            default:
                let end = min(bytes.count, position + next(below: 64))
                bytes.insert(contentsOf: bytes[position..<end], at: position)
            }
        }
        return bytes
    }

    /// A token-shaped string that is not a valid token.
    mutating func junkToken() -> String {
        switch next(below: 8) {
        case 0: return String(decoding: bytes(count: next(below: 300)), as: UTF8.self)
        case 1:
            return (0..<(1 + next(below: 5))).map { _ in base64URLText(count: next(below: 200)) }.joined(separator: ".")
        case 2:
            let header = Base64URL.encode(Array(junkJSON().utf8))
            return header + "." + Base64URL.encode(Array(junkJSON().utf8)) + "." + base64URLText(count: 342)
        case 3:
            let algorithm = ["none", "HS256", "ES256", "RS512", "rs256", "RS256 ", "", "PS256"][next(below: 8)]
            let header = #"{"alg":"\#(algorithm)","kid":"AIDOPK1"}"#
            return Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array("{}".utf8)) + "."
        case 4:
            let kid = [
                "../../../etc/passwd", "..%2F..%2Fkeys", "/dev/zero", String(repeating: "k", count: 5_000), "\u{0}",
            ]
            let header = #"{"alg":"RS256","kid":"\#(kid[next(below: kid.count)])"}"#
            return Base64URL.encode(Array(header.utf8)) + ".e30." + base64URLText(count: 342)
        case 5:
            let depth = 20 + next(below: 5_000)
            let header = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            return Base64URL.encode(Array(header.utf8)) + ".e30.AAAA"
        case 6: return #"{"alg":"RS256"}.e30.AAAA"#
        default:
            let header = #"{"alg":"RS256","kid":"AIDOPK1","alg":"none"}"#
            return Base64URL.encode(Array(header.utf8)) + ".e30." + base64URLText(count: 342)
        }
    }

    /// A JSON-ish document: valid or nearly so, nested, with huge numbers, bad escapes and duplicate keys.
    mutating func junkJSON(depth: Int = 0) -> String {
        switch next(below: depth > 6 ? 4 : 9) {
        case 0: return ParserFuzzTests.hugeNumbers[next(below: ParserFuzzTests.hugeNumbers.count)]
        case 1: return ["null", "true", "false", "0", "-0.5e-3", "\"\"", #""\u00e9\ud83d\ude00""#][next(below: 7)]
        case 2: return "\"" + asciiText().replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\""
        case 3:
            let depth = next(below: 100)
            return String(repeating: "[", count: depth) + String(repeating: "]", count: next(below: depth + 2))
        case 4, 5:
            let members = (0..<next(below: 6)).map { _ in
                let key = ["exp", "iat", "aud", "sub", "alg", "kid", "payload", "events", "x"][next(below: 9)]
                return "\"\(key)\":" + junkJSON(depth: depth + 1)
            }
            return "{" + members.joined(separator: ",") + "}"
        case 6:
            return "[" + (0..<next(below: 5)).map { _ in junkJSON(depth: depth + 1) }.joined(separator: ",") + "]"
        case 7: return String(decoding: bytes(count: next(below: 30)), as: UTF8.self)
        default: return #"{"payload":"# + junkJSON(depth: depth + 1) + "}"
        }
    }

    /// A claims object with hostile values in the checked claims.
    mutating func hostileClaims(now: Int) -> String {
        var members: [String] = []
        for candidate in 0..<15 where chance(2) {
            let number =
                chance(2)
                ? String(now + next(below: 2_000) - 1_000)
                : ParserFuzzTests.hugeNumbers[next(below: ParserFuzzTests.hugeNumbers.count)]
            switch candidate {
            case 0: members.append(#""iss":"https://appleid.apple.com""#)
            case 1: members.append(#""iss":"# + junkJSON())
            case 2: members.append(#""aud":"com.example.app""#)
            case 3: members.append(#""aud":["com.example.app",1]"#)
            case 4: members.append(#""aud":"# + junkJSON())
            case 5: members.append(#""exp":"# + number)
            case 6: members.append(#""iat":"# + number)
            case 7: members.append(#""exp":"# + junkJSON())
            case 8: members.append(#""sub":"001234.a.1""#)
            case 9: members.append(#""nonce":"nonce""#)
            case 10: members.append(#""email_verified":"# + junkJSON())
            case 11: members.append(#""jti":"j""#)
            case 12:
                members.append(
                    #""events":"{\"type\":\"consent-revoked\",\"sub\":\"001234.a.1\",\"event_time\":"#
                        + number + "}\""
                )
            case 13: members.append(#""events":"# + junkJSON())
            default: members.append(#""exp":1,"exp":2"#)
            }
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// Name-value pairs with unique names and any text.
    mutating func formPairs() -> [(String, String)] {
        var seen: Set<String> = []
        var pairs: [(String, String)] = []
        for _ in 0..<next(below: 8) {
            let name = chance(3) ? ["state", "code", "id_token", "user", "error"][next(below: 5)] : unicodeText()
            guard seen.insert(name).inserted else { continue }
            pairs.append((name, unicodeText()))
        }
        return pairs
    }

    mutating func unicodeText() -> String {
        let scalars = (0..<next(below: 12)).compactMap { _ -> Character? in
            let value: UInt32 =
                switch next(below: 3) {
                case 0: UInt32(next(below: 128))
                case 1: UInt32(next(below: 0xD800))
                default: UInt32(0x10000 + next(below: 0xFFFFF))
                }
            return Unicode.Scalar(value).map(Character.init)
        }
        return String(scalars)
    }
}
