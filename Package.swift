// swift-tools-version:6.1
import PackageDescription

// Settings applied to every Swift target in one loop at the bottom, so no target is left out.
var swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    // A bare `import` is internal: a module's dependencies become part of its API only through `public import`.
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Silo",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "silo", targets: ["SiloMain"]),
        .library(name: "SiloCore", targets: ["SiloCore"]),
        .library(name: "SiloWire", targets: ["SiloWire"]),
        .library(name: "SiloServer", targets: ["SiloServer"]),
        .library(name: "SiloServerKit", targets: ["SiloServerKit"]),
        .library(name: "SiloTesting", targets: ["SiloTesting"]),
        .library(name: "SiloStorage", targets: ["SiloStorage"]),
        .library(name: "SiloStorageUI", targets: ["SiloStorageUI"]),
        .library(name: "SiloRules", targets: ["SiloRules"]),
        .library(name: "SiloCLI", targets: ["SiloCLI"]),
    ],
    targets: [
        // C libraries from Debian packages, one system-library target each.
        .systemLibrary(name: "CSQLite3", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CISAL", pkgConfig: "libisal", providers: [.apt(["libisal-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // libvips' headers, with GObject's include paths (its own pkg-config file, `vips`, pulls OpenEXR's and gio's
        // `-pthread`, which SwiftPM refuses with a warning on every build). libvips itself is opened at run time by
        // SiloImages (Sources/CVips/shim.h says why), so only glib and GObject are linked.
        .systemLibrary(name: "CVips", pkgConfig: "gobject-2.0", providers: [.apt(["libvips-dev"])]),
        // sync_file_range from libc, which Swift's Glibc module leaves out (Linux only; SiloDisk's).
        .systemLibrary(name: "CFileSync"),
        // epoll, eventfd and sendfile from libc's headers, which Swift's Glibc module leaves out (Linux only;
        // SiloEpollHTTP's).
        .systemLibrary(name: "CLinux"),
        // Silo's own C: MD5 written for its dependency chain, with CRC-32C in the same pass (SiloHashing's).
        .target(name: "CMD5"),

        // Vocabulary: no C, no I/O beyond Foundation.
        .target(name: "SiloCore"),
        .target(name: "SiloWire", dependencies: ["SiloCore"]),
        .target(name: "SiloHTTP", dependencies: ["SiloCore"]),

        // Security Rules language: pure (no I/O, no C); SiloWire only for decoding token claims.
        .target(name: "SiloRules", dependencies: ["SiloCore", "SiloWire"]),

        // Wrappers around C libraries; each C module is imported by exactly one of these.
        .target(name: "SiloHashing", dependencies: ["SiloCore", "CCrypto", "CISAL", "CMD5", "CZlib"]),
        // TLS for the epoll transport: server contexts, certificate loading and reload, per-connection sessions
        // (libssl; Linux only, as the transport).
        .target(
            name: "SiloTLS",
            dependencies: ["SiloCore", "SiloHashing", .target(name: "COpenSSL", condition: .when(platforms: [.linux]))]
        ),
        // The HTTP transport: HTTP/1.1 (and HTTPS through SiloTLS) on epoll, written for Silo; Linux only, and so is
        // `silo serve` (docs/transport.md says why there is no second one).
        .target(
            name: "SiloEpollHTTP",
            dependencies: [
                "SiloHTTP", "SiloCore", "SiloTLS",
                .target(name: "CLinux", condition: .when(platforms: [.linux])),
            ]
        ),
        // Thumbnails on libvips: SiloCore's ImageTransformer, every libvips handle owned here.
        .target(name: "SiloImages", dependencies: ["SiloCore", "CVips"]),
        // An HTTP client on libcurl easy handles, independent of the SDK (the SDK's Linux data path).
        .target(name: "SiloCurl", dependencies: ["SiloCore", "CCurl"]),

        // Backends.
        // SiloWire for its JSON parser/writer: object rows hold small JSON values (see StoredFieldJSON.swift).
        .target(name: "SiloSQLite", dependencies: ["SiloCore", "SiloWire", "CSQLite3"]),
        .target(
            name: "SiloDisk",
            dependencies: ["SiloCore", .target(name: "CFileSync", condition: .when(platforms: [.linux]))]
        ),
        // The metadata store on PostgreSQL through libpq; SiloWire for the JSON of object rows, as SiloSQLite.
        .target(name: "SiloPostgres", dependencies: ["SiloCore", "SiloWire", "CLibPQ"]),
        // AWS Signature V4, pure Swift: the caller supplies SHA-256 and HMAC, so it needs no C and no other target.
        .target(name: "SiloS3Signer"),
        // BlobStore on any S3-compatible endpoint: libcurl through SiloCurl, hashes from SiloHashing.
        .target(name: "SiloS3", dependencies: ["SiloCore", "SiloWire", "SiloS3Signer", "SiloCurl", "SiloHashing"]),

        // Token verification and admin keys; crypto comes from SiloHashing, so no C import here.
        .target(name: "SiloAuth", dependencies: ["SiloCore", "SiloWire", "SiloHashing"]),

        // The server's kit: protocols and semantics, no backend and no API of its own. The pipeline and its stages
        // (authentication, served bucket, GCS IAM and ACL access, CORS, observation), the route table and the
        // route-group protocol each API implements, and the services every API shares: objects, uploads, downloads,
        // thumbnails, maintenance. SiloAuth for the service accounts, signed URLs and HMAC keys the server checks;
        // which verifier turns headers into principals is still the caller's choice (`credentials:`). SiloRules
        // (pure) for Security Rules decisions and the console's rules playground.
        .target(
            name: "SiloServerKit",
            dependencies: ["SiloCore", "SiloWire", "SiloHTTP", "SiloHashing", "SiloAuth", "SiloRules"],
            // docs/openapi.json compiled in (EmbeddedOpenAPI): one binary, no bundle.
            plugins: ["EmbedFiles"]
        ),
        // The APIs, each on the kit alone: an API target never imports another.
        // Firebase Storage's v0 REST API, with the emulator's control endpoints (`/internal/…`).
        .target(
            name: "SiloFirebaseAPI",
            dependencies: ["SiloServerKit", "SiloCore", "SiloWire", "SiloHTTP", "SiloAuth", "SiloRules"]
        ),
        // Google Cloud Storage: the JSON API (with its batch endpoint and HMAC keys) and the XML API, one target
        // because both render one resource model (object and bucket resources, ACLs, preconditions, upload sessions).
        .target(
            name: "SiloGCSAPI",
            dependencies: ["SiloServerKit", "SiloCore", "SiloWire", "SiloHTTP", "SiloHashing", "SiloAuth"]
        ),
        // The web console's files and its admin API (`/console/…`); console/ compiled in (EmbeddedConsole).
        .target(
            name: "SiloConsole",
            dependencies: [
                "SiloServerKit", "SiloCore", "SiloWire", "SiloHTTP", "SiloHashing", "SiloAuth", "SiloRules",
            ],
            plugins: ["EmbedFiles"]
        ),
        // Thumbnails: `thumbnail=` reads, their caches and preset jobs (the transform is SiloImages', on libvips).
        .target(
            name: "SiloThumbnails", dependencies: ["SiloServerKit", "SiloCore", "SiloHTTP", "SiloWire", "SiloHashing"]),
        // `--test-faults`: the retry-conformance test API that injects failures (`/retry_test`), for test runs only.
        .target(name: "SiloTestFaults", dependencies: ["SiloServerKit", "SiloCore", "SiloWire", "SiloHTTP"]),
        // The server as it ships: the kit with every API's route group. The executable and the test server both
        // serve exactly this set, so it is composed once, here.
        .target(
            name: "SiloServer",
            dependencies: [
                "SiloServerKit", "SiloFirebaseAPI", "SiloGCSAPI", "SiloConsole", "SiloThumbnails", "SiloCore",
                "SiloHTTP",
            ]
        ),
        // The build-time embedding of files into the server: a tool, and the plugin that runs it. In no product.
        .executableTarget(name: "SiloEmbed"),
        .plugin(name: "EmbedFiles", capability: .buildTool(), dependencies: ["SiloEmbed"]),
        // Storage events from a metadata store's outbox to webhooks (CloudEvents over HTTP, libcurl through SiloCurl).
        .target(name: "SiloEvents", dependencies: ["SiloCore", "SiloWire", "SiloCurl", "SiloHashing"]),

        // The only composition root.
        .executableTarget(
            name: "SiloMain",
            dependencies: [
                "SiloServer", "SiloServerKit", "SiloTestFaults", "SiloEpollHTTP", "SiloSQLite", "SiloPostgres",
                "SiloS3",
                "SiloDisk",
                "SiloCore", "SiloEvents",
                "SiloHTTP",
                "SiloAuth", "SiloRules", "SiloCLI", "SiloImages",
                .target(name: "SiloTLS", condition: .when(platforms: [.linux])),
            ]
        ),

        // The SDK: FirebaseStorage's Swift API. On Linux its data path is libcurl (through SiloCurl); on Apple
        // platforms it needs no C module and uses URLSession.
        .target(
            name: "SiloStorage",
            dependencies: ["SiloWire", "SiloCore", .target(name: "SiloCurl", condition: .when(platforms: [.linux]))]
        ),

        // Image loading for apps on the SDK (FirebaseUI's part): a platform-neutral loader and caches, plus thin
        // UIKit/AppKit/SwiftUI glue compiled only where those exist.
        .target(name: "SiloStorageUI", dependencies: ["SiloStorage"]),

        // The command line's parser and client commands, on the SDK; `serve` itself stays in SiloMain.
        .target(name: "SiloCLI", dependencies: ["SiloStorage", "SiloWire", "SiloRules", "SiloAuth"]),

        // A live test server on the stores its caller passes, and a raw HTTP client; it chooses no backend.
        .target(
            name: "SiloTesting",
            dependencies: [
                "SiloServer", "SiloServerKit", "SiloTestFaults", "SiloEpollHTTP", "SiloTLS",
                "SiloCore",
                "SiloHTTP", "SiloAuth", "SiloWire", "SiloHashing",
            ]
        ),
        // The stores this repository's suites run their test servers on (`make pairs` switches them); test support,
        // in no product.
        .target(
            name: "SiloTestStores",
            dependencies: [
                "SiloTesting", "SiloServer", "SiloServerKit", "SiloCore", "SiloAuth", "SiloSQLite", "SiloPostgres",
                "SiloS3", "SiloDisk",
            ],
            path: "Tests/SiloTestStores"
        ),

        // Benchmark client for bench/sdk-download.sh; not part of any test run.
        .executableTarget(name: "SiloBenchSDK", dependencies: ["SiloStorage"]),
        // The seed guides' Swift samples as top-level code (script style, as in an app's main.swift): building it is
        // the check that they compile unchanged; SiloStorageTests runs it against a live server. Not shipped.
        .executableTarget(name: "SiloSeedSamples", dependencies: ["SiloStorage"]),
        // Seeding tool for bench/run's 1M-object listing benchmark (clones one row in SQL); not part of any test run.
        .executableTarget(name: "SiloBenchSeed", dependencies: ["SiloSQLite"]),

        .testTarget(name: "SiloCoreTests", dependencies: ["SiloCore"]),
        .testTarget(
            name: "SiloEventsTests",
            dependencies: ["SiloEvents", "SiloCore", "SiloHashing", "SiloHTTP", "SiloEpollHTTP"]
        ),
        .testTarget(name: "SiloWireTests", dependencies: ["SiloWire", "SiloCore"]),
        .testTarget(
            name: "SiloRulesTests",
            dependencies: [
                "SiloRules", "SiloCore", "SiloWire", "SiloTesting", "SiloTestStores", "SiloAuth", "SiloHashing",
                "SiloHTTP", "SiloServer", "SiloServerKit",
            ]
        ),
        .testTarget(
            name: "SiloAuthTests", dependencies: ["SiloAuth", "SiloCore", "SiloWire", "SiloHashing", "SiloTesting"]),
        .testTarget(
            name: "SiloStoreTests",
            dependencies: [
                "SiloCore", "SiloSQLite", "SiloPostgres", "SiloDisk", "SiloS3", "SiloHashing", "SiloTesting",
            ]
        ),
        .testTarget(name: "SiloTLSTests", dependencies: ["SiloTLS", "SiloCore", "SiloTesting"]),
        .testTarget(name: "SiloS3SignerTests", dependencies: ["SiloS3Signer", "SiloHashing"]),
        .testTarget(
            name: "SiloS3Tests", dependencies: ["SiloS3", "SiloS3Signer", "SiloCore", "SiloHashing", "SiloWire"]),
        .testTarget(
            name: "SiloHTTPTransportTests",
            dependencies: ["SiloEpollHTTP", "SiloHTTP", "SiloCore", "SiloTesting", "SiloTLS"]
        ),
        .testTarget(
            name: "SiloServerTests",
            dependencies: [
                "SiloServer", "SiloServerKit", "SiloFirebaseAPI", "SiloGCSAPI", "SiloConsole", "SiloTestFaults",
                "SiloThumbnails",
                "SiloTesting", "SiloTestStores", "SiloCore", "SiloWire", "SiloHTTP", "SiloHashing",
                "SiloDisk", "SiloSQLite", "SiloPostgres", "SiloAuth", "SiloRules",
            ]
        ),
        .testTarget(
            name: "SiloImagesTests",
            dependencies: [
                "SiloImages", "SiloServer", "SiloServerKit", "SiloTesting", "SiloTestStores", "SiloCore", "SiloHTTP",
                "SiloAuth",
                "SiloRules",
                "SiloWire",
            ]
        ),
        .testTarget(name: "SiloCurlTests", dependencies: ["SiloCurl", "SiloTesting", "SiloTestStores"]),
        .testTarget(
            name: "SiloCLITests",
            dependencies: [
                "SiloCLI", "SiloTesting", "SiloTestStores", "SiloStorage", "SiloWire", "SiloCore", "SiloHTTP",
            ],
            exclude: ["Snapshots"]
        ),
        .testTarget(
            name: "SiloStorageUITests",
            // SiloImages and SiloServer: the live server makes real thumbnails, as `silo serve --images` does.
            dependencies: [
                "SiloStorageUI", "SiloStorage", "SiloTesting", "SiloTestStores", "SiloCore", "SiloImages", "SiloServer",
                "SiloServerKit",
            ]
        ),
        .testTarget(
            name: "SiloStorageTests",
            // SiloRules: FirebaseIntegrationTests load the rules of Firebase's own test project into the server.
            dependencies: ["SiloStorage", "SiloTesting", "SiloTestStores", "SiloWire", "SiloCore", "SiloRules"],
            exclude: ["README.md"]
        ),
    ]
)

for target in package.targets where target.type != .system && target.type != .plugin {
    target.swiftSettings = (target.swiftSettings ?? []) + swiftSettings
}
