import Foundation
import SiloCore
import SiloHTTP
@_spi(Testing) import SiloHashing
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Synchronization
import Testing

/// The fault matrix: every write path, with a fault injected at each of its store calls in turn (metadata
/// and blob stores alike, through ``StoreCallHooks``). After every fault: the answer is a clean 5xx (507 for a full
/// disk) or, when the fault hit a best-effort step, a success; the target object is its old version or its new
/// one, never something between; no acknowledged object is lost; every version's blob reads back with its
/// checksum and no blob is left that nothing references; and once the fault clears, the client's retry succeeds.
///
/// With `SILO_FAULT_REPORT=FILE` the outcome counts are written to FILE as a Markdown table (the issue's note).
@Suite struct FaultMatrixTests {
    /// What is injected, and when.
    enum Fault: String, CaseIterable, Sendable {
        /// ENOSPC / SQLITE_FULL before the call reaches the store.
        case diskFull = "disk full (before)"
        /// EIO before the call.
        case ioError = "I/O error (before)"
        /// A dropped connection before the call (PostgreSQL, S3).
        case dropped = "connection dropped (before)"
        /// The call did its work, then its answer was lost (a commit whose reply a dropped connection ate).
        case lostAnswer = "answer lost (after)"

        var error: StorageError {
            switch self {
            case .diskFull: StorageError(.insufficientStorage, "injected: no space left on device")
            case .ioError: StorageError(.ioError, "injected: input/output error")
            case .dropped, .lostAnswer: StorageError(.unavailable, "injected: connection lost")
            }
        }

        var moment: CallMoment { self == .lostAnswer ? .after : .before }

        /// Whether this fault makes sense for `call` (nothing to lose in the answer of a read).
        func applies(to call: StoreCall) -> Bool {
            switch self {
            case .ioError, .dropped: true
            case .diskFull, .lostAnswer: Self.writes.contains(call.method)
            }
        }

        static let writes: Set<String> = [
            "insertObject", "updateObject", "deleteObject", "insertSession", "updateSession", "registerPendingBlob",
            "forgetBlob", "ensureBucket", "makeWriter", "write", "sync", "deleteBlob", "composeBlob",
        ]
    }

    /// One write path: `run` performs it for object `name` (whose old version exists) and returns every status it
    /// got; `expected` is the object's bytes (or metadata marker) once it succeeded; `retry` completes it again
    /// after the fault is gone.
    struct WritePath: Sendable {
        var name: String
        var overwrites: Bool
        var run: @Sendable (HTTPTestClient, String) throws -> [Int]
        var retry: @Sendable (HTTPTestClient, String) throws -> Int
        /// What the target looks like once the write took effect.
        var newState: @Sendable (HTTPTestClient, String) throws -> Bool
    }

    static let body = pattern(300 << 10, seed: 7)
    static let old = Array("the old version".utf8)

    static func media(_ c: HTTPTestClient, _ name: String) throws -> Int {
        try c.mediaUpload(name, body).status
    }

    static func contentIs(_ bytes: [UInt8]) -> @Sendable (HTTPTestClient, String) throws -> Bool {
        { c, name in try c.get(objectPath(name) + "?alt=media").body == bytes }
    }

    static func v0Resumable(_ c: HTTPTestClient, _ name: String) throws -> [Int] {
        let started = try c.send(
            method: "POST", target: bucketPath() + "?name=" + PercentCoding.encodeComponent(name),
            headers: [
                "X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
                "X-Goog-Upload-Header-Content-Length": String(body.count),
            ])
        guard started.status == 200, let url = started.headers["X-Goog-Upload-URL"] else { return [started.status] }
        sessions.withLock { $0[name] = url }
        let path = String(url[url.range(of: "/v0/")!.lowerBound...])
        let first = try c.send(
            method: "POST", target: path, headers: ["X-Goog-Upload-Command": "upload", "X-Goog-Upload-Offset": "0"],
            body: Array(body[0..<(256 << 10)]))
        guard first.status == 200 else { return [started.status, first.status] }
        let last = try c.send(
            method: "POST", target: path,
            headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": String(256 << 10)],
            body: Array(body[(256 << 10)...]))
        return [started.status, first.status, last.status]
    }

    /// Session URLs by object name, so a retry can resume the session the faulted run started.
    static let sessions = Mutex<[String: String]>([:])

