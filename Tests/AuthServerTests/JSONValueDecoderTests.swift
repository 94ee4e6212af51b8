import AppleSignIn
import Foundation
import Testing

@testable import AuthServer

/// Request bodies are decoded from the strict reader's one parse instead of a second parse by `JSONDecoder`. Each
/// body here goes through both, and both must give the same value, or fail with the same `DecodingError` case at the
/// same coding path: the errors a client sees (`missing_field`, `invalid_field` naming the field) are made from those.
@Suite struct JSONValueDecoderTests {
    enum Mode: String, Decodable { case on, off }

    struct Inner: Decodable, Equatable {
        var name: String
        var tags: [String]
    }

    /// Every kind of value a body type could hold, beyond the flat strings siwa's own bodies have today.
    struct Everything: Decodable, Equatable {
        var text: String
        var flag: Bool?
        var count: Int?
        var small: UInt8?
        var ratio: Double?
        var mode: Mode?
        var inner: Inner?
        var list: [Int]?
        var nested: [[String]]?
        var map: [String: Int]?
        var weight: Float?
        var link: URL?
        var blob: Data?
        var when: Date?
    }

    static let bodies = [
        #"{"text":"a"}"#,
        #"{"text":"a","flag":true,"count":3,"small":255,"ratio":1.5,"mode":"on"}"#,
        #"{"text":"a","flag":null,"count":null,"mode":null,"inner":null}"#,
        #"{}"#,
        #"{"text":null}"#,
        #"{"text":42}"#,
        #"{"text":["a"]}"#,
        #"{"text":{"a":1}}"#,
        #"{"text":"a","flag":"true"}"#,
        #"{"text":"a","flag":1}"#,
        #"{"text":"a","count":"3"}"#,
        #"{"text":"a","count":1.0}"#,
        #"{"text":"a","count":1e2}"#,
        #"{"text":"a","count":1.5}"#,
        #"{"text":"a","count":-0}"#,
        #"{"text":"a","count":9223372036854775808}"#,
        #"{"text":"a","small":256}"#,
        #"{"text":"a","small":-1}"#,
        #"{"text":"a","ratio":3}"#,
        #"{"text":"a","ratio":"1.5"}"#,
        #"{"text":"a","ratio":1e400}"#,
        #"{"text":"a","ratio":-1e400}"#,
        #"{"text":"a","weight":1.5}"#,
        #"{"text":"a","weight":1e300}"#,
        #"{"text":"a","link":"https://example.com/a?b=c"}"#,
        #"{"text":"a","link":""}"#,
        #"{"text":"a","link":5}"#,
        #"{"text":"a","blob":"aGVsbG8="}"#,
        #"{"text":"a","blob":"not base64!"}"#,
        #"{"text":"a","when":1700000000.5}"#,
        #"{"text":"a","when":"2023-01-01"}"#,
        #"{"text":"a","mode":"maybe"}"#,
        #"{"text":"a","mode":1}"#,
        #"{"text":"a","inner":{"name":"n","tags":["x","y"]}}"#,
        #"{"text":"a","inner":{"name":"n"}}"#,
        #"{"text":"a","inner":{"name":"n","tags":["x",2]}}"#,
        #"{"text":"a","inner":{"name":"n","tags":["x",null]}}"#,
        #"{"text":"a","inner":[]}"#,
        #"{"text":"a","list":[1,2,3]}"#,
        #"{"text":"a","list":[1,"2"]}"#,
        #"{"text":"a","list":{}}"#,
        #"{"text":"a","nested":[["a"],[],["b","c"]]}"#,
        #"{"text":"a","nested":[["a"],[1]]}"#,
        #"{"text":"a","map":{"x":1,"y":2}}"#,
        #"{"text":"a","map":{"x":"1"}}"#,
        #"{"text":"a","unknown":{"deep":[1,{"x":null}]}}"#,
        #"{"text":"caf\u00e9 \ud83d\ude00"}"#,
    ]

    @Test(arguments: bodies) func theSameAsJSONDecoder(body: String) throws {
        let expected = Self.comparable { try JSONDecoder().decode(Everything.self, from: Data(body.utf8)) }
        let value = try JSONReader.parseObject(Array(body.utf8))
        let actual = Self.comparable { try Everything(from: JSONValueDecoder(value)) }
        #expect(actual == expected, "body \(body)")
    }

    /// siwa's own request bodies, through the same comparison: the native sign-in, the Vapor tutorial's and the
    /// Rent Manager contract's (the one body with nested objects).
    @Test func theRequestBodies() throws {
        let bodies = [
            #"{"identityToken":"t","nonce":"n","givenName":"G","familyName":null}"#,
            #"{"authorizationCode":"x"}"#,
            #"{"identityToken":42}"#,
            #"{"identityToken":null}"#,
            #"{"appleIdentityToken":"t","firstName":"F","lastName":null}"#,
            #"{"appleIdentityToken":["t"]}"#,
            #"{"appleIdentityToken":"t","firstName":7}"#,
            #"{"identityToken":"t","user":{"name":{"firstName":"F","lastName":"L"},"email":"e@x"}}"#,
            #"{"identityToken":"t","user":{"name":null}}"#,
            #"{"identityToken":"t","user":{"name":"F L"}}"#,
            #"{"identityToken":"t","user":{"name":{"firstName":3}}}"#,
            #"{"identityToken":"t","user":[]}"#,
        ]
        for body in bodies {
            let value = try JSONReader.parseObject(Array(body.utf8))
            try Self.compare(SessionController.NativeSignInRequest.self, body, value)
            try Self.compare(VaporTutorialController.SignInBody.self, body, value)
            try Self.compare(RentManagerController.SignInBody.self, body, value)
        }
    }

    static func compare<T: Decodable>(_ type: T.Type, _ body: String, _ value: JSONValue) throws {
        let expected = outcome { try JSONDecoder().decode(T.self, from: Data(body.utf8)) }
        #expect(outcome { try T(from: JSONValueDecoder(value)) } == expected, "\(T.self), body \(body)")
    }

    /// A decoded value compared with `==` (a dictionary's description lists its keys in no fixed order: two equal
    /// maps can print differently), or the error as ``failure(_:)`` describes it.
    enum Outcome<Value: Equatable>: Equatable {
        case value(Value)
        case failure(String)
    }

    static func comparable<Value: Equatable>(_ decode: () throws -> Value) -> Outcome<Value> {
        do { return .value(try decode()) } catch { return .failure(failure(error)) }
    }

    /// A decoded value, or the error's case and coding path, as text to compare (for bodies without dictionaries).
    static func outcome(_ decode: () throws -> some Any) -> String {
        do { return "value \(try decode())" } catch { return failure(error) }
    }

    /// An error's case and coding path.
    static func failure(_ error: any Error) -> String {
        switch error {
        case let DecodingError.keyNotFound(key, context):
            return "keyNotFound \(path(context.codingPath + [key]))"
        case let DecodingError.typeMismatch(_, context):
            return "typeMismatch \(path(context.codingPath))"
        case let DecodingError.valueNotFound(_, context):
            return "valueNotFound \(path(context.codingPath))"
        case DecodingError.dataCorrupted:
            // A number out of range. `JSONDecoder` leaves its path empty, this decoder names the field; the client
            // is told `invalid_json` either way, without the path.
            return "dataCorrupted"
        default:
            return "other \(error)"
        }
    }

    static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }
}
