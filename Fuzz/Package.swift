// swift-tools-version:6.1
import PackageDescription

// The libFuzzer target lives in its own package so that the main build and CI never compile it with
// `-sanitize=fuzzer`. Run it with `scripts/fuzz` from the repository root.
let package = Package(
    name: "siwa-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "siwa", path: "..")
    ],
    targets: [
        .executableTarget(
            name: "siwa-fuzz",
            dependencies: [.product(name: "AppleSignIn", package: "siwa")],
            path: "Sources/SiwaFuzz"
        )
    ]
)
