public import Foundation
public import SiloCore
import SiloCurl
import SiloHashing
import SiloS3Signer
import SiloWire

/// A ``BlobStore`` on any S3-compatible endpoint (AWS S3, SeaweedFS, Ceph RGW, …), with path-style URLs, AWS
/// Signature V4 and `UNSIGNED-PAYLOAD`, over libcurl.
///
/// ## Layout: a blob is a chain of segment objects
///
/// S3 objects are immutable, but a resumable upload must continue — possibly on another node after a crash — at
/// its last acknowledged offset, discarding anything written past it. So a blob is stored as *segments*,
/// `<prefix>/<id>/seg-<start offset>` (``S3SegmentLayout``), and read as their concatenation, each segment cut off
/// where the next one starts (``S3SegmentChain``):
///
/// - A writer buffers at most ``Configuration/partSize`` bytes. Once the buffer is full it becomes a part of a
///   multipart upload of the current segment, so memory stays bounded whatever the blob's size.
/// - `sync()` publishes the current segment: a single PUT, or the last part plus
///   CompleteMultipartUpload. When it returns, every byte written so far is in S3, and the next bytes start a new
///   segment at the current offset. A plain upload (write…, sync, close) is therefore one object (two with the
///   new blob's empty first segment); a resumable upload that syncs after each chunk is one object per chunk.
///   `close()` publishes nothing: it may run late, after a failed request answered and a retry wrote the same
///   segment key, so what was not synced is dropped.
/// - `makeWriter(id, at: n)` lists the blob, refuses `n` past its end, deletes the segments starting after `n`
///   (highest first, so the chain stays contiguous if it is interrupted), and, if the blob is still longer than
///   `n`, writes an empty segment at `n`, which cuts off everything after `n`. A new blob (no segments) gets its
///   empty first segment here, so it exists once `makeWriter` returns, as on disk. Any node can do this: the state is
///   only in the bucket, so nothing is lost with the node that started the upload.
/// - A reader lists the segments once at open, then serves `read(into:at:)` with ranged GETs of a read-ahead window
///   that starts at 256 KiB and doubles on sequential access up to 4 MiB.
///
/// Not relied upon, because S3-compatible stores differ on them: the ETag of a completed multipart
/// upload (never read), `If-None-Match: *` (never sent). Batch deletes carry `Content-MD5`.
///
/// Caveats: a multipart upload abandoned by a crash stays in the bucket until the bucket's
/// `AbortIncompleteMultipartUpload` lifecycle rule (or an operator) removes it; and a writer still running on
/// another node when its blob is deleted can re-create segments, so blob deletion must wait for the writer's
/// session to end (the server's sessions do).
///
/// All calls block the calling thread on network I/O.
public final class S3BlobStore: BlobStore, BlobListing {
    public let configuration: Configuration
    let client: S3Client
    let layout: S3SegmentLayout

    public init(configuration: Configuration) {
        self.configuration = configuration
        client = S3Client(configuration: configuration)
        layout = S3SegmentLayout(prefix: configuration.prefix)
    }

