package import SiloCore
package import SiloHTTP
import SiloHashing

/// What the API that started a session decides about its commit, supplied by the routes that compose the APIs:
/// the principal the commit is authorized as, which decision it makes, and whether it may create a missing bucket.
/// (A session started on one API can be finished through another's protocol, so this goes by the session, not by
/// the route.)
package struct SessionCommit: Sendable {
    var principal: @Sendable (UploadSession) -> Principal?
    var access: @Sendable (UploadSession) -> WriteAccess
    var createsBucket: @Sendable (UploadSession) -> Bool
}

/// One chunk request of a resumable session: appends the body at the session's offset, makes it durable, records
/// the new offset, and finalizes when asked. Holds the session's claim from creation until it answers or aborts.
package final class ResumableChunkSink: RequestBodySink {
    package struct Outcome {
        package var session: UploadSession
        /// The committed object when the request finalized successfully.
        package var object: ObjectRecord?
    }

    private let service: ObjectService
    private let registry: SessionRegistry
    private let commitRule: SessionCommit
    private let session: UploadSession
    private let finalize: Bool
    private var appender: BlobAppender?
    /// Set for a session's only chunk (the first, and finalizing) when the store keeps small blobs inline: its bytes
    /// then go inline with the commit unless they pass the limit, when they go to the session's blob as usual.
    private let candidate: InlineCandidateWriter?
    /// The session's running hashes once the appender is done with them (nil: recomputed at finalize).
    private var hasher: ObjectHasher?
    private let respond: (Result<Outcome, StorageError>) -> HTTPResponse
    private var released = false
    /// Bytes this chunk may add before the caller's quota of bytes in open sessions is reached.
    private let allowance: Int64
    /// Leading bytes of the body the session already has (a chunk resent from before the persisted offset): GCS
    /// ignores resent data, so they are dropped, and what follows is appended at the offset.
    private var resent: Int64

    init(
        service: ObjectService, registry: SessionRegistry, commit: SessionCommit, session: UploadSession,
        finalize: Bool, resent: Int64 = 0, respond: @escaping (Result<Outcome, StorageError>) -> HTTPResponse
    ) throws {
        self.commitRule = commit
        self.resent = resent
        self.service = service
        self.registry = registry
        self.session = session
        self.finalize = finalize
        self.respond = respond
        self.allowance =
            try session.caller.map { try service.pendingAllowance($0, opening: false, time: Timestamp.now()) } ?? .max
        let hasher =
            registry.takeHasher(session.id, at: session.received) ?? (session.received == 0 ? ObjectHasher() : nil)
        let inlineLimit = try service.metadata.inlineBlobLimit
        if finalize, session.received == 0, inlineLimit > 0 {
            let candidate = InlineCandidateWriter(limit: inlineLimit) { [service] in
                (session.blobID, try service.blobs.makeWriter(session.blobID, at: 0))
            }
            self.candidate = candidate
            self.appender = BlobAppender(writer: candidate, hasher: hasher)
        } else {
            candidate = nil
            self.appender = BlobAppender(
                writer: try service.blobs.makeWriter(session.blobID, at: session.received), hasher: hasher)
        }
    }

    deinit { release() }

    package func receive(_ whole: UnsafeRawBufferPointer) -> HTTPResponse? {
        let dropped = Int(min(resent, Int64(whole.count)))
        resent -= Int64(dropped)
        let chunk = UnsafeRawBufferPointer(rebasing: whole[dropped...])
        guard !chunk.isEmpty else { return nil }
        do {
            if let appender { try checkRoom(appender.appended + Int64(chunk.count)) }
            try appender?.append(chunk)
            return nil
        } catch {
            _ = appender?.takeHasher()
            release()
            return respond(.failure(StorageError.wrap(error)))
        }
    }

    /// Body bytes read here reach the appender without a copy (resent bytes at the front are dropped by moving what
    /// follows over them).
    package func nextChunkBuffer() -> UnsafeMutableRawBufferPointer? { appender?.freeSpace }

    /// A session never takes more bytes than it declared, nor more than the server accepts for one object: the
    /// chunk is refused before those bytes are written.
    private func checkRoom(_ total: Int64) throws {
        let object = "\(session.bucket)/\(session.name)"
        if let declared = session.declaredSize, total > declared {
            throw StorageError(
                .invalidArgument, "upload of \(object) announced \(declared) bytes but more are being sent")
        }
        try service.checkObjectSize(total, object)
        if total - session.received > allowance {
            throw StorageError(.tooManyRequests, "\(object): open upload sessions would hold more bytes than allowed")
        }
    }

    package func finish() -> HTTPResponse {
        defer { release() }
        do {
            guard let appender else { throw StorageError(.internalError, "chunk finished twice") }
            try appender.flush()
            try appender.writer.sync()
            let received = appender.writer.offset
            appender.writer.close()
            hasher = appender.takeHasher()
            self.appender = nil
            let changed = StorageError(.conflict, "upload session \(session.id) changed during the chunk")
            guard finalize else {
                let current = try service.metadata.updateSession(id: session.id) { stored in
                    guard stored.state == .active, stored.received == session.received else { throw changed }
                    stored.received = received
                    stored.updated = Timestamp.now()
                }
                if let hasher { registry.storeHasher(hasher, for: session.id) }
                hasher = nil
                return respond(.success(Outcome(session: current, object: nil)))
            }
            // A finalizing chunk commits once: the object, with the session finalized and its byte count recorded in
            // the same transaction. Until then the session says what was durable before this chunk, so a retry after
            // a crash resends the chunk (bytes held for an inline commit were never anywhere else).
            guard var current = try service.metadata.session(id: session.id), current.state == .active,
                current.received == session.received
            else { throw changed }
            current.received = received
            let object: ObjectRecord
            do {
                object = try commit(current)
            } catch let error as StorageError where error.code == .conflict {
                // Another finalize of this session (on another node) won the race; answer as it did.
                let latest = try service.metadata.session(id: session.id) ?? current
                guard latest.state == .finalized, let generation = latest.resultGeneration,
                    let made = try service.object(latest.bucket, latest.name, generation: generation)
                else { throw error }
                return respond(.success(Outcome(session: latest, object: made)))
            } catch let error as StorageError
                where HTTPStatus.of(error.code) < 500 && error.code != .tooManyRequests
            {
                // A refusal (rules, preconditions, size or checksum mismatch) ends the session; repeating finalize
                // repeats the refusal, as production does.
                current = try service.metadata.updateSession(id: session.id) { stored in
                    stored.state = .failed
                    stored.failureStatus = HTTPStatus.of(error.code)
                    stored.failureMessage = error.message
                    stored.updated = Timestamp.now()
                }
                service.discardBlob(current.blobID)
                return respond(.failure(error))
            }
            // Bytes committed inline leave the session's blob unused: nothing will ever write it again.
            if object.blobID != current.blobID { service.discardBlobLater(current.blobID) }
            // The store finalized the session in the commit's own transaction.
            current.state = .finalized
            current.resultGeneration = object.generation
            return respond(.success(Outcome(session: current, object: object)))
        } catch {
            return respond(.failure(StorageError.wrap(error)))
        }
    }

    package func abort() {
        // Bytes past the recorded offset are discarded by the next writer (it truncates to the offset).
        appender?.writer.close()
        appender = nil
        hasher = nil
        release()
    }

    private func commit(_ current: UploadSession) throws -> ObjectRecord {
        if let declared = current.declaredSize, declared != current.received {
            throw StorageError(
                .invalidArgument,
                "upload of \(current.bucket)/\(current.name) announced \(declared) bytes but \(current.received) arrived"
            )
        }
        // The pipeline checked the chunk request's bucket; this is the session's, started perhaps under another
        // configuration.
        try service.checkServed(current.bucket)
        let summary = try hasher?.finalize() ?? rehash(current)
        hasher = nil
        try UploadChecks.verify(
            summary, md5: current.expectedMD5, crc32c: current.expectedCRC32C,
            object: "\(current.bucket)/\(current.name)")
        // The session's own blob (registered when it started) stays unused, and goes with the next collection.
        let now = Timestamp.now()
        let blob =
            candidate?.inlineBytes.map { IngestedBlob(id: .inline(at: now), summary: summary, inlineBytes: $0) }
            ?? IngestedBlob(id: current.blobID, summary: summary, inlineBytes: nil)
        return try service.commitUpload(
            bucket: current.bucket, name: current.name, blob: blob,
            fields: current.fields, conditions: current.conditions, principal: commitRule.principal(current),
            access: commitRule.access(current), time: now, finalizing: current.id,
            createsBucket: commitRule.createsBucket(current))
    }

    /// Recomputes the checksums from the stored bytes (after a restart the running hasher is gone).
    private func rehash(_ current: UploadSession) throws -> BlobSummary {
        let reader = try service.blobs.openReader(current.blobID)
        let hasher = ObjectHasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < current.received {
            let want = Int(min(Int64(buffer.count), current.received - offset))
            let n = try reader.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: offset)
            guard n > 0 else { throw StorageError(.corrupt, "upload \(current.id) has fewer bytes than recorded") }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            offset += Int64(n)
        }
        return hasher.finalize()
    }

    private func release() {
        guard !released else { return }
        released = true
        registry.release(session.id)
    }
}

/// Verification of client-supplied checksums (GCS clients send them; a mismatch is a 400 as in GCS).
package enum UploadChecks {
    package static func verify(_ summary: BlobSummary, md5: String?, crc32c: String?, object: String) throws {
        if let md5, Base64.decode(md5) != summary.md5 {
            throw StorageError(
                .invalidArgument,
                "Provided MD5 hash \(md5) doesn't match calculated MD5 hash \(Base64.encode(summary.md5)) for \(object)"
            )
        }
        if let crc32c, Base64.decode(crc32c).map(crcValue) != summary.crc32c {
            throw StorageError(
                .invalidArgument, "Provided CRC32C \(crc32c) doesn't match calculated CRC32C for \(object)")
        }
    }

    private static func crcValue(_ b: [UInt8]) -> UInt32 {
        guard b.count == 4 else { return ~0 }
        return UInt32(b[0]) << 24 | UInt32(b[1]) << 16 | UInt32(b[2]) << 8 | UInt32(b[3])
    }
}
