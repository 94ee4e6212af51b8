import AppleSignInClient
import AuthenticationServices
import SwiftUI

/// A minimal sign-in screen: Sign in with Apple, then siwa's account, then sign-out.
///
/// Not built by Package.swift: add this file to an iOS 18 / macOS 15 app target that has the "Sign in with Apple"
/// capability and depends on the `AppleSignInClient` product.
struct SignInView: View {
    let client: SiwaClient
    @State private var nonce = SignInNonce()
    @State private var user: User?
    @State private var problem: String?

    var body: some View {
        VStack(spacing: 16) {
            if let user {
                Text("Hello, \(user.displayName ?? "there")")
                Button("Sign out") {
                    Task {
                        try? await client.signOut()
                        self.user = nil
                    }
                }
            } else {
                SignInWithAppleButton(.signIn) { request in
                    nonce = SignInNonce()  // a new one for every request
                    request.requestedScopes = [.fullName, .email]
                    request.nonce = nonce.hashed
                } onCompletion: { result in
                    Task { await finish(result) }
                }
                .frame(height: 48)
            }
            if let problem { Text(problem).foregroundStyle(.red) }
        }
        .padding()
        .task { user = try? await client.currentUser() }  // a stored session from an earlier launch
    }

    private func finish(_ result: Result<ASAuthorization, any Error>) async {
        switch result {
        case .failure(let error):
            problem = error.localizedDescription
        case .success(let authorization):
            guard let credential = authorization.credential as? ASAuthorizationAppleIDCredential else { return }
            do {
                let session = try await client.signIn(
                    identityToken: credential.identityToken,
                    authorizationCode: credential.authorizationCode,
                    fullName: credential.fullName,
                    email: credential.email,
                    nonce: nonce.raw
                )
                user = session.user
                problem = nil
            } catch let error as SiwaClientError {
                problem = error.serverMessage ?? error.reason
            } catch {
                problem = error.localizedDescription
            }
        }
    }
}

/// The app: one client for the app's lifetime, its session in the Keychain.
@main
struct SiwaExampleApp: App {
    private let client = SiwaClient(
        baseURL: URL(string: "http://localhost:8080")!,
        tokenStore: KeychainTokenStore(service: Bundle.main.bundleIdentifier ?? "com.example.app")
    )

    var body: some Scene {
        WindowGroup { SignInView(client: client) }
    }
}
