// swift-tools-version:6.1
import PackageDescription

// Benchmarks live in their own package so that the main package's tests never build jwt-kit (the comparison baseline).
// Run from this folder: `swift run -c release siwa-benchmarks` (pin to one core with `taskset -c 0`).
let package = Package(
    name: "siwa-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "siwa", path: ".."),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
    ],
    targets: [
        .executableTarget(
            name: "siwa-benchmarks",
            dependencies: [
                .product(name: "AppleSignIn", package: "siwa"),
                .product(name: "SiwaTesting", package: "siwa"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        )
    ]
)
