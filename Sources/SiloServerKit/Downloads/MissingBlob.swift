package import SiloCore

/// Why a read of a version's bytes failed although its metadata says they exist: the blob store could not find them.
/// Either the version was replaced and its bytes collected between the metadata read and the open (a reader looks the
/// object up again), or bytes the store acknowledged are lost. Neither is "no such object": clients do not retry a
/// 404, and the object does exist.
struct MissingBlob: Error, Sendable {
    let blob: BlobID
    let underlying: StorageError
}

extension BlobStore {
    /// Opens the bytes of `record`. A blob the store cannot find, or finds shorter than the version (a store that
    /// lists fewer of its parts than it holds, as an S3 store coming back from an outage can), is a 503 naming the
    /// object (cause ``MissingBlob``, which the server logs), never the blob store's 404 nor a short answer.
    package func openBytes(of record: ObjectRecord) throws -> any BlobReader {
        let reader: any BlobReader
        do {
            reader = try openReader(record.blobID)
        } catch let error as StorageError where error.code == .notFound {
            throw StorageError(
                .unavailable,
                "The bytes of \(record.bucket)/\(record.name) (generation \(record.generation)) are missing from the "
                    + "blob store", cause: MissingBlob(blob: record.blobID, underlying: error))
        }
        guard reader.size >= record.size else {
            throw StorageError(
                .unavailable,
                "The blob store holds \(reader.size) of the \(record.size) bytes of \(record.bucket)/\(record.name) "
                    + "(generation \(record.generation))",
                cause: MissingBlob(
                    blob: record.blobID, underlying: StorageError(.corrupt, "blob \(record.blobID) is short")))
        }
        return reader
    }
}

extension StorageError {
    /// Whether this is ``BlobStore/openBytes(of:)``'s answer for bytes the store could not find.
    var isMissingBlob: Bool { cause is MissingBlob }
}
