import Foundation
import SiloAuth
import SiloCLI
import SiloCore
import SiloEvents
import SiloHTTP
import SiloServer
import SiloServerKit

/// The options of `silo serve`, resolved from flags, then `SILO_*` environment variables, then the config file.
struct ServeOptions {
    var host = "127.0.0.1"
    var port = 9199
    var dataDirectory = "./silo-data"
    var buckets: [BucketName] = []
    var insecureAllowAll = false
    /// `sqlite:PATH` (default `sqlite:<data>/metadata.sqlite`) or `postgres://…`.
    var metadataURL: String?
    /// `file:PATH` (default `file:<data>/blobs`) or `s3://bucket?endpoint=…&region=…`.
    var blobsURL: String?
    /// `--rules FILE` (every bucket) and `--rules BUCKET=FILE` (one bucket), repeatable; else firebase.json's.
    var rules: [RulesFile] = []
    /// The firebase.json read (`--firebase-json`, or `./firebase.json` found), and whether it was found.
    var firebaseJSON: String?
    var firebaseJSONDetected = false
    /// `--images FILE`: thumbnail settings (buckets, sizes, presets, limits; docs/images.md).
    var imagesFile: String?
    var emulator = false
    var authKeysFile: String?
    var authSecretFile: String?
    var adminKeyFile: String?
    /// `--service-account FILE`, repeatable: Google service account keys (JSON).
    var serviceAccountFiles: [String] = []
    /// `--signed-url-host HOST`, repeatable; `storage.googleapis.com` when none is given.
    var signedURLHosts: [String] = []
    /// `--public-url URL`, repeatable: where clients reach the server besides its listening address.
    var publicURLs: [PublicURL] = []
    /// `--trusted-proxies CIDR`, repeatable (or comma-separated): peers whose `X-Forwarded-*` are believed.
    var trustedProxies: [PeerNetwork] = []
    var project: String?
    /// `--threads N`: event loops; nil: one per CPU this process may run on.
    var threads: Int?
    /// `--workers N`: threads for handler calls that block (the event loops are `--threads`).
    var workers = 16
    /// `--inline-limit BYTES`: objects up to this size keep their bytes in the metadata store (0: none do).
    var inlineLimit = Backends.defaultInlineLimit
    var drainSeconds = 30.0
    var importDirectory: String?
    var exportOnExit = false
    var printConfig = false
    /// storage-testbench's Retry Test API and its faults (docs/test-faults.md); loopback addresses only.
    var testFaults = false
    /// Whether a v0 upload creates a bucket that does not exist; nil: in emulator mode only.
    var createBucketsOnUpload: Bool?
    /// Host suffixes of the XML API's virtual-host style (`{bucket}.{suffix}`), empty for `none`; nil: the
    /// server's defaults.
    var virtualHostSuffixes: [String]?
    /// Storage events (docs/events.md): where to, signed with the key in `eventSecretFile`.
    var eventWebhooks: [WebhookTarget] = []
    var eventSecretFile: String?
    var eventTimeoutSeconds = 10
    var eventConcurrency = 4
    var eventRetentionSeconds = 7 * 86_400
    /// `--garbage-grace S`: how long an unreferenced blob stays before a maintenance pass deletes it.
    var garbageGraceSeconds = 86_400
    /// `--maintenance-interval S`: how often the maintenance pass runs.
    var maintenanceIntervalSeconds = 300
    /// Limits; each is a `silo serve` flag with the default documented in the README.
    var limits = Limits()
    /// The server log's threshold (`--log-level`).
    var logLevel = Logger.Level.info
    /// `--access-log`: nil for `off` (the default), else where the JSON lines go.
    var accessLog: AccessLog.Destination?
    /// `--tls-cert` / `--tls-key`: serve HTTPS with this PEM certificate chain and key (epoll engine; docs/tls.md).
    var tls: (certificate: String, key: String)?

