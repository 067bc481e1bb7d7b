import SiloCore
import Testing

/// Small objects' bytes kept inline (``ObjectDraft/inlineBytes``): written in their version's transaction, read
/// back by id, and deleted only by the collector's claim and forget, the same from every store.
extension MetadataStoreConformanceTests {
    /// A draft whose bytes are committed inline.
    private func inlineDraft(_ name: String, _ bytes: [UInt8]) -> ObjectDraft {
        var draft = draft(name, blobID: .inline(at: .now()), size: Int64(bytes.count))
        draft.inlineBytes = bytes
        return draft
    }

    @Test(arguments: MetadataBackend.allCases)
    func inlineBytesCommitWithTheirVersionAndGoWithItsCollection(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let time = Timestamp(microseconds: 10)
        let first = inlineDraft("small", Array("first".utf8))
        // No registration: the bytes arrive with their version.
        let stored = try fixture.store.insertObject(first, conditions: .none, at: time).stored
        #expect(stored.blobID == first.blobID && stored.blobID.isInline)
        #expect(try fixture.store.inlineBlob(first.blobID) == Array("first".utf8))
        #expect(try fixture.store.isBlobReferenced(first.blobID))
        try fixture.reopen()
        #expect(try fixture.store.inlineBlob(first.blobID) == Array("first".utf8), "durable across a reopen")

        // Replaced: the old bytes stay until the collector claims and forgets them.
        let second = inlineDraft("small", Array("second".utf8))
        _ = try fixture.store.insertObject(second, conditions: .none, at: time)
        #expect(try fixture.store.inlineBlob(first.blobID) == Array("first".utf8))
        let garbage = try fixture.store.garbageBlobs(registeredBefore: Timestamp(microseconds: .max), limit: 10)
        #expect(garbage == [first.blobID])
        #expect(try fixture.store.claimGarbageBlob(first.blobID, registeredBefore: nil, at: time))
        try fixture.store.forgetBlob(first.blobID)
        #expect(try fixture.store.inlineBlob(first.blobID) == nil)
        #expect(try fixture.store.inlineBlob(second.blobID) == Array("second".utf8))
        // The live version's bytes cannot be claimed.
        #expect(try !fixture.store.claimGarbageBlob(second.blobID, registeredBefore: nil, at: time))

        // A reset puts them on the garbage list like any other blob.
        try fixture.store.reset()
        #expect(try fixture.store.claimGarbageBlob(second.blobID, registeredBefore: nil, at: time))
        try fixture.store.forgetBlob(second.blobID)
        #expect(try fixture.store.inlineBlob(second.blobID) == nil)
    }

    @Test(arguments: MetadataBackend.allCases)
    func aRefusedInlineWriteLeavesNoBytes(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let time = Timestamp(microseconds: 10)
        _ = try fixture.store.insertObject(inlineDraft("taken", [1]), conditions: .none, at: time)
        let refused = inlineDraft("taken", [2])
        #expect(throws: StorageError.self) {
            try fixture.store.insertObject(refused, conditions: Preconditions(ifGenerationMatch: 0), at: time)
        }
        #expect(try fixture.store.inlineBlob(refused.blobID) == nil)

        // Bytes under an id that does not say so, or past the store's limit, are not kept inline.
        var misnamed = draft("misnamed")
        misnamed.inlineBytes = [1, 2, 3]
        #expect(throws: StorageError.self) { try fixture.store.insertObject(misnamed, conditions: .none, at: time) }
        let large = inlineDraft("large", Array(repeating: 7, count: fixture.store.inlineBlobLimit + 1))
        #expect(throws: StorageError.self) { try fixture.store.insertObject(large, conditions: .none, at: time) }
        #expect(try fixture.store.object(bucketName(), objectName("misnamed"), generation: nil) == nil)
        #expect(try fixture.store.object(bucketName(), objectName("large"), generation: nil) == nil)
        #expect(try fixture.store.inlineBlob(large.blobID) == nil)
    }
}
