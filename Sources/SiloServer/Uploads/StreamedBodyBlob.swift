import SiloCore

/// The one blob that a streamed multipart body (an upload's `multipart/related` media, a form's file) writes into,
/// and who answers for it: the bytes are discarded when the body fails or is abandoned, and kept once committed.
struct StreamedBodyBlob {
    private(set) var ingest: BlobIngest?
    /// Set once the sink has answered (committed or failed): an abandoned body after that discards nothing.
    private var answered = false

    /// Starts the blob when the body's file part begins.
    mutating func start(_ ingest: BlobIngest) { self.ingest = ingest }

    /// Makes the bytes durable and hands them to `commit` (`missing` if the body had no file part); if `commit` throws, the caller's `fail` discards them.
    mutating func finish<Answer>(missing: StorageError, _ commit: (BlobIngest, IngestedBlob) throws -> Answer)
        throws -> Answer
    {
        guard let ingest else { throw missing }
        let blob = try ingest.finish()
        answered = true
        return try commit(ingest, blob)
    }

    /// The body failed: the bytes go, whatever state they are in.
    mutating func fail() {
        answered = true
        ingest?.discard()
    }

    /// The connection ended the body before an answer.
    func abandon() { if !answered { ingest?.discard() } }
}
