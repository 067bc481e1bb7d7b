public import SiloCore

/// A ``BlobStore`` that passes every call — including those of its writers and readers — to `inner` through
/// ``StoreCallHooks``. Writer calls are `write`, `sync` and `close`; reader calls `read`; the subject is the blob id.
public final class FaultInjectingBlobStore: BlobStore, BlobListing {
    public let inner: any BlobStore
    public let hooks: StoreCallHooks

    public init(_ inner: any BlobStore, hooks: StoreCallHooks) {
        self.inner = inner
        self.hooks = hooks
    }

    public var readersSurviveDeletion: Bool { inner.readersSurviveDeletion }

    /// The inner store's blobs (empty when it cannot list them).
    public func allBlobIDs() throws -> [BlobID] { try (inner as? any BlobListing)?.allBlobIDs() ?? [] }

    public func makeWriter(_ id: BlobID, at offset: Int64) throws -> any BlobWriter {
        try hooks.around(StoreCall("makeWriter", id.rawValue)) {
            HookedWriter(try inner.makeWriter(id, at: offset), id: id, hooks: hooks)
        }
    }

    public func openReader(_ id: BlobID) throws -> any BlobReader {
        try hooks.around(StoreCall("openReader", id.rawValue)) {
            HookedReader(try inner.openReader(id), id: id, hooks: hooks)
        }
    }

    /// Hooked as `composeBlob` (subject: the new blob), then done by the inner store as it would be unhooked.
    public func composeBlob(_ id: BlobID, from sources: [BlobSlice]) throws -> BlobCompositionMethod {
        try hooks.around(StoreCall("composeBlob", id.rawValue)) { try inner.composeBlob(id, from: sources) }
    }

    public func deleteBlob(_ id: BlobID) throws {
        try hooks.around(StoreCall("deleteBlob", id.rawValue)) { try inner.deleteBlob(id) }
    }
}

private final class HookedWriter: BlobWriter {
    let inner: any BlobWriter
    let id: BlobID
    let hooks: StoreCallHooks

    init(_ inner: any BlobWriter, id: BlobID, hooks: StoreCallHooks) {
        self.inner = inner
        self.id = id
        self.hooks = hooks
    }

    var offset: Int64 { inner.offset }
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        try hooks.around(StoreCall("write", id.rawValue)) { try inner.write(bytes) }
    }
    func sync() throws { try hooks.around(StoreCall("sync", id.rawValue)) { try inner.sync() } }
    func close() { inner.close() }
}

private final class HookedReader: BlobReader {
    let inner: any BlobReader
    let id: BlobID
    let hooks: StoreCallHooks

    init(_ inner: any BlobReader, id: BlobID, hooks: StoreCallHooks) {
        self.inner = inner
        self.id = id
        self.hooks = hooks
    }

    var size: Int64 { inner.size }
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        try hooks.around(StoreCall("read", id.rawValue)) { try inner.read(into: buffer, at: offset) }
    }
    func takeFileDescriptor() -> Int32? { inner.takeFileDescriptor() }
}
