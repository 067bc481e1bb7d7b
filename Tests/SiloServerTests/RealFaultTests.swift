import Foundation
import SiloCore
@_spi(Testing) import SiloDisk
import SiloHTTP
@_spi(Testing) import SiloPostgres
@_spi(Testing) import SiloSQLite
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Faults as the stores themselves raise them, not through the protocol-level hooks of
/// ``FaultMatrixTests``: ENOSPC, short writes and fsync failures from the disk store's syscall seam, SQLITE_FULL
/// from a database that cannot grow, and PostgreSQL connections killed under the pool. Each is a clean answer
/// (507 for a full disk or database), leaves the stores consistent, and the next request succeeds once it clears.
@Suite struct RealFaultTests {
    /// Disk syscalls a test can fail: pwrite (ENOSPC after a short write), fdatasync (EIO).
    final class DiskFaults: Sendable {
        let pwriteErrno = Mutex<Int32?>(nil)
        /// Lets this many bytes through in the failing pwrite before the errno (a short write, then the error).
        let shortWrite = Mutex(0)
        let fdatasyncErrno = Mutex<Int32?>(nil)

        func syscalls() -> Syscalls {
            var syscalls = Syscalls.system
            let system = Syscalls.system
            syscalls.pwrite = { fd, buffer, count, offset in
                if let code = self.pwriteErrno.withLock({ $0 }) {
                    let partial = self.shortWrite.withLock { allowed -> Int in
                        defer { allowed = 0 }
                        return min(allowed, count)
                    }
                    if partial > 0 { return system.pwrite(fd, buffer, partial, offset) }
                    errno = code
                    return -1
                }
                return system.pwrite(fd, buffer, count, offset)
            }
            syscalls.fdatasync = { fd in
                if let code = self.fdatasyncErrno.withLock({ $0 }) {
                    errno = code
                    return -1
                }
                return system.fdatasync(fd)
            }
            return syscalls
        }
    }

    static var onDisk: Bool { ProcessInfo.processInfo.environment["SILO_TEST_SERVER_BLOBS"] != "s3" }
    static var onSQLite: Bool { ProcessInfo.processInfo.environment["SILO_TEST_SERVER_METADATA"] != "postgres" }
    static var onPostgres: Bool { !onSQLite }

    @Test(.enabled(if: onDisk)) func aFullDiskIs507AndTheUploadSucceedsOnceThereIsRoom() throws {
        let faults = DiskFaults()
        let server = try TestServer(blobStore: {
            try DiskBlobStore(root: $0.path + "/blobs", syscalls: faults.syscalls())
        })
        let client = server.client()
        #expect(try client.mediaUpload("keep.bin", bytes("acknowledged")).status == 200)
        #expect(try client.mediaUpload("target.bin", bytes("old")).status == 200)
        let body = pattern(600 << 10)
        // The disk fills in the middle of the body: 100 KiB more go down, then ENOSPC.
        faults.shortWrite.withLock { $0 = 100 << 10 }
        faults.pwriteErrno.withLock { $0 = ENOSPC }
        let media = try client.mediaUpload("target.bin", body)
        #expect(media.status == 507)
        #expect(media.headers["X-Request-Id"] != nil)
        let multipart = try client.multipartUpload("target.bin", metadata: "{}", body)
        #expect(multipart.status == 507)
        faults.pwriteErrno.withLock { $0 = nil }
        #expect(try client.get(objectPath("target.bin") + "?alt=media").text == "old")
        #expect(try client.mediaUpload("target.bin", body).status == 200)
        #expect(try client.get(objectPath("target.bin") + "?alt=media").body == body)
        #expect(try client.get(objectPath("keep.bin") + "?alt=media").text == "acknowledged")
        try expectNoOrphans(server)
    }

