import Foundation
import Testing

@testable import AuthServer

/// The Vapor tutorial's answers are written directly; they must be the documents `JSONEncoder` writes.
@Suite("Server: the Vapor tutorial's answers")
struct VaporTutorialAnswerTests {
    /// The tutorial's own shapes, as its server encodes them.
    struct TutorialUser: Encodable {
        var id: String
        var email: String?
        var firstName: String?
        var lastName: String?
    }
    struct TutorialSignIn: Encodable {
        var accessToken: String
        var user: TutorialUser
    }

    static let users: [TutorialUser] = [
        TutorialUser(
            id: "0193a1b2-0000-7000-8000-000000000001",
            email: "tim@example.com",
            firstName: "Tim",
            lastName: "Cook"
        ),
        TutorialUser(id: "u", email: nil, firstName: nil, lastName: nil),
        TutorialUser(id: "u", email: "a\"b\\c\u{1}/@example.com", firstName: "Zoë\n\t", lastName: nil),
        TutorialUser(id: "u", email: nil, firstName: "", lastName: "O\"Neil 🍎"),
        TutorialUser(id: "\r\u{8}\u{C}\u{7F}", email: "\u{2028}\u{2029}\u{0}", firstName: "\\\\", lastName: "\u{1F}"),
    ]

    @Test(arguments: users)
    func sameDocumentsAsJSONEncoder(user: TutorialUser) throws {
        let body = VaporTutorialController.UserBody(
            id: user.id,
            email: user.email,
            firstName: user.firstName,
            lastName: user.lastName
        )
        let written = try JSONSerialization.jsonObject(with: Data(body.json)) as? NSDictionary
        let expected = try JSONSerialization.jsonObject(with: JSONEncoder().encode(user)) as? NSDictionary
        #expect(written != nil)
        #expect(written == expected)

        let answer = VaporTutorialController.SignInAnswer(accessToken: "vt.abc-_1", user: body)
        let writtenAnswer = try JSONSerialization.jsonObject(with: Data(answer.json)) as? NSDictionary
        let expectedAnswer =
            try JSONSerialization.jsonObject(
                with: JSONEncoder().encode(TutorialSignIn(accessToken: "vt.abc-_1", user: user))
            ) as? NSDictionary
        #expect(writtenAnswer != nil)
        #expect(writtenAnswer == expectedAnswer)
    }
}
