// swift-tools-version:6.0
// The floor of Benchmarks/load/peers.sh: the work a returning-user sign-in and a refresh cannot avoid, measured on one
// core. A package of its own (Debian's libsqlite3 through a system library; never part of siwa's test build).
import PackageDescription

let package = Package(
    name: "siwa-floor",
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2")
    ],
    targets: [
        .systemLibrary(name: "CSQLite3", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .executableTarget(
            name: "siwa-floor",
            dependencies: [
                "CSQLite3",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            // Top-level code on one thread, by design: the Swift 5 mode keeps it free of actor annotations.
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
