import SiloCore

/// The writer an upload starts with: it holds the first bytes in memory and creates the stored blob only once they
/// pass `limit`. An upload that ends within the limit never touches the blob store; its bytes go to the metadata
/// store with its commit (``ObjectDraft/inlineBytes``), one row in one grouped commit (docs/architecture-notes.md,
/// "Small objects inline").
///
/// ``BlobAppender`` hands over full batches (16 KiB and up, more than any limit) or its last partial one at the end,
/// so a larger upload spills on its first write, at offset 0 with nothing held: its writes stay aligned for direct
/// I/O as before.
final class InlineCandidateWriter: BlobWriter {
    /// Registers a pending blob and opens its writer: called once, when the bytes pass the limit.
    typealias Spill = () throws -> (BlobID, any BlobWriter)

    private let limit: Int
    private var spill: Spill?
    private var held: [UInt8] = []
    private(set) var spilled: (id: BlobID, writer: any BlobWriter)?

    init(limit: Int, spill: @escaping Spill) {
        self.limit = limit
        self.spill = spill
    }

    package var offset: Int64 { spilled?.writer.offset ?? Int64(held.count) }

    package func write(_ bytes: UnsafeRawBufferPointer) throws {
        if let spilled { return try spilled.writer.write(bytes) }
        if held.count + bytes.count <= limit {
            held.append(contentsOf: bytes)
            return
        }
        guard let spill else { throw StorageError(.internalError, "write after the upload was closed") }
        self.spill = nil
        let (id, writer) = try spill()
        spilled = (id, writer)
        if !held.isEmpty { try held.withUnsafeBytes { try writer.write($0) } }
        held = []
        try writer.write(bytes)
    }

    /// Held bytes become durable with the commit that stores them.
    package func sync() throws { try spilled?.writer.sync() }

    package func close() {
        spill = nil
        spilled?.writer.close()
    }

    /// The bytes, while they never left memory.
    var inlineBytes: [UInt8]? { spilled == nil ? held : nil }
}
