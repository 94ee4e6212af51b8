import AppleSignIn
import SiwaTesting
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@Suite("Server-to-server notifications")
struct ServerNotificationTests {
    static let bundleID = "com.example.app"
    static let user = "001234.abcdef0123456789abcdef0123456789.1234"
    static let now = 1_750_000_000
    static let eventTimeMilliseconds: Int64 = 1_749_999_990_123

    let apple: TestAppleKeys
    let clock = ManualWallClock(unixTime: TimeInterval(now))

    init() throws {
        apple = try TestAppleKeys(count: 1)
    }

    private func verifier() throws -> IdentityTokenVerifier {
        let configuration = try AppleSignInConfiguration(bundleIDs: [ClientID(Self.bundleID)])
        let keys = AppleKeyCache(source: StaticAppleKeySource(keySet: try apple.keySet()), clock: clock)
        return IdentityTokenVerifier(configuration: configuration, keys: keys, clock: clock)
    }

    /// The `events` object as Apple writes it, before it is turned into a string.
    private func eventJSON(type: String, sub: String? = user, extra: [String] = []) -> String {
        var members = [#""type":"\#(type)""#]
        if let sub { members.append(#""sub":"\#(sub)""#) }
        members.append(#""event_time":\#(Self.eventTimeMilliseconds)"#)
        members += extra
        return "{" + members.joined(separator: ",") + "}"
    }

    /// The notification JWT's claims, with `events` given as raw JSON (normally an escaped string, as Apple sends).
    private func claimsJSON(eventsMember: String, aud: String = bundleID) -> String {
        #"{"iss":"https://appleid.apple.com","aud":"\#(aud)","exp":\#(Self.now + 86_400),"iat":\#(Self.now),"#
            + #""jti":"jti-7b1f","events":\#(eventsMember)}"#
    }

    /// `events` as a JSON string holding `json`.
    private func asJSONString(_ json: String) -> String {
        "\"" + json.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\""
    }

    /// The body Apple POSTs: `{"payload":"<JWT>"}`.
    private func body(
        eventsMember: String,
        aud: String = bundleID,
        keys: TestAppleKeys? = nil,
        extraBodyMembers: String = ""
    ) throws -> [UInt8] {
        let jwt = try (keys ?? apple).sign(
            headerJSON: #"{"kid":"test-key-1","alg":"RS256"}"#,
            claimsJSON: claimsJSON(eventsMember: eventsMember, aud: aud)
        )
        return Array(#"{"payload":"\#(jwt)"\#(extraBodyMembers)}"#.utf8)
    }

    private func body(event: String, aud: String = bundleID, keys: TestAppleKeys? = nil) throws -> [UInt8] {
        try body(eventsMember: asJSONString(event), aud: aud, keys: keys)
    }

    // MARK: - Decoding

    @Test func consentRevokedDecodes() async throws {
        let notification = try await verifier().verifyNotification(
            body: body(event: eventJSON(type: "consent-revoked"))
        )
        #expect(notification.id == "jti-7b1f")
        #expect(notification.aud == ClientID(Self.bundleID))
        #expect(notification.issuedAt == Date(timeIntervalSince1970: TimeInterval(Self.now)))
        #expect(notification.event.type == .consentRevoked)
        #expect(notification.event.type.isKnown)
        #expect(notification.event.sub == AppleUserID(Self.user))
        #expect(notification.event.email == nil)
        #expect(notification.event.isPrivateEmail == nil)
    }

    @Test func accountDeleteDecodes() async throws {
        let notification = try await verifier().verifyNotification(body: body(event: eventJSON(type: "account-delete")))
        #expect(notification.event.type == .accountDelete)
        #expect(notification.event.type.isKnown)
        #expect(notification.event.sub == AppleUserID(Self.user))
    }

    @Test func eventTimeInMillisecondsBecomesADate() async throws {
        let notification = try await verifier().verifyNotification(body: body(event: eventJSON(type: "account-delete")))
        let expected = Date(timeIntervalSince1970: 1_749_999_990.123)
        #expect(abs(notification.event.eventTime.timeIntervalSince(expected)) < 0.000_1)
    }

    @Test(arguments: [#""true""#, "true"])
    func emailDisabledDecodesWithStringOrBooleanPrivateFlag(isPrivate: String) async throws {
        let event = eventJSON(
            type: "email-disabled",
            extra: [#""email":"abc123@privaterelay.appleid.com""#, #""is_private_email":\#(isPrivate)"#]
        )
        let notification = try await verifier().verifyNotification(body: body(event: event))
        #expect(notification.event.type == .emailDisabled)
        #expect(notification.event.type.isKnown)
        #expect(notification.event.email == "abc123@privaterelay.appleid.com")
        #expect(notification.event.isPrivateEmail == true)
    }

    @Test(arguments: [#""false""#, "false"])
    func emailEnabledDecodesWithStringOrBooleanPrivateFlag(isPrivate: String) async throws {
        let event = eventJSON(
            type: "email-enabled",
            extra: [#""email":"jane@example.com""#, #""is_private_email":\#(isPrivate)"#]
        )
        let notification = try await verifier().verifyNotification(body: body(event: event))
        #expect(notification.event.type == .emailEnabled)
        #expect(notification.event.type.isKnown)
        #expect(notification.event.email == "jane@example.com")
        #expect(notification.event.isPrivateEmail == false)
    }

    @Test func unknownEventTypeDecodesAsUnknown() async throws {
        let notification = try await verifier().verifyNotification(body: body(event: eventJSON(type: "something-new")))
        #expect(notification.event.type.rawValue == "something-new")
        #expect(!notification.event.type.isKnown)
        #expect(notification.event.sub == AppleUserID(Self.user))
    }

    @Test func payloadAloneVerifies() async throws {
        let jwt = try apple.sign(
            headerJSON: #"{"kid":"test-key-1","alg":"RS256"}"#,
            claimsJSON: claimsJSON(eventsMember: asJSONString(eventJSON(type: "consent-revoked")))
        )
        #expect(try await verifier().verifyNotification(payload: jwt).event.type == .consentRevoked)
    }

    // MARK: - Refusals

    @Test func forgedNotificationIsRefused() async throws {
        // Signed by another key that claims Apple's kid.
        let forged = try body(event: eventJSON(type: "account-delete"), keys: try TestAppleKeys(count: 1))
        await #expect(throws: AppleSignInError.badSignature) { try await verifier().verifyNotification(body: forged) }
    }

    @Test func notificationForAnotherAppIsRefused() async throws {
        let other = try body(event: eventJSON(type: "account-delete"), aud: "com.other.app")
        await #expect(throws: AppleSignInError.audienceMismatch(got: "com.other.app")) {
            try await verifier().verifyNotification(body: other)
        }
    }

    @Test func expiredNotificationIsRefused() async throws {
        let expired = try body(event: eventJSON(type: "account-delete"))
        clock.advance(by: 86_400 + 61)
        await #expect(throws: AppleSignInError.expired) { try await verifier().verifyNotification(body: expired) }
    }

    @Test(arguments: ["not json", "", "[]", #"{"other":"x"}"#, #"{"payload":42}"#, #"{"payload":"a.b.c"}"#])
    func bodyWithoutAPayloadIsMalformed(text: String) async throws {
        await #expect(throws: AppleSignInError.malformed) {
            try await verifier().verifyNotification(body: Array(text.utf8))
        }
    }

    @Test func eventsThatAreNotAStringAreMalformed() async throws {
        // The object itself instead of a string holding it.
        let raw = try body(eventsMember: eventJSON(type: "account-delete"))
        await #expect(throws: AppleSignInError.malformed) { try await verifier().verifyNotification(body: raw) }
    }

    @Test(arguments: ["not json", "[1]", #"{"type":"account-delete""#])
    func eventsStringThatIsNotAJSONObjectIsMalformed(events: String) async throws {
        let broken = try body(event: events)
        await #expect(throws: AppleSignInError.malformed) { try await verifier().verifyNotification(body: broken) }
    }

    @Test func eventWithoutSubjectIsMalformed() async throws {
        let anonymous = try body(event: eventJSON(type: "account-delete", sub: nil))
        await #expect(throws: AppleSignInError.malformed) { try await verifier().verifyNotification(body: anonymous) }
    }

    @Test func eventWithoutTypeOrTimeIsMalformed() async throws {
        for event in [
            #"{"sub":"\#(Self.user)","event_time":1}"#,
            #"{"type":"account-delete","sub":"\#(Self.user)"}"#,
            #"{"type":"account-delete","sub":"\#(Self.user)","event_time":"soon"}"#,
        ] {
            let broken = try body(event: event)
            await #expect(throws: AppleSignInError.malformed) { try await verifier().verifyNotification(body: broken) }
        }
    }

    @Test func notificationWithoutJTIIsMalformed() async throws {
        let claims = claimsJSON(eventsMember: asJSONString(eventJSON(type: "account-delete")))
            .replacing(#""jti":"jti-7b1f","#, with: "")
        let jwt = try apple.sign(headerJSON: #"{"kid":"test-key-1","alg":"RS256"}"#, claimsJSON: claims)
        await #expect(throws: AppleSignInError.malformed) { try await verifier().verifyNotification(payload: jwt) }
    }

    @Test func bodyOver64KiBIsMalformed() async throws {
        let event = eventJSON(type: "account-delete")
        // Well formed and correctly signed, only padded with an extra member.
        let small = try body(eventsMember: asJSONString(event), extraBodyMembers: #","padding":"x""#)
        _ = try await verifier().verifyNotification(body: small)
        let padding = String(repeating: "x", count: 64 * 1024)
        let large = try body(eventsMember: asJSONString(event), extraBodyMembers: #","padding":"\#(padding)""#)
        #expect(large.count > 64 * 1024)
        await #expect(throws: AppleSignInError.malformed) { try await verifier().verifyNotification(body: large) }
    }
}