    @Test(.enabled(if: onDisk)) func aFailedFsyncAtFinalizeCommitsNothingAndTheRetrySucceeds() throws {
        let faults = DiskFaults()
        let server = try TestServer(blobStore: {
            try DiskBlobStore(root: $0.path + "/blobs", syscalls: faults.syscalls())
        })
        let client = server.client()
        let body = pattern(300 << 10, seed: 3)
        let started = try client.send(
            method: "POST", target: bucketPath() + "?name=r.bin",
            headers: ["X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start"])
        let url = try #require(started.headers["X-Goog-Upload-URL"])
        let path = String(url[url.range(of: "/v0/")!.lowerBound...])
        faults.fdatasyncErrno.withLock { $0 = EIO }
        let failed = try client.send(
            method: "POST", target: path,
            headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"], body: body)
        #expect(failed.status == 500)
        #expect(!failed.text.contains("fdatasync"), "the cause is logged, not sent")
        #expect(try client.get(objectPath("r.bin")).status == 404)
        faults.fdatasyncErrno.withLock { $0 = nil }
        // The client asks where the session is (nothing was made durable) and sends everything again.
        let query = try client.send(method: "POST", target: path, headers: ["X-Goog-Upload-Command": "query"])
        #expect(query.headers["X-Goog-Upload-Size-Received"] == "0")
        let done = try client.send(
            method: "POST", target: path,
            headers: ["X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"], body: body)
        #expect(done.status == 200)
        #expect(try client.get(objectPath("r.bin") + "?alt=media").body == body)
        try expectNoOrphans(server)
    }

    @Test(.enabled(if: onSQLite)) func aFullDatabaseIs507AndWritesResumeWhenItCanGrow() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.mediaUpload("keep.bin", bytes("acknowledged")).status == 200)
        let sqlite = try #require((server.metadata as? CachingMetadataStore)?.inner as? SQLiteMetadataStore)
        let pages = try #require(try sqlite.scalar("PRAGMA page_count"))
        try sqlite.executeOnWriter("PRAGMA max_page_count = \(pages)")
        var statuses: [Int] = []
        var index = 0
        // Rows fill the free space in the last pages, then the database cannot grow.
        while !statuses.contains(507) && index < 500 {
            let big = String(repeating: "m", count: 4000)
            statuses.append(
                try client.send(
                    method: "POST", target: bucketPath() + "?name=fill/\(index)",
                    headers: ["X-Goog-Upload-Protocol": "multipart", "Content-Type": "multipart/related; boundary=B"],
                    body: bytes(
                        "--B\r\nContent-Type: application/json\r\n\r\n{\"metadata\":{\"pad\":\"\(big)\"}}\r\n--B\r\n\r\nx\r\n--B--"
                    )
                )
                .status)
            index += 1
        }
        #expect(statuses.contains(507))
        #expect(statuses.allSatisfy { $0 == 200 || $0 == 507 }, "\(Set(statuses))")
        try sqlite.executeOnWriter("PRAGMA max_page_count = 1073741823")
        #expect(try client.mediaUpload("after.bin", bytes("room again")).status == 200)
        #expect(try client.get(objectPath("keep.bin") + "?alt=media").text == "acknowledged")
        try expectNoOrphans(server)
    }

    @Test(.enabled(if: onPostgres)) func droppedPostgreSQLConnectionsAreReplacedAndNothingIsLost() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.mediaUpload("keep.bin", bytes("acknowledged")).status == 200)
        let postgres = try #require(server.metadata as? PostgresMetadataStore)
        // Hold every pooled connection at once to learn their server processes, then kill them all.
        var pids: [Int32] = []
        func collect(_ depth: Int) throws {
            guard depth > 0 else { return }
            try postgres.withPooledConnection { pid in
                pids.append(pid)
                try collect(depth - 1)
            }
        }
        try collect(postgres.poolStatistics.capacity)
        let killer = try #require(ProcessInfo.processInfo.environment["SILO_TEST_POSTGRES_URL"])
        let other = try PostgresMetadataStore(url: killer, poolSize: 1)
        for pid in pids { _ = try other.scalar("SELECT pg_terminate_backend(\(pid))::text") }
        // The next writes find dead connections, drop them and reconnect.
        for index in 0..<4 {
            #expect(try client.mediaUpload("after/\(index).bin", bytes("v\(index)")).status == 200)
        }
        #expect(try client.get(objectPath("keep.bin") + "?alt=media").text == "acknowledged")
    }

    /// After the collector, no blob on disk is referenced by nothing, and every version's blob is there.
    private func expectNoOrphans(_ server: TestServer) throws {
        _ = server.app.collectGarbage(graceSeconds: 0)
        guard let listing = server.blobs as? any BlobListing else { return }
        let stored = Set(try listing.allBlobIDs())
        var referenced = Set<BlobID>()
        for bucket in try server.metadata.buckets() {
            for version in try server.metadata.listObjectVersions(
                bucket.name, prefix: "", startAfter: nil, limit: 10_000)
            {
                referenced.insert(version.blobID)
            }
        }
        for session in try server.metadata.sessions(updatedBefore: Timestamp(microseconds: .max))
        where session.state == .active {
            referenced.insert(session.blobID)
        }
        // Inline blobs are rows of the metadata store, not files.
        #expect(stored == referenced.filter { !$0.isInline })
        for id in referenced where id.isInline { #expect(try server.metadata.inlineBlob(id) != nil, "\(id)") }
    }
}
