// swift-tools-version: 6.1
//
// grdb-peer — the GRDB/SQLite peer for doccache's benchmarks (issue 22).
// A separate package so that the main build and CI never compile GRDB;
// `make bench-peers` builds and runs it. See docs/performance.md, "The GRDB peer".

import PackageDescription

let package = Package(
    name: "grdb-peer",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
    ],
    targets: [
        .executableTarget(
            name: "grdb-peer",
            dependencies: [.product(name: "GRDB", package: "GRDB.swift")],
            path: "Sources/grdb-peer",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
