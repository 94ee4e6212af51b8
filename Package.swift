// swift-tools-version:6.2
import PackageDescription

/// Settings every target shares (see `../shared/STYLE.md`): Swift 6 language mode plus the upcoming features that
/// hummingbird 2 and jwt-kit 5 turn on, so that imports are explicit and existentials are spelled out.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    // A fresh build prints no warning of siwa's own, and keeps it so.
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "siwa",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "siwa", targets: ["siwa"]),
        .library(name: "AppleSignIn", targets: ["AppleSignIn"]),
        .library(name: "AppleSignInAsyncHTTPClient", targets: ["AppleSignInAsyncHTTPClient"]),
        .library(name: "AccountStore", targets: ["AccountStore"]),
        .library(name: "AccountStoreSQL", targets: ["AccountStoreSQL"]),
        .library(name: "AuthServer", targets: ["AuthServer"]),
        .library(name: "AppleIDEmulator", targets: ["AppleIDEmulator"]),
        .library(name: "AppleSignInClient", targets: ["AppleSignInClient"]),
        .library(name: "SiwaTesting", targets: ["SiwaTesting"]),
        .library(name: "SiwaTokenVerifier", targets: ["SiwaTokenVerifier"]),
        .library(name: "SiwaTokenVerifierAsyncHTTPClient", targets: ["SiwaTokenVerifierAsyncHTTPClient"]),
        .library(name: "SiwaTokenVerifierHummingbird", targets: ["SiwaTokenVerifierHummingbird"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/sql-kit.git", from: "3.36.0"),
        .package(url: "https://github.com/vapor/sqlite-kit.git", from: "4.5.2"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-kit.git", from: "2.17.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: [.defaults, "YAML"]),
        // The configuration file's YAML keys, to refuse a misspelt one (swift-configuration reads its values with it).
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // The tracing API (Hummingbird builds it already); the exporter below is for `siwa serve` alone.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        // OTLP over HTTP only: the gRPC trait would build grpc-swift and its HTTP/2 transport for nothing.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // Builds the libraries' DocC documentation (`scripts/docs`).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Apple's protocol: no I/O framework, no database, no server. Other Swift servers can use it alone.
        .target(
            name: "AppleSignIn",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The live `HTTPTransport` on async-http-client.
        .target(
            name: "AppleSignInAsyncHTTPClient",
            dependencies: [
                "AppleSignIn",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Storage protocol and the in-memory implementation (grows with the server issue).
        .target(name: "AccountStore", dependencies: ["AppleSignIn"], swiftSettings: swiftSettings),
        // SQLite's C API from the copy SQLiteNIO links (declarations only; see its header), for the SQLite writer.
        .target(name: "SiwaSQLite3"),
        // SQL store over SQLKit: SQLite and PostgreSQL (grows with the server issue).
        .target(
            name: "AccountStoreSQL",
            dependencies: [
                "AccountStore",
                "AppleSignIn",
                "SiwaSQLite3",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresKit", package: "postgres-kit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The Hummingbird 2 application (grows with the server issue).
        .target(
            name: "AuthServer",
            dependencies: [
                "AppleSignIn",
                "AccountStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // Local stand-in for appleid.apple.com. Deliberately does not import AppleSignIn (DESIGN.md).
        .target(
            name: "AppleIDEmulator",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The Swift client for apps: Foundation only.
        .target(name: "AppleSignInClient", swiftSettings: swiftSettings),
        // For the team's other Swift services: verify siwa's access tokens from the issuer URL (discovery, key set
        // cache, claims). No server framework and no HTTP client in the core; the live transport and the Hummingbird
        // authenticator are products of their own.
        .target(
            name: "SiwaTokenVerifier",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "SiwaTokenVerifierAsyncHTTPClient",
            dependencies: [
                "SiwaTokenVerifier",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "SiwaTokenVerifierHummingbird",
            dependencies: [
                "SiwaTokenVerifier",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Composition root and commands.
        .target(
            name: "SiwaCLI",
            dependencies: [
                "AccountStore",
                "AccountStoreSQL",
                "AppleSignIn",
                "AppleSignInAsyncHTTPClient",
                "AppleIDEmulator",
                "AuthServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(name: "siwa", dependencies: ["SiwaCLI"], swiftSettings: swiftSettings),
        // The CPU benchmarks (`swift run -c release siwa-benchmarks`): in this package, so that the test command's
        // build compiles them with everything else instead of a second copy of every dependency. jwt-kit, the
        // comparison baseline, is already here for the emulator.
        .executableTarget(
            name: "siwa-benchmarks",
            dependencies: [
                "AccountStore",
                "AccountStoreSQL",
                "AppleSignIn",
                "SiwaTesting",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            path: "Benchmarks/Sources/siwa-benchmarks"
        ),
        // The console's store calls on a large store (`Benchmarks/load/search-scale.sh`).
        .executableTarget(
            name: "siwa-search-benchmark",
            dependencies: [
                "AccountStore",
                "AccountStoreSQL",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/Sources/siwa-search-benchmark",
            swiftSettings: swiftSettings
        ),
        // Shared test support: clocks, generated keys that play Apple, stub transports, the real Apple fixtures.
        .target(
            name: "SiwaTesting",
            dependencies: [
                "AccountStore",
                "AppleSignIn",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AppleSignInTests",
            dependencies: [
                "AppleSignIn",
                "SiwaTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SiwaTokenVerifierTests",
            dependencies: [
                "SiwaTokenVerifier",
                "SiwaTokenVerifierAsyncHTTPClient",
                "SiwaTokenVerifierHummingbird",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AppleSignInAsyncHTTPClientTests",
            dependencies: [
                "AppleSignIn",
                "AppleSignInAsyncHTTPClient",
                "SiwaTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AppleIDEmulatorTests",
            dependencies: [
                "AppleIDEmulator",
                "AppleSignIn",
                "AppleSignInAsyncHTTPClient",
                "SiwaCLI",
                "SiwaTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AuthServerTests",
            dependencies: [
                "AccountStore",
                "AccountStoreSQL",
                "AppleIDEmulator",
                "AppleSignIn",
                "AppleSignInAsyncHTTPClient",
                "AuthServer",
                "SiwaCLI",
                "SiwaTesting",
                "SiwaTokenVerifier",
                "SiwaTokenVerifierAsyncHTTPClient",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            exclude: ["Python"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AccountStoreTests",
            dependencies: ["AccountStore", "SiwaTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AccountStoreSQLTests",
            dependencies: [
                "AccountStore",
                "AccountStoreSQL",
                "AppleSignIn",
                "SiwaTesting",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AppleSignInClientTests",
            dependencies: [
                "AccountStore",
                "AppleIDEmulator",
                "AppleSignIn",
                "AppleSignInAsyncHTTPClient",
                "AppleSignInClient",
                "AuthServer",
                "SiwaTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SiwaCLITests",
            dependencies: [
                "AccountStore",
                "AccountStoreSQL",
                "AppleIDEmulator",
                "AppleSignIn",
                "AuthServer",
                "SiwaCLI",
                "SiwaTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            exclude: ["Python"],
            swiftSettings: swiftSettings
        ),
    ]
)
