// swift-tools-version:6.0
// The peer of `Benchmarks/load/peers.sh`: the server the Vapor 4 Sign in with Apple tutorial has its readers write,
// built on its own (its own .build, never part of siwa's test build).
import PackageDescription

let package = Package(
    name: "vapor-tutorial-peer",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.3"),
        .package(url: "https://github.com/vapor/fluent.git", from: "4.13.0"),
        .package(url: "https://github.com/vapor/fluent-sqlite-driver.git", from: "4.9.0"),
        .package(url: "https://github.com/vapor/jwt.git", from: "5.2.0"),
    ],
    targets: [
        .executableTarget(
            name: "VaporTutorialPeer",
            dependencies: [
                .product(name: "Vapor", package: "vapor"),
                .product(name: "Fluent", package: "fluent"),
                .product(name: "FluentSQLiteDriver", package: "fluent-sqlite-driver"),
                .product(name: "JWT", package: "jwt"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        )
    ]
)
