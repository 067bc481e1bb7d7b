import SiloCore
import SiloCurl
import SiloS3Signer

/// Reads a blob's segment chain (listed once, at open) with ranged GETs into a read-ahead window, so a sequential
/// reader makes one request per window rather than one per `read`. The window starts at
/// ``S3BlobStore/Configuration/initialReadAhead``, doubles on each sequential miss up to
/// ``S3BlobStore/Configuration/maxReadAhead``, and falls back to the start on a seek.
final class S3BlobReader: BlobReader {
    private let store: S3BlobStore
    private let id: BlobID
    private let chain: S3SegmentChain
    /// Bytes of the blob starting at `windowStart`.
    private var window: [UInt8] = []
    private var windowStart: Int64 = 0
    private var readAhead: Int
    /// Where the previous window fetch ended, to tell sequential reading from seeking.
    private var lastFetchEnd: Int64 = -1
    /// Ranged GETs made so far (for tests of the read-ahead).
    private(set) var requests = 0

    init(store: S3BlobStore, id: BlobID, chain: S3SegmentChain) {
        self.store = store
        self.id = id
        self.chain = chain
        readAhead = store.configuration.initialReadAhead
    }

    var size: Int64 { chain.size }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset >= 0 else { throw StorageError(.invalidArgument, "negative read offset \(offset) of blob \(id)") }
        var done = 0
        var position = offset
        while done < buffer.count && position < chain.size {
            if !(windowStart..<windowStart + Int64(window.count)).contains(position) {
                try fetchWindow(at: position, wanted: buffer.count - done)
            }
            let from = Int(position - windowStart)
            let count = min(buffer.count - done, window.count - from)
            window.withUnsafeBytes { source in
                UnsafeMutableRawBufferPointer(rebasing: buffer[done..<(done + count)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[from..<(from + count)]))
            }
            done += count
            position += Int64(count)
        }
        return done
    }

    func takeFileDescriptor() -> Int32? { nil }

    /// Replaces the window with bytes from `position` on, within the one segment holding `position`.
    private func fetchWindow(at position: Int64, wanted: Int) throws {
        let configuration = store.configuration
        if position == lastFetchEnd {
            readAhead = min(readAhead * 2, configuration.maxReadAhead)
        } else {
            readAhead = configuration.initialReadAhead
        }
        let piece = chain.pieces[chain.pieceIndex(containing: position)]
        let length = Int(min(Int64(max(readAhead, min(wanted, configuration.maxReadAhead))), piece.end - position))
        let first = position - piece.start
        let last = first + Int64(length) - 1
        window = []  // release the old window before the new one arrives
        let reply = try store.storage { () throws(S3Error) in try get(piece.key, first: first, last: last) }
        requests += 1
        // The object must still be the one listed at open: a 206 for the requested range of an object of the listed
        // size (or a 200 with the whole object when the range was all of it).
        let total = reply.head.header("Content-Range").flatMap { $0.split(separator: "/").last }.flatMap { Int64($0) }
        let whole = reply.status == 200 && first == 0 && Int64(length) == piece.storedSize
        guard reply.body.count == length, (reply.status == 206 && total == piece.storedSize) || whole else {
            throw StorageError(
                .corrupt,
                "blob \(id): segment \(piece.key) changed while being read (HTTP \(reply.status), "
                    + "\(reply.body.count) of \(length) bytes, object size \(total.map(String.init) ?? "?") "
                    + "instead of \(piece.storedSize))")
        }
        window = reply.body
        windowStart = position
        lastFetchEnd = position + Int64(length)
    }

    private func get(_ key: String, first: Int64, last: Int64) throws(S3Error) -> CurlBufferedResponse {
        let length = Int(last - first + 1)
        do {
            return try store.client.send(
                S3Operation(
                    method: "GET", key: key, headers: [SigV4Header("Range", "bytes=\(first)-\(last)")],
                    replyLimit: length, replyReserve: length, summary: "read bytes \(first)-\(last) of \(key)"))
        } catch  where error.code == .notFound {
            throw S3Error(.notFound, "blob \(id) was deleted while being read (\(key))", cause: error)
        }
    }
}

@available(*, unavailable) extension S3BlobReader: Sendable {}