    /// The store described by an `s3://bucket[/prefix]?endpoint=…&region=…` URL, with credentials from the AWS
    /// environment variables (see ``Configuration/init(url:environment:)``). Does no I/O; call ``checkBucket()``
    /// to find out early whether the bucket is reachable.
    public convenience init(
        url: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(S3Error) {
        self.init(configuration: try Configuration(url: url, environment: environment))
    }

    // MARK: BlobStore

    public func makeWriter(_ id: BlobID, at offset: Int64) throws -> any BlobWriter {
        guard offset >= 0 else { throw StorageError(.invalidArgument, "negative offset \(offset) for blob \(id)") }
        let segments = try storage { () throws(S3Error) in try listSegments(id) }
        let chain = try S3SegmentChain(segments, blob: id)
        if offset > 0 {
            guard !segments.isEmpty else {
                throw StorageError(.corrupt, "blob \(id) is missing; cannot continue writing at offset \(offset)")
            }
            guard chain.size >= offset else {
                throw StorageError(
                    .corrupt, "blob \(id) holds \(chain.size) bytes; cannot continue writing at offset \(offset)")
            }
        }
        // Drop whatever lies past `offset`: later segments first (highest first keeps the chain contiguous if we
        // are interrupted), then cut the last remaining one with an empty segment at `offset`.
        var remaining = segments.sorted { $0.start < $1.start }
        while let last = remaining.last, last.start > offset {
            try storage { () throws(S3Error) in try deleteObject(last.key) }
            remaining.removeLast()
        }
        if remaining.isEmpty || remaining.last!.start + remaining.last!.storedSize > offset {
            try storage { () throws(S3Error) in
                try putObject(layout.segmentKey(id, start: offset), body: Data(), summary: "truncate blob \(id)")
            }
        }
        return S3BlobWriter(store: self, id: id, offset: offset)
    }

    public func openReader(_ id: BlobID) throws -> any BlobReader {
        let segments = try storage { () throws(S3Error) in try listSegments(id) }
        guard !segments.isEmpty else { throw StorageError(.notFound, "blob \(id) does not exist") }
        return S3BlobReader(store: self, id: id, chain: try S3SegmentChain(segments, blob: id))
    }

    public func deleteBlob(_ id: BlobID) throws {
        let keys = try storage { () throws(S3Error) in try listSegments(id) }.map(\.key)
        try storage { () throws(S3Error) in try deleteObjects(keys) }
    }

    // MARK: Maintenance

    /// Every blob with at least one segment under the prefix, for orphan sweeps (mirrors
    /// `DiskBlobStore.allBlobIDs()`). Lists every segment rather than asking for common prefixes: stores that keep
    /// real directories (SeaweedFS's filer) still report `<id>/` as a common prefix after its last object is gone.
    public func allBlobIDs() throws -> [BlobID] {
        let objects = try storage { () throws(S3Error) in try list(prefix: layout.keyPrefix, delimiter: nil) }.objects
        return Set(objects.compactMap { layout.blobID(ofSegmentKey: $0.key) }).sorted { $0.rawValue < $1.rawValue }
    }

    /// Throws unless the bucket exists and these credentials may use it (a HEAD of the bucket).
    public func checkBucket() throws(S3Error) {
        _ = try client.send(S3Operation(method: "HEAD", key: nil, summary: "HEAD bucket \(configuration.bucket)"))
    }

    /// Creates the bucket; one that these credentials already own is fine.
    public func createBucket() throws(S3Error) {
        do {
            _ = try client.send(S3Operation(method: "PUT", key: nil, summary: "create bucket \(configuration.bucket)"))
        } catch let error where error.s3Code == "BucketAlreadyOwnedByYou" {
            return
        }
    }

    // MARK: S3 operations

    /// Runs S3 calls, converting their errors to the `StorageError` every BlobStore throws.
    func storage<T>(_ body: () throws(S3Error) -> T) throws(StorageError) -> T {
        do {
            return try body()
        } catch {
            throw error.storageError
        }
    }

    func listSegments(_ id: BlobID) throws(S3Error) -> [S3StoredSegment] {
        try list(prefix: layout.blobPrefix(id), delimiter: nil).objects.compactMap { object in
            layout.segmentStart(object.key, of: id).map {
                S3StoredSegment(key: object.key, start: $0, storedSize: object.size)
            }
        }
    }

    struct Listing {
        var objects: [(key: String, size: Int64)] = []
        var commonPrefixes: [String] = []
    }

    /// ListObjectsV2 of everything under `prefix`, following continuation tokens.
    func list(prefix: String, delimiter: String?) throws(S3Error) -> Listing {
        var listing = Listing()
        var token: String?
        repeat {
            var query = [SigV4QueryItem("list-type", "2"), SigV4QueryItem("prefix", prefix)]
            if let delimiter { query.append(SigV4QueryItem("delimiter", delimiter)) }
            if let token { query.append(SigV4QueryItem("continuation-token", token)) }
            let reply = try client.send(
                S3Operation(
                    method: "GET", key: nil, query: query, replyLimit: 16 << 20, summary: "list \(prefix)"))
            let xml = Substring(decoding: reply.body, as: UTF8.self)
            for contents in XMLText.elements("Contents", in: xml) {
                guard let key = XMLText.value("Key", in: contents), let size = XMLText.value("Size", in: contents),
                    let bytes = Int64(size)
                else { throw S3Error(.invalidResponse, "list \(prefix): an entry without Key or Size") }
                listing.objects.append((key, bytes))
            }
            for common in XMLText.elements("CommonPrefixes", in: xml) {
                if let value = XMLText.value("Prefix", in: common) { listing.commonPrefixes.append(value) }
            }
            let truncated = XMLText.value("IsTruncated", in: xml) == "true"
            token = truncated ? XMLText.value("NextContinuationToken", in: xml) : nil
            if truncated && token == nil {
                throw S3Error(.invalidResponse, "list \(prefix): truncated listing without a continuation token")
            }
        } while token != nil
        return listing
    }

    func putObject(_ key: String, body: Data, summary: String) throws(S3Error) {
        _ = try client.send(S3Operation(method: "PUT", key: key, body: body, summary: "\(summary): PUT \(key)"))
    }

    /// DELETE of one key; a missing key is success (S3 answers 204 either way, some stores 404).
    func deleteObject(_ key: String) throws(S3Error) {
        do {
            _ = try client.send(S3Operation(method: "DELETE", key: key, summary: "DELETE \(key)"))
        } catch let error where error.code == .notFound {
            return
        }
    }

    /// Deletes `keys`: one DELETE for a single key, DeleteObjects (with Content-MD5, which Swift and JuiceFS
    /// require) in batches of 1000 otherwise.
    func deleteObjects(_ keys: [String]) throws(S3Error) {
        if keys.count == 1 { return try deleteObject(keys[0]) }
        var start = 0
        while start < keys.count {
            let batch = keys[start..<min(keys.count, start + 1000)]
            start = batch.endIndex
            let body = Data(
                ("<Delete><Quiet>true</Quiet>"
                    + batch.map { "<Object><Key>\(XMLText.escape($0))</Key></Object>" }.joined() + "</Delete>").utf8)
            let md5 = Data(MD5Hasher.digest(body)).base64EncodedString()
            let reply = try client.send(
                S3Operation(
                    method: "POST", key: nil, query: [SigV4QueryItem("delete")],
                    headers: [SigV4Header("Content-MD5", md5), SigV4Header("Content-Type", "application/xml")],
                    body: body, summary: "delete \(batch.count) objects from \(batch[batch.startIndex])"))
            // Quiet mode lists only the failures; a missing key is not one.
            let xml = Substring(decoding: reply.body, as: UTF8.self)
            if let failure = XMLText.elements("Error", in: xml).first {
                let key = XMLText.value("Key", in: failure) ?? "?"
                let code = XMLText.value("Code", in: failure)
                throw S3Error(
                    code == "AccessDenied" ? .accessDenied : .unavailable,
                    "delete \(key) failed: \(XMLText.value("Message", in: failure) ?? "")", status: reply.status,
                    s3Code: code)
            }
        }
    }
}
