// swift-tools-version: 6.1
//
// doccache — an offline-first document store in the Firestore model.
// Layout and layering: docs/architecture.md.

import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "doccache",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "DocProtocol", targets: ["DocProtocol"]),
        .library(name: "DocServer", targets: ["DocServer"]),
        .library(name: "LevelDB", targets: ["LevelDB"]),
        .library(name: "DocModel", targets: ["DocModel"]),
        .library(name: "DocRules", targets: ["DocRules"]),
        .library(name: "DocCache", targets: ["DocCache"]),
        .executable(name: "docbench", targets: ["docbench"]),
        .executable(name: "docctl", targets: ["docctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        // Already under Hummingbird; named for graceful shutdown (ServiceGroup) and bound addresses.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // The PostgreSQL store (DocServerPostgres only; the client and the LevelDB-only server never link it).
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // Already under jwt-kit; named for the attachments' SHA-256 (DocServer, DocCache).
        .package(url: "https://github.com/apple/swift-crypto.git", "4.1.0"..<"6.0.0"),
        // The server's metrics (GET /metrics, Prometheus text): DocServer only, never the client.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // The system libleveldb (Debian: libleveldb-dev, macOS: brew leveldb).
        .systemLibrary(
            name: "CLevelDB",
            providers: [.apt(["libleveldb-dev"]), .brew(["leveldb"])]
        ),
        // The options LevelDB's C API leaves out (reuse_logs), set through its C++ API; and a
        // CRC-32C on the processor's instruction for the log-reuse check.
        .target(
            name: "CLevelDBExtras",
            dependencies: ["CLevelDB"]
        ),
        // A small, Sendable Swift wrapper over the LevelDB C API.
        .target(
            name: "LevelDB",
            dependencies: ["CLevelDB", "CLevelDBExtras"],
            swiftSettings: strict
        ),
        // Values, paths, documents, mutations, queries and key encodings. No I/O.
        .target(
            name: "DocModel",
            swiftSettings: strict
        ),
        // The Firestore Security Rules language: lexer, parser, evaluator.
        .target(
            name: "DocRules",
            dependencies: ["DocModel"],
            swiftSettings: strict
        ),
        // Wire messages (Codable JSON frames), validation, error codes, protocol version.
        .target(
            name: "DocProtocol",
            dependencies: [
                "DocModel",
                // The existence filter's bloom-filter hashing (MD5), shared by client and server.
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // The reference backend: storage, exactly-once commits, watch fan-out, auth.
        .target(
            name: "DocServer",
            dependencies: [
                "DocModel", "DocProtocol", "DocRules", "LevelDB",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                // Already under hummingbird-websocket; named for writing encoded frames (ListenSession).
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                // Each core's own registry, served at /metrics; the factory is offered to embedders.
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // The backend's PostgreSQL store: several server instances on one database.
        .target(
            name: "DocServerPostgres",
            dependencies: [
                "DocModel", "DocServer",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // The client: persistence on LevelDB, local store, views, sync engine, remote store, API.
        .target(
            name: "DocCache",
            dependencies: [
                "DocModel", "DocProtocol", "LevelDB",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),

        // The command line: serve, token, documents, listen, requests, pending writes, rules.
        .executableTarget(
            name: "docctl",
            dependencies: [
                "DocCache", "DocModel", "DocProtocol", "DocRules", "DocServer", "DocServerPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // `docctl listen` ends cleanly on Ctrl-C (closes its store, removes its cache).
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // Shared by the test targets: the seeded random generator of property and fuzz tests.
        .target(
            name: "DocTestSupport",
            dependencies: ["DocModel", .product(name: "Logging", package: "swift-log")],
            path: "Tests/Support/DocTestSupport",
            swiftSettings: strict
        ),

        // Test traits shared by the test targets (`.cpuBound`); only the test targets link it,
        // since it imports Testing (docbench links DocTestSupport through PostgresTestSupport).
        .target(
            name: "DocTestTraits",
            path: "Tests/Support/DocTestTraits",
            swiftSettings: strict
        ),

        // A throwaway PostgreSQL cluster (temp dir, free port, run as `postgres` under root) for
        // the PostgreSQL store's tests, the integration tests and docbench. Foundation only.
        .target(
            name: "PostgresTestSupport",
            dependencies: ["DocTestSupport"],
            path: "Tests/Support/PostgresTestSupport",
            swiftSettings: strict
        ),

        // A child process for the LevelDB durability test: writes, reports, waits for SIGKILL.
        .executableTarget(
            name: "leveldb-crash-child",
            dependencies: ["LevelDB"],
            path: "Tests/Support/LevelDBCrashChild",
            swiftSettings: strict
        ),
        // A child process for the DocCache durability test: writes through the public API,
        // reports each accepted write, waits for SIGKILL.
        .executableTarget(
            name: "doccache-crash-child",
            dependencies: ["DocCache"],
            path: "Tests/Support/DocCacheCrashChild",
            swiftSettings: strict
        ),
        // The benchmark executable: `swift run -c release docbench SCENARIO [--n N]`.
        .executableTarget(
            name: "docbench",
            dependencies: [
                "DocCache", "DocModel", "DocProtocol", "DocRules", "DocServer", "DocServerPostgres", "LevelDB",
                // The PostgreSQL scenarios start a throwaway cluster of their own; the
                // attachment-upload bodies come from its seeded generator (SplitMix64).
                "PostgresTestSupport", "DocTestSupport",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                // The attachment-upload peer names its uploads by their SHA-256.
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/docbench",
            swiftSettings: strict
        ),
        .testTarget(
            name: "LevelDBTests",
            dependencies: ["DocTestSupport", "LevelDB", "leveldb-crash-child"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DocModelTests",
            dependencies: ["DocTestTraits", "DocTestSupport", "DocModel"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DocCacheTests",
            dependencies: ["DocTestTraits", "DocTestSupport", "DocCache", "DocModel", "DocProtocol", "LevelDB", "doccache-crash-child"],
            // Read by the spec-test runner from its source directory.
            exclude: ["SpecTests/known-failures.txt"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DocProtocolTests",
            dependencies: ["DocTestTraits", "DocTestSupport", "DocProtocol", "DocModel"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DocServerTests",
            dependencies: [
                "DocTestTraits", "DocTestSupport", "DocServer", "DocProtocol", "DocModel", "LevelDB",
                // The identity-provider tests sign RS256/ES256 tokens (their JWKS is served by
                // LoopbackHTTPServer, on threads of its own).
                .product(name: "JWTKit", package: "jwt-kit"),
                // The encoded frames (OutboundFrame's ByteBuffer) in the fan-out tests.
                .product(name: "NIOCore", package: "swift-nio"),
                // The outbox pumps on an EmbeddedChannel, whose event loop runs queued tasks
                // only when told to.
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // Client and server on loopback: real sockets, real processes.
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "DocTestSupport", "DocCache", "DocServer", "DocServerPostgres", "DocProtocol", "DocModel", "DocRules", "docctl",
                // Throwaway PostgreSQL clusters for the several-instances tests.
                "PostgresTestSupport",
                // Built next to the test binary: the client SIGKILLed mid-sync (ClientCrashTests).
                "doccache-crash-child",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                // `docctl serve --jwks` against tokens an identity provider's key signed.
                .product(name: "JWTKit", package: "jwt-kit"),
                // Event loops of a server's own, shut down when it stops (LiveServer).
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // The client against the real server core in the same process: sync, exactly once,
        // reconnects, resume, auth (only the socket is skipped; see Tests/SyncTests).
        .testTarget(
            name: "SyncTests",
            dependencies: [
                "DocCache", "DocServer", "DocProtocol", "DocModel", "DocTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The PostgreSQL store alone: schema versions, racing instances, notices, faults.
        .testTarget(
            name: "DocServerPostgresTests",
            dependencies: ["DocServerPostgres", "DocServer", "DocModel", "DocProtocol", "DocTestSupport", "PostgresTestSupport",
                           .product(name: "NIOCore", package: "swift-nio"), .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        // The ServerStore/TenantStore contract, one suite run against every store.
        .testTarget(
            name: "ServerStoreContractTests",
            dependencies: ["DocServer", "DocServerPostgres", "DocModel", "DocTestSupport", "PostgresTestSupport",
                           // The blob store contract's chunks.
                           .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DocRulesTests",
            dependencies: ["DocTestTraits", "DocTestSupport", "DocRules", "DocModel"],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
