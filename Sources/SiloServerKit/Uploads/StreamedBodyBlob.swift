package import SiloCore

/// The one blob that a streamed multipart body (an upload's `multipart/related` media, a form's file) writes into,
/// and who answers for it: the bytes are discarded when the body fails or is abandoned, and kept once committed.
package struct StreamedBodyBlob {
    package private(set) var ingest: BlobIngest?
    /// Set once the sink has answered (committed or failed): an abandoned body after that discards nothing.
    private var answered = false

    package init(ingest: BlobIngest? = nil) {
        self.ingest = ingest
    }

    /// Starts the blob when the body's file part begins.
    package mutating func start(_ ingest: BlobIngest) { self.ingest = ingest }

    /// Makes the bytes durable and hands them to `commit` (`missing` if the body had no file part); if `commit` throws, the caller's `fail` discards them.
    package mutating func finish<Answer>(missing: StorageError, _ commit: (BlobIngest, IngestedBlob) throws -> Answer)
        throws -> Answer
    {
        guard let ingest else { throw missing }
        let blob = try ingest.finish()
        answered = true
        return try commit(ingest, blob)
    }

    /// The body failed: the bytes go, whatever state they are in.
    package mutating func fail() {
        answered = true
        ingest?.discard()
    }

    /// The connection ended the body before an answer.
    package func abandon() { if !answered { ingest?.discard() } }
}