    struct Limits {
        var maxObjectSize: Int64 = 5 << 40
        var maxConnections = 1024
        var maxConnectionsPerClient = 256
        var idleTimeoutSeconds = 60
        var headTimeoutSeconds = 20
        var maxHeadBytes = 64 << 10
        var maxJSONBodyBytes = 1 << 20
        var maxSessionsPerCaller = 1000
        var maxPendingBytesPerCaller: Int64 = 64 << 30
        var maxInflatedBytesPerCaller: Int64 = 1 << 30
    }

    /// Every option, with its environment variable `SILO_<NAME>` and config-file key `<name>`.
    static let definitions: [OptionDefinition] =
        ([
            .value("host", valueName: "ADDRESS", help: "address to bind", defaultValue: "127.0.0.1"),
            .value(
                "port", valueName: "N", help: "port to bind (9199 is the Firebase emulator's; 0 picks a free one)",
                defaultValue: "9199"),
            .value("data", valueName: "DIR", help: "where metadata and blobs live", defaultValue: "./silo-data"),
            .repeating(
                "bucket", valueName: "NAME",
                help:
                    "serve only this bucket; without it any bucket name is served (and created on first upload in emulator mode, as the Firebase emulator does)"
            ),
            .value(
                "metadata", valueName: "URL",
                help:
                    "metadata store: sqlite:PATH (default sqlite:DIR/metadata.sqlite) or postgres://user:pass@host:port/db (nodes can share one)"
            ),
            .value(
                "blobs", valueName: "URL",
                help:
                    "blob store: file:PATH (default file:DIR/blobs) or s3://bucket?endpoint=URL&region=R (credentials from AWS_* variables)"
            ),
            .repeating(
                "rules", valueName: "[BUCKET=]FILE",
                help:
                    "enforce these Firebase Security Rules, for every bucket or, as BUCKET=FILE (repeatable), for one (reloaded on SIGHUP and when a file changes; rules that fail to compile keep the old ones)"
            ),
            .value(
                "firebase-json", valueName: "PATH",
                help:
                    "read storage rules (and deploy targets from .firebaserc beside it), emulators.storage.host/port and the default project from this firebase.json (default: ./firebase.json when there is one); flags win"
            ),
            .value(
                "images", valueName: "FILE",
                help: "thumbnails: JSON settings naming the buckets, sizes, presets and limits (docs/images.md)"),
            .flag(
                "emulator",
                help:
                    "Firebase emulator token handling: unsigned tokens accepted without verification, 'owner' is the admin (the default on loopback without --rules)"
            ),
            .value(
                "auth-keys", valueName: "FILE",
                help: "verify Firebase ID tokens (RS256) with this JWKS or X.509-certificate JSON file"),
            .value(
                "auth-secret", valueName: "FILE",
                help: "verify self-issued tokens (HS256) with the secret in this file (see 'silo token')"),
            .value(
                "admin-key-file", valueName: "FILE",
                help: "admin keys, one per line: 'Authorization: Bearer <key>' bypasses rules"),
            .repeating(
                "service-account", valueName: "FILE",
                help:
                    "register a Google service account from its JSON key file (only the public key is kept): its access tokens (POST /token), signed URLs and POST policies are accepted, and bucket IAM policies and ACLs decide what it may do"
            ),
            .repeating(
                "signed-url-host", valueName: "HOST",
                help:
                    "a host signed URLs may be signed for besides this server's own addresses (default: storage.googleapis.com, the host GCS clients sign for)"
            ),
            .repeating(
                "public-url", valueName: "URL",
                help:
                    "http(s)://HOST[:PORT] clients reach this server at besides its listening address (a proxy, a DNS or service name): signed URLs and token requests made for it are accepted"
            ),
            .repeating(
                "trusted-proxies", valueName: "CIDR",
                help:
                    "peers (addresses or CIDR ranges, comma-separated or repeated) whose X-Forwarded-Host and X-Forwarded-Proto decide the links and upload URLs in answers (default: none; others' are ignored)"
            ),
            .value(
                "project", valueName: "ID",
                help:
                    "Firebase project id tokens must be issued for (default: from the first --bucket, else demo-project)"
            ),
            .flag("insecure-allow-all", help: "allow every request on a non-loopback address without rules"),
            .value(
                "threads", valueName: "N",
                help: "event loops (default: one per CPU this process may run on)"
            ),
            .value(
                "workers", valueName: "N", help: "threads for handler calls that block (stores, fsync)",
                defaultValue: "16"),
            .value(
                "inline-limit", valueName: "BYTES",
                help:
                    "objects up to this size keep their bytes in the metadata store, not as files or S3 objects (0: none)",
                defaultValue: String(Backends.defaultInlineLimit)),
            .value(
                "drain-seconds", valueName: "S", help: "how long SIGINT/SIGTERM waits for requests in flight",
                defaultValue: "30"),
            .value(
                "import", valueName: "DIR",
                help:
                    "load this Firebase emulator export (firebase-export-metadata.json layout) once the listener is up"),
            .flag(
                "export-on-exit",
                help:
                    "on SIGINT/SIGTERM, export everything to the --import DIR before exiting (written to a temporary directory, then renamed)"
            ),
            .value(
                "max-object-size", valueName: "SIZE", help: "largest object accepted (413 beyond it); KiB/MiB/GiB/TiB",
                defaultValue: "5TiB"),
            .value(
                "max-connections", valueName: "N",
                help: "simultaneous connections; at the limit the longest-idle keep-alive connection gives way",
                defaultValue: "1024"),
            .value(
                "max-connections-per-client", valueName: "N",
                help: "simultaneous connections from one IP address (0: no limit; raise it behind a proxy)",
                defaultValue: "256"),
            .value(
                "idle-timeout", valueName: "S",
                help: "close a connection with no byte read or written for this long (stalled uploads too)",
                defaultValue: "60"),
            .value(
                "head-timeout", valueName: "S",
                help: "a request head must be complete this long after it starts (slowloris)", defaultValue: "20"),
            .value(
                "max-head-bytes", valueName: "SIZE", help: "longest request head (431 beyond it)", defaultValue: "64KiB"
            ),
            .value(
                "max-json-body-bytes", valueName: "SIZE",
                help: "longest JSON body: metadata updates, resumable starts, copy/compose (413 beyond it)",
                defaultValue: "1MiB"),
            .value(
                "max-sessions-per-caller", valueName: "N",
                help:
                    "open resumable uploads one caller (a user, else an IP address) may hold, touched in the last day (429 beyond it)",
                defaultValue: "1000"),
            .value(
                "max-pending-bytes-per-caller", valueName: "SIZE",
                help: "bytes one caller's open resumable uploads may hold (429 beyond it)", defaultValue: "64GiB"),
            .value(
                "max-inflated-bytes-per-caller", valueName: "SIZE",
                help:
                    "bytes of gzip objects one caller (a user, else an IP address) may have decompressed for it per minute, for clients that do not accept gzip (429 beyond it; 0: no limit)",
                defaultValue: "1GiB"),
            .value(
                "create-buckets-on-upload", valueName: "BOOL",
                help:
                    "whether an upload (v0, GCS JSON or XML) creates a bucket that does not exist, as the Firebase emulator does (default: in emulator mode only)"
            ),
            .repeating(
                "virtual-host-suffix", valueName: "HOST",
                help:
                    "XML API virtual-host style: Host {bucket}.HOST names the bucket (default: storage.googleapis.com and localhost; 'none' turns it off)"
            ),
            .flag(
                "test-faults",
                help:
                    "serve storage-testbench's Retry Test API (/retry_test) and stage the faults it describes for requests with x-retry-test-id (loopback addresses only; docs/test-faults.md)"
            ),
            .repeating(
                "event-webhook", valueName: "URL",
                help:
                    "POST storage events (CloudEvents, binary mode, signed) to this URL; 'URL;bucket=B,B2;types=finalize,delete,archive,metadataUpdate' filters (docs/events.md)"
            ),
            .value(
                "event-secret-file", valueName: "FILE",
                help: "the HMAC-SHA256 key events are signed with (X-Silo-Signature); required with --event-webhook"),
            .value(
                "event-timeout", valueName: "S", help: "limit on one webhook request (failed ones are retried)",
                defaultValue: "10"),
            .value(
                "event-concurrency", valueName: "N", help: "webhook requests in flight at once", defaultValue: "4"),
            .value(
                "event-retention", valueName: "S",
                help: "how long an undelivered event is retried before it is abandoned (logged and counted)",
                defaultValue: "604800"),
            .value(
                "garbage-grace", valueName: "S",
                help:
                    "how long a blob nothing references waits before maintenance deletes it: an upload in flight that long on another node would have to be sent again (503), and an S3 store keeps replaced bytes that long for the downloads reading them",
                defaultValue: "86400"),
            .value(
                "maintenance-interval", valueName: "S",
                help: "how often maintenance runs (expiry, lifecycle rules, soft-delete purges, garbage collection)",
                defaultValue: "300"),
            .value(
                "log-level", valueName: "LEVEL",
                help: "server log threshold: trace, debug, info, notice, warning, error or critical",
                defaultValue: "info"),
            .value(
                "access-log", valueName: "DEST",
                help:
                    "one JSON line per request to PATH (appended, opened again on SIGHUP after a rotation), stderr, or off (docs/operations.md); written off the request threads, dropped and counted when the disk falls behind",
                defaultValue: "off"),
            .value(
                "tls-cert", valueName: "FILE",
                help:
                    "serve HTTPS with this PEM certificate chain (leaf first), reloaded on SIGHUP (a bad new one keeps the old); needs --tls-key and the epoll engine"
            ),
            .value("tls-key", valueName: "FILE", help: "the unencrypted PEM private key of --tls-cert"),
            .flag("print-config", help: "print the resolved configuration and where each value came from, then exit"),
        ] as [OptionDefinition]).map { option in
            var option = option
            if option.name != "print-config" {
                option.environment = "SILO_" + option.name.uppercased().replacingOccurrences(of: "-", with: "_")
                option.configurable = true
            }
            return option
        }

