/// The blob store the server reads through: an inline blob's bytes (`BlobID.isInline`) come from the metadata store,
/// which wrote them in the transaction of the version that holds them; every other blob from `stored`.
///
/// Writers always go to `stored`: an upload that stays within ``MetadataStore/inlineBlobLimit`` never opens one, and
/// hands its bytes to the commit instead (``ObjectDraft/inlineBytes``). Deleting an inline blob's bytes is
/// ``MetadataStore/forgetBlob(_:)``'s part, so the collector's claim, delete, forget sequence covers both kinds.
public struct InliningBlobStore: BlobStore {
    public let stored: any BlobStore
    public let metadata: any MetadataStore

    public init(stored: any BlobStore, metadata: any MetadataStore) {
        self.stored = stored
        self.metadata = metadata
    }

    public func makeWriter(_ id: BlobID, at offset: Int64) throws -> any BlobWriter {
        guard !id.isInline else { throw StorageError(.internalError, "inline blob \(id) cannot be written to") }
        return try stored.makeWriter(id, at: offset)
    }

    public func openReader(_ id: BlobID) throws -> any BlobReader {
        guard id.isInline else { return try stored.openReader(id) }
        guard let bytes = try metadata.inlineBlob(id) else { throw StorageError(.notFound, "No such blob: \(id)") }
        return BytesBlobReader(bytes)
    }

    /// An inline blob's bytes go with ``MetadataStore/forgetBlob(_:)``, after the collector's claim.
    public func deleteBlob(_ id: BlobID) throws {
        if !id.isInline { try stored.deleteBlob(id) }
    }

    /// A reader of an inline blob holds its bytes, so only `stored`'s readers can lose theirs.
    public var readersSurviveDeletion: Bool { stored.readersSurviveDeletion }

    /// `stored` copies inside itself when every source is its own; an inline source is read back through here.
    public func composeBlob(_ id: BlobID, from sources: [BlobSlice]) throws -> BlobCompositionMethod {
        guard sources.contains(where: \.id.isInline) else { return try stored.composeBlob(id, from: sources) }
        try composeByStreaming(id, from: sources)
        return .streamed
    }
}

/// A reader over bytes in memory.
public final class BytesBlobReader: BlobReader {
    private let bytes: [UInt8]

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var size: Int64 { Int64(bytes.count) }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset >= 0 else { throw StorageError(.invalidArgument, "negative read offset \(offset)") }
        guard offset < bytes.count else { return 0 }
        let count = min(buffer.count, bytes.count - Int(offset))
        bytes.withUnsafeBytes { source in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[Int(offset)..<(Int(offset) + count)]))
        }
        return count
    }

    public func takeFileDescriptor() -> Int32? { nil }
}