    /// A client's retry of a v0 resumable upload: query the session, send what the server lacks, finalize (or start
    /// over when the session never started or failed).
    static func v0ResumableRetry(_ c: HTTPTestClient, _ name: String) throws -> Int {
        if let url = sessions.withLock({ $0[name] }) {
            let path = String(url[url.range(of: "/v0/")!.lowerBound...])
            let status = try c.send(method: "POST", target: path, headers: ["X-Goog-Upload-Command": "query"])
            if status.status == 200, status.headers["X-Goog-Upload-Status"] == "active",
                let received = status.headers["X-Goog-Upload-Size-Received"].flatMap(Int.init)
            {
                return try c.send(
                    method: "POST", target: path,
                    headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": String(received)],
                    body: Array(body[received...])
                ).status
            }
            if status.headers["X-Goog-Upload-Status"] == "final" {
                let final = try c.send(method: "POST", target: path, headers: ["X-Goog-Upload-Command": "finalize"])
                if final.status == 200 { return 200 }
            }
        }
        sessions.withLock { $0[name] = nil }
        return try v0Resumable(c, name).last ?? 0
    }

    static func gcsResumable(_ c: HTTPTestClient, _ name: String) throws -> [Int] {
        let started = try c.send(
            method: "POST",
            target: "/upload/storage/v1/b/\(bucket)/o?uploadType=resumable&name=" + PercentCoding.encodeComponent(name),
            headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
        guard started.status == 200, let location = started.headers["Location"] else { return [started.status] }
        let path = String(location[location.range(of: "/upload/")!.lowerBound...])
        let split = 256 << 10
        let first = try c.send(
            method: "PUT", target: path, headers: ["Content-Range": "bytes 0-\(split - 1)/*"],
            body: Array(body[0..<split]))
        guard first.status == 308 else { return [started.status, first.status] }
        let last = try c.send(
            method: "PUT", target: path, headers: ["Content-Range": "bytes \(split)-\(body.count - 1)/\(body.count)"],
            body: Array(body[split...]))
        return [started.status, first.status, last.status]
    }

    static func patch(_ c: HTTPTestClient, _ target: String) throws -> Int {
        try c.send(
            method: "PATCH", target: target, headers: ["Content-Type": "application/json"],
            body: Array(#"{"contentType":"text/x-new","metadata":{"state":"new"}}"#.utf8)
        ).status
    }

    static let paths: [WritePath] = [
        WritePath(
            name: "v0 media upload", overwrites: true, run: { c, n in [try media(c, n)] },
            retry: { c, n in try media(c, n) }, newState: contentIs(body)),
        WritePath(
            name: "v0 multipart upload", overwrites: true,
            run: { c, n in [try c.multipartUpload(n, metadata: #"{"contentType":"text/plain"}"#, body).status] },
            retry: { c, n in try c.multipartUpload(n, metadata: #"{"contentType":"text/plain"}"#, body).status },
            newState: contentIs(body)),
        WritePath(
            name: "v0 resumable (start, chunk, finalize)", overwrites: true, run: { c, n in try v0Resumable(c, n) },
            retry: { c, n in try v0ResumableRetry(c, n) }, newState: contentIs(body)),
        WritePath(
            name: "GCS multipart upload", overwrites: true,
            run: { c, n in [try gcsMultipart(c, n)] }, retry: { c, n in try gcsMultipart(c, n) },
            newState: contentIs(body)),
        WritePath(
            name: "GCS resumable (Content-Range)", overwrites: true, run: { c, n in try gcsResumable(c, n) },
            retry: { c, n in try gcsResumable(c, n).last ?? 0 }, newState: contentIs(body)),
        WritePath(
            name: "GCS rewrite (copy)", overwrites: true,
            run: { c, n in [try copy(c, n)] }, retry: { c, n in try copy(c, n) }, newState: contentIs(body)),
        WritePath(
            name: "GCS compose", overwrites: true,
            run: { c, n in [try compose(c, n)] }, retry: { c, n in try compose(c, n) },
            newState: contentIs(body + body)),
        WritePath(
            name: "XML multipart (initiate, part, complete)", overwrites: true, run: { c, n in try xmlMultipart(c, n) },
            retry: { c, n in try xmlMultipart(c, n).last ?? 0 }, newState: contentIs(body)),
        WritePath(
            name: "XML resumable (start, chunk, finish)", overwrites: true, run: { c, n in try xmlResumable(c, n) },
            retry: { c, n in try xmlResumable(c, n).last ?? 0 }, newState: contentIs(body)),
        WritePath(
            name: "v0 metadata PATCH", overwrites: true, run: { c, n in [try patch(c, objectPath(n))] },
            retry: { c, n in try patch(c, objectPath(n)) }, newState: metadataIsNew),
        WritePath(
            name: "GCS metadata PATCH", overwrites: true,
            run: { c, n in [try patch(c, gcsPath(n))] }, retry: { c, n in try patch(c, gcsPath(n)) },
            newState: metadataIsNew),
        WritePath(
            name: "v0 delete", overwrites: true,
            run: { c, n in [try c.send(method: "DELETE", target: objectPath(n)).status] },
            retry: { c, n in
                let status = try c.send(method: "DELETE", target: objectPath(n)).status
                return status == 404 ? 204 : status
            },
            newState: { c, n in try c.get(objectPath(n)).status == 404 }),
    ]

    static func xmlPath(_ name: String) -> String { "/\(bucket)/" + PercentCoding.encodeComponent(name) }

    static func xmlMultipart(_ c: HTTPTestClient, _ name: String) throws -> [Int] {
        let initiated = try c.send(method: "POST", target: xmlPath(name) + "?uploads")
        guard initiated.status == 200, let id = XMLText.value("UploadId", in: Substring(initiated.text)) else {
            return [initiated.status]
        }
        let part = try c.send(method: "PUT", target: xmlPath(name) + "?partNumber=1&uploadId=\(id)", body: body)
        guard part.status == 200, let etag = part.headers["ETag"] else { return [initiated.status, part.status] }
        let completion =
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\(etag)</ETag></Part>"
            + "</CompleteMultipartUpload>"
        let done = try c.send(method: "POST", target: xmlPath(name) + "?uploadId=\(id)", body: Array(completion.utf8))
        return [initiated.status, part.status, done.status]
    }

    static func xmlResumable(_ c: HTTPTestClient, _ name: String) throws -> [Int] {
        let started = try c.send(method: "POST", target: xmlPath(name), headers: ["x-goog-resumable": "start"])
        guard started.status == 201, let location = started.headers["Location"] else { return [started.status] }
        let path = String(location[location.range(of: "/\(bucket)/")!.lowerBound...])
        let split = 256 << 10
        let first = try c.send(
            method: "PUT", target: path, headers: ["Content-Range": "bytes 0-\(split - 1)/*"],
            body: Array(body[0..<split]))
        guard first.status == 308 else { return [started.status, first.status] }
        let last = try c.send(
            method: "PUT", target: path, headers: ["Content-Range": "bytes \(split)-\(body.count - 1)/\(body.count)"],
            body: Array(body[split...]))
        return [started.status, first.status, last.status]
    }

    static func gcsPath(_ name: String) -> String {
        "/storage/v1/b/\(bucket)/o/" + PercentCoding.encodeComponent(name)
    }

    static func gcsMultipart(_ c: HTTPTestClient, _ name: String) throws -> Int {
        let head = Array(
            "--B\r\nContent-Type: application/json\r\n\r\n{}\r\n--B\r\nContent-Type: text/plain\r\n\r\n".utf8)
        return try c.send(
            method: "POST",
            target: "/upload/storage/v1/b/\(bucket)/o?uploadType=multipart&name=" + PercentCoding.encodeComponent(name),
            headers: ["Content-Type": "multipart/related; boundary=B"], body: head + body + Array("\r\n--B--".utf8)
        ).status
    }

    /// The sources of copy and compose hold the new bytes; they are written before the fault is armed.
    static func sourceName(_ name: String) -> String { name + ".source" }

    static func copy(_ c: HTTPTestClient, _ name: String) throws -> Int {
        try c.send(
            method: "POST",
            target: gcsPath(sourceName(name)) + "/rewriteTo/b/\(bucket)/o/" + PercentCoding.encodeComponent(name)
        ).status
    }

    static func compose(_ c: HTTPTestClient, _ name: String) throws -> Int {
        let source = sourceName(name)
        let request = #"{"sourceObjects":[{"name":"\#(source)"},{"name":"\#(source)"}]}"#
        return try c.send(
            method: "POST", target: gcsPath(name) + "/compose", headers: ["Content-Type": "application/json"],
            body: Array(request.utf8)
        ).status
    }

    static let metadataIsNew: @Sendable (HTTPTestClient, String) throws -> Bool = { c, name in
        let r = try c.get(objectPath(name))
        return try r.json()["contentType"]?.stringValue == "text/x-new"
    }

    // MARK: The run

    /// Outcome counts of one (path, fault) cell.
    struct Cell: Sendable {
        var steps = 0
        var answered507 = 0
        var answered5xx = 0
        var succeeded = 0
        var problems: [String] = []
    }

    static let report = Mutex<[String: [Fault: Cell]]>([:])

    /// One case per (path, fault), each on a server of its own, run side by side and off the cooperative pool
    /// (``offThePool(_:_:)``), so cases waiting on their server do not hold its threads. Serialized and one case per
    /// path, the suite ran on alone for 20-35 s after the other suites had finished, in each of `make test`'s four runs
    /// of the server suites.
    @Test(arguments: paths.indices, Fault.allCases)
    func faultsAtEveryStep(_ index: Int, _ fault: Fault) async throws {
        try await offThePool("fault-matrix \(index)") { try faultsAtEveryStep(Self.paths[index], index, fault) }
    }

    private func faultsAtEveryStep(_ path: WritePath, _ index: Int, _ fault: Fault) throws {
        let hooks = StoreCallHooks()
        let server = try TestServer(hooks: hooks)
        let client = server.client()
        // The calls the path makes, from a clean run.
        try prepare(client, "probe", path)
        hooks.record()
        let statuses = try path.run(client, "probe")
        // The deletion of the version an overwrite replaced runs after the answer: its calls are part of the path.
        server.app.waitForBlobReclaims()
        let calls = hooks.recorded()
        #expect(statuses.allSatisfy { (200..<400).contains($0) }, "\(path.name) clean run: \(statuses)")
        #expect(!calls.isEmpty)

        try client.mediaUpload("acked.bin", Self.old)
        var cell = Cell()
        for (step, call) in calls.enumerated() where fault.applies(to: call) {
            cell.steps += 1
            let name = "m\(index)/\(Fault.allCases.firstIndex(of: fault)!)/\(step)"
            try prepare(client, name, path)
            hooks.set(Injector(step: step, fault: fault).hook)
            let where_ = "\(path.name), \(fault.rawValue), step \(step) \(call)"
            let got: [Int]
            do {
                got = try path.run(client, name)
                server.app.waitForBlobReclaims()
            } catch {
                server.app.waitForBlobReclaims()
                hooks.set(nil)
                client.disconnect()
                cell.problems.append("\(where_): no answer (\(error))")
                continue
            }
            hooks.set(nil)
            let failed = got.first { $0 >= 400 }
            switch failed {
            case nil: cell.succeeded += 1
            case 507?: cell.answered507 += 1
            case let status? where status >= 500: cell.answered5xx += 1
            case let status?: cell.problems.append("\(where_): answered \(status), not a 5xx")
            }
            if fault == .diskFull, let failed, failed >= 500, failed != 507 {
                cell.problems.append("\(where_): a full disk answered \(failed), not 507")
            }
            // Atomic: the old version or the new one; a success means the new one.
            let isNew = try path.newState(client, name)
            let isOld = try client.get(objectPath(name) + "?alt=media").body == Self.old
            if failed == nil && !isNew { cell.problems.append("\(where_): success, but the write is not there") }
            if !isNew && !isOld { cell.problems.append("\(where_): neither the old nor the new version") }
            // The fault cleared: the client's retry succeeds.
            let retried = try path.retry(client, name)
            if !(200..<300).contains(retried) {
                cell.problems.append("\(where_): retry answered \(retried)")
            } else if try !path.newState(client, name) {
                cell.problems.append("\(where_): retry succeeded, but the write is not there")
            }
            if try client.get(objectPath("acked.bin") + "?alt=media").body != Self.old {
                cell.problems.append("\(where_): the acknowledged object was lost")
            }
        }
        cell.problems += try consistencyProblems(server).map { "\(path.name), \(fault.rawValue): \($0)" }
        #expect(cell.problems.isEmpty, "\(cell.problems.prefix(10).joined(separator: "\n"))")
        Self.report.withLock { $0[path.name, default: [:]][fault] = cell }
        try Self.writeReport()
    }

    /// Fails the `step`-th store call (counted in order, from 0) with `fault`: before it reaches the store, or after
    /// it did its work.
    final class Injector: Sendable {
        private let step: Int
        private let fault: Fault
        /// Calls seen so far, and whether the after-fault is armed for the call under way.
        private let state = Mutex((seen: 0, armed: false))

        init(step: Int, fault: Fault) {
            self.step = step
            self.fault = fault
        }

        var hook: StoreCallHooks.Hook {
            { [self] _, moment in try self.observe(moment) }
        }

        private func observe(_ moment: CallMoment) throws {
            let fire = state.withLock { state -> Bool in
                switch moment {
                case .before:
                    defer { state.seen += 1 }
                    guard state.seen == step else { return false }
                    if fault.moment == .before { return true }
                    state.armed = true
                    return false
                case .after:
                    // Calls never nest, so the next `after` while armed is that of the call just armed.
                    guard state.armed else { return false }
                    state.armed = false
                    return true
                }
            }
            if fire { throw fault.error }
        }
    }

    /// Puts the old version of `name` in place (and, for copy and compose, their source) with no fault armed.
    func prepare(_ client: HTTPTestClient, _ name: String, _ path: WritePath) throws {
        #expect(try client.mediaUpload(name, Self.old, contentType: "text/plain").status == 200)
        if path.name.contains("copy") || path.name.contains("compose") {
            #expect(try client.mediaUpload(Self.sourceName(name), Self.body).status == 200)
        }
        Self.sessions.withLock { $0[name] = nil }
    }

    /// What a consistency check of the stores finds wrong once the collector has run: a version whose blob is
    /// missing or does not hash to its checksum, or a blob nothing references.
    func consistencyProblems(_ server: TestServer) throws -> [String] {
        _ = server.app.collectGarbage(graceSeconds: 0)
        var problems: [String] = []
        var referenced = Set<BlobID>()
        // Small objects' bytes are rows of the metadata store: read as the server reads.
        let readable = InliningBlobStore(stored: server.blobs, metadata: server.metadata)
        for bucket in try server.metadata.buckets() {
            var after: ObjectVersionKey?
            while true {
                let page = try server.metadata.listObjectVersions(
                    bucket.name, prefix: "", startAfter: after, limit: 500)
                for version in page {
                    referenced.insert(version.blobID)
                    if let problem = verify(readable, version) { problems.append(problem) }
                }
                guard let last = page.last, page.count == 500 else { break }
                after = ObjectVersionKey(name: Array(last.name.rawValue.utf8), generation: last.generation)
            }
        }
        for session in try server.metadata.sessions(updatedBefore: Timestamp(microseconds: .max))
        where session.state == .active {
            referenced.insert(session.blobID)
        }
        if let listing = server.blobs as? any BlobListing {
            let stored = Set(try listing.allBlobIDs())
            for orphan in stored.subtracting(referenced) { problems.append("blob \(orphan) is referenced by nothing") }
        }
        return problems
    }

    private func verify(_ blobs: any BlobStore, _ version: ObjectRecord) -> String? {
        do {
            let reader = try blobs.openReader(version.blobID)
            let hasher = ObjectHasher()
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            var offset: Int64 = 0
            while true {
                let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0, at: offset) }
                if n == 0 { break }
                buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                offset += Int64(n)
            }
            let summary = hasher.finalize()
            // Composed versions have no MD5 (as in GCS): their CRC32C, combined from the sources', is checked.
            guard offset == version.size, summary.crc32c == version.blob.crc32c,
                version.blob.md5.isEmpty || summary.md5 == version.blob.md5
            else {
                return "\(version.bucket)/\(version.name)#\(version.generation): bytes do not match the metadata"
            }
            return nil
        } catch {
            return "\(version.bucket)/\(version.name)#\(version.generation): blob unreadable (\(error))"
        }
    }

    /// The matrix as a Markdown table, when `SILO_FAULT_REPORT` names a file.
    static func writeReport() throws {
        guard let file = ProcessInfo.processInfo.environment["SILO_FAULT_REPORT"] else { return }
        // Written under the lock: cases finish side by side, and a table made from an earlier snapshot must not
        // replace one that holds more cells.
        try report.withLock { rows in try write(rows, to: file) }
    }

    private static func write(_ rows: [String: [Fault: Cell]], to file: String) throws {
        var text = "| write path | " + Fault.allCases.map(\.rawValue).joined(separator: " | ") + " |\n"
        text += "|---|" + String(repeating: "---|", count: Fault.allCases.count) + "\n"
        for path in paths {
            guard let cells = rows[path.name] else { continue }
            text += "| \(path.name) | "
            text += Fault.allCases.map { fault -> String in
                guard let c = cells[fault] else { return "–" }
                let verdict = c.problems.isEmpty ? "consistent, retry ok" : "\(c.problems.count) problems"
                return "\(c.steps) steps: \(c.answered507)×507, \(c.answered5xx)×5xx, \(c.succeeded)×2xx; \(verdict)"
            }.joined(separator: " | ")
            text += " |\n"
        }
        try text.write(toFile: file, atomically: true, encoding: .utf8)
    }
}