    init() {}

    init(from values: ParsedValues) throws {
        host = values.value("host") ?? host
        port = try values.integer("port", in: 0...65535) ?? port
        dataDirectory = values.value("data") ?? dataDirectory
        for text in values.values("bucket") {
            do { buckets.append(try BucketName(text)) } catch {
                throw ValidationError("--bucket: \((error as? StorageError)?.message ?? "\(error)")")
            }
        }
        insecureAllowAll = try values.flag("insecure-allow-all")
        metadataURL = values.value("metadata")
        blobsURL = values.value("blobs")
        for text in values.values("rules") {
            let file = try RulesFile(argument: text)
            guard !rules.contains(where: { $0.bucket == file.bucket }) else {
                throw ValidationError(
                    file.bucket.map { "--rules names bucket \($0.rawValue) twice" }
                        ?? "--rules gives two files for every bucket; give one, and BUCKET=FILE for the others")
            }
            rules.append(file)
        }
        imagesFile = values.value("images")
        emulator = try values.flag("emulator")
        authKeysFile = values.value("auth-keys")
        authSecretFile = values.value("auth-secret")
        adminKeyFile = values.value("admin-key-file")
        serviceAccountFiles = values.values("service-account")
        signedURLHosts = values.values("signed-url-host")
        for host in signedURLHosts
        where host.isEmpty || host.utf8.count > 255 || !host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x2F }) {
            throw ValidationError("--signed-url-host must be a host name (with an optional :port), not '\(host)'")
        }
        for text in values.values("public-url") {
            guard let url = PublicURL(text) else {
                throw ValidationError("--public-url must be http(s)://HOST[:PORT] with no path, not '\(text)'")
            }
            publicURLs.append(url)
        }
        for text in values.values("trusted-proxies").flatMap({ $0.split(separator: ",") }) {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            guard let network = PeerNetwork(trimmed) else {
                throw ValidationError(
                    "--trusted-proxies takes IP addresses or CIDR ranges (10.0.0.0/8, 2001:db8::/32), not '\(trimmed)'")
            }
            trustedProxies.append(network)
        }
        project = values.value("project")
        threads = try values.integer("threads", in: 1...256)
        workers = try values.integer("workers", in: 1...1024) ?? workers
        inlineLimit = try values.integer("inline-limit", in: 0...Backends.maxInlineLimit) ?? inlineLimit
        if let text = values.value("drain-seconds") {
            guard let seconds = Double(text), seconds >= 0 else {
                throw ValidationError("--drain-seconds must be a number ≥ 0")
            }
            drainSeconds = seconds
        }
        if let text = values.value("create-buckets-on-upload") {
            switch text.lowercased() {
            case "true", "yes", "1", "on": createBucketsOnUpload = true
            case "false", "no", "0", "off": createBucketsOnUpload = false
            default: throw ValidationError("--create-buckets-on-upload must be true or false, not '\(text)'")
            }
        }
        let suffixes = values.values("virtual-host-suffix").map { $0.lowercased() }
        if !suffixes.isEmpty {
            for suffix in suffixes where suffix != "none" && !Self.isHostName(suffix) {
                throw ValidationError("--virtual-host-suffix: '\(suffix)' is not a host name")
            }
            virtualHostSuffixes = suffixes.filter { $0 != "none" }
        }
        for text in values.values("event-webhook") {
            do { eventWebhooks.append(try WebhookTarget(parsing: text)) } catch {
                throw ValidationError((error as? StorageError)?.message ?? "--event-webhook: \(error)")
            }
        }
        eventSecretFile = values.value("event-secret-file")
        if !eventWebhooks.isEmpty && eventSecretFile == nil {
            throw ValidationError("--event-webhook needs --event-secret-file: events are always signed")
        }
        eventTimeoutSeconds = try values.integer("event-timeout", in: 1...600) ?? eventTimeoutSeconds
        eventConcurrency = try values.integer("event-concurrency", in: 1...64) ?? eventConcurrency
        eventRetentionSeconds =
            try values.integer("event-retention", in: 60...(366 * 86_400)) ?? eventRetentionSeconds
        garbageGraceSeconds = try values.integer("garbage-grace", in: 0...(366 * 86_400)) ?? garbageGraceSeconds
        maintenanceIntervalSeconds =
            try values.integer("maintenance-interval", in: 1...86_400) ?? maintenanceIntervalSeconds
        if let text = values.value("log-level") {
            let levels: [Logger.Level] = [.trace, .debug, .info, .notice, .warning, .error, .critical]
            guard let level = levels.first(where: { $0.description == text.lowercased() }) else {
                throw ValidationError(
                    "--log-level must be one of: \(levels.map(\.description).joined(separator: ", ")), not '\(text)'")
            }
            logLevel = level
        }
        if let text = values.value("access-log") {
            switch text {
            case "off": accessLog = nil
            case "stderr": accessLog = AccessLog.Destination.standardError
            case "":
                throw ValidationError("--access-log must be a file path, stderr or off")
            default: accessLog = .file(text)
            }
        }
        switch (values.value("tls-cert"), values.value("tls-key")) {
        case (let certificate?, let key?):
            tls = (certificate, key)
        case (nil, nil): break
        case (nil, _?): throw ValidationError("--tls-key needs --tls-cert (the certificate it belongs to)")
        case (_?, nil): throw ValidationError("--tls-cert needs --tls-key (its private key)")
        }
        importDirectory = values.value("import")
        exportOnExit = try values.flag("export-on-exit")
        printConfig = try values.flag("print-config")
        testFaults = try values.flag("test-faults")
        limits.maxObjectSize = try values.byteCount("max-object-size", in: 0...(5 << 40)) ?? limits.maxObjectSize
        limits.maxConnections = try values.integer("max-connections", in: 1...1_000_000) ?? limits.maxConnections
        limits.maxConnectionsPerClient =
            try values.integer("max-connections-per-client", in: 0...1_000_000) ?? limits.maxConnectionsPerClient
        limits.idleTimeoutSeconds = try values.integer("idle-timeout", in: 1...86_400) ?? limits.idleTimeoutSeconds
        limits.headTimeoutSeconds = try values.integer("head-timeout", in: 1...3600) ?? limits.headTimeoutSeconds
        limits.maxHeadBytes = Int(
            try values.byteCount("max-head-bytes", in: 1024...(1 << 20)) ?? Int64(limits.maxHeadBytes))
        limits.maxJSONBodyBytes = Int(
            try values.byteCount("max-json-body-bytes", in: 1024...(64 << 20)) ?? Int64(limits.maxJSONBodyBytes))
        limits.maxSessionsPerCaller =
            try values.integer("max-sessions-per-caller", in: 1...10_000_000) ?? limits.maxSessionsPerCaller
        limits.maxPendingBytesPerCaller =
            try values.byteCount("max-pending-bytes-per-caller", in: 1...(1 << 60)) ?? limits.maxPendingBytesPerCaller
        limits.maxInflatedBytesPerCaller =
            try values.byteCount("max-inflated-bytes-per-caller", in: 0...(1 << 60))
            ?? limits.maxInflatedBytesPerCaller
        try applyFirebaseJSON(values)
    }

    /// firebase.json (with `.firebaserc`) fills in what no flag, variable or config line gave: the rules, the host
    /// and port, the project; and, on a loopback address, emulator mode, which its rules assume (unsigned tokens,
    /// `owner`) unless `--emulator false` says otherwise.
    private mutating func applyFirebaseJSON(_ values: ParsedValues) throws {
        if let path = values.value("firebase-json") {
            firebaseJSON = path
        } else if FileManager.default.fileExists(atPath: FirebaseProject.defaultPath) {
            firebaseJSON = FirebaseProject.defaultPath
            firebaseJSONDetected = true
        }
        guard let path = firebaseJSON else { return }
        let project = try FirebaseProject(path: path, project: self.project)
        let given = { (name: String) in values.resolved(name).source != .defaultValue }
        if !given("host"), let host = project.host { self.host = host }
        if !given("port"), let port = project.port { self.port = port }
        if self.project == nil { self.project = project.projectID }
        if !given("rules") { rules = project.rules }
        if !given("emulator"), !rules.isEmpty, project.rules == rules, SecurityPosture.isLoopback(host) {
            emulator = true
        }
    }

    /// Dot-separated labels of letters, digits and hyphens (RFC 1123 §2.1), at most 253 bytes.
    static func isHostName(_ text: String) -> Bool {
        guard (1...253).contains(text.utf8.count) else { return false }
        return text.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                && label.utf8.allSatisfy { $0 == 0x2D || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) }
        }
    }

    /// The Firebase project id: `--project`, else the first bucket's `<project>.appspot.com` /
    /// `<project>.firebasestorage.app` prefix, else `demo-project` (the emulator's default).
    var projectID: String {
        if let project { return project }
        if let first = buckets.first?.rawValue {
            for suffix in [".appspot.com", ".firebasestorage.app"] where first.hasSuffix(suffix) {
                return String(first.dropLast(suffix.count))
            }
        }
        return "demo-project"
    }

    /// `--print-config`: one `key = value` line per option (a valid config file), with where it came from.
    static func printConfiguration(_ values: ParsedValues) -> String {
        var text = ""
        for option in definitions where option.name != "print-config" {
            let (resolved, source) = values.resolved(option.name)
            let shown: String
            switch option.kind {
            case .flag:
                shown =
                    resolved.last.map { ["true", "yes", "1", "on"].contains($0.lowercased()) } == true
                    ? "true" : "false"
            case .value: shown = resolved.last ?? ""
            case .repeating: shown = resolved.joined(separator: ", ")
            }
            let line = "\(option.name) = \(shown)"
            text += line.padding(toLength: max(line.count + 2, 40), withPad: " ", startingAt: 0) + "# \(source)\n"
        }
        let path = values.config.path
        if !path.isEmpty && FileManager.default.fileExists(atPath: path) { text += "# config file: \(path)\n" }
        return text
    }
}
