import Foundation
import SiloCore
import SiloTesting
import Synchronization
import Testing

/// One suite, run against every MetadataStore: the in-memory store is the spec, the others must match it.
@Suite struct MetadataStoreConformanceTests {
    let bucket = bucketName()

    // MARK: Buckets

    @Test(arguments: MetadataBackend.allCases)
    func bucketsAreCreatedOnceAndListedByName(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        #expect(try store.bucket(bucket) == nil)
        let created = try store.ensureBucket(bucket)
        fixture.clock.advance(seconds: 10)
        #expect(try store.ensureBucket(bucket) == created)
        #expect(created.metageneration == 1 && !created.versioning)
        _ = try store.ensureBucket(bucketName("a-first"))
        #expect(try store.buckets().map(\.name.rawValue) == ["a-first", bucket.rawValue])
        #expect(try store.bucket(bucket) == created)
    }

    @Test(arguments: MetadataBackend.allCases)
    func createBucketMakesANewBucketOnly(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let t10 = Timestamp(microseconds: 10)
        let created = try store.createBucket(bucket, versioning: true, at: t10)
        #expect(
            created == BucketRecord(name: bucket, timeCreated: t10, updated: t10, metageneration: 1, versioning: true))
        #expect(try store.bucket(bucket) == created)
        #expect(try store.ensureBucket(bucket) == created)
        let again = #expect(throws: StorageError.self) {
            _ = try store.createBucket(bucket, versioning: false, at: Timestamp(microseconds: 20))
        }
        #expect(again?.code == .alreadyExists)
        #expect(again?.message.contains(bucket.rawValue) == true, "\(String(describing: again))")
        #expect(try store.bucket(bucket) == created, "a refused create changes nothing")
        // A bucket an object implied exists too.
        let implied = bucketName("implied")
        _ = try store.insertUploaded(draft("o", bucket: implied), conditions: .none, at: t10)
        let impliedAgain = #expect(throws: StorageError.self) {
            _ = try store.createBucket(implied, versioning: false, at: t10)
        }
        #expect(impliedAgain?.code == .alreadyExists)
        #expect(try store.createBucket(bucketName("plain"), versioning: false, at: t10).versioning == false)
        #expect(try store.buckets().map(\.name.rawValue) == ["implied", "plain", bucket.rawValue])
    }

    @Test(arguments: MetadataBackend.allCases)
    func updateBucketBumpsMetagenerationAndKeepsWhatTheStoreOwns(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let created = try store.createBucket(bucket, versioning: false, at: Timestamp(microseconds: 10))
        let enabled = try store.updateBucket(bucket, at: Timestamp(microseconds: 20)) { $0.versioning = true }
        #expect(
            enabled
                == BucketRecord(
                    name: bucket, timeCreated: created.timeCreated, updated: Timestamp(microseconds: 20),
                    metageneration: 2, versioning: true))
        #expect(try store.bucket(bucket) == enabled)
        // Edits to store-owned fields are ignored; the store sets them.
        let touched = try store.updateBucket(bucket, at: Timestamp(microseconds: 30)) {
            $0.metageneration = 99
            $0.timeCreated = Timestamp(microseconds: 0)
            $0.updated = Timestamp(microseconds: 0)
        }
        #expect(touched.metageneration == 3 && touched.timeCreated == created.timeCreated)
        #expect(touched.updated == Timestamp(microseconds: 30) && touched.versioning)
        #expect(try store.bucket(bucket) == touched)

        struct Refused: Error {}
        #expect(throws: Refused.self) {
            _ = try store.updateBucket(bucket, at: Timestamp(microseconds: 40)) {
                $0.versioning = false
                throw Refused()
            }
        }
        let renamed = #expect(throws: StorageError.self) {
            _ = try store.updateBucket(bucket, at: Timestamp(microseconds: 40)) { $0.name = bucketName("elsewhere") }
        }
        #expect(renamed?.code == .invalidArgument)
        #expect(try store.bucket(bucket) == touched, "refused updates write nothing")
        #expect(try store.bucket(bucketName("elsewhere")) == nil)
        let missing = #expect(throws: StorageError.self) {
            _ = try store.updateBucket(bucketName("missing"), at: .now()) { _ in }
        }
        #expect(missing?.code == .notFound)

        try fixture.reopen()
        #expect(try fixture.store.bucket(bucket) == touched)
    }

    @Test(arguments: MetadataBackend.allCases)
    func deleteBucketOnlyDeletesAnEmptyBucket(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let missing = #expect(throws: StorageError.self) { try store.deleteBucket(bucket) }
        #expect(missing?.code == .notFound)

        _ = try store.createBucket(bucket, versioning: true, at: Timestamp(microseconds: 1))
        let neighbour = try store.createBucket(
            bucketName("neighbour"), versioning: false, at: Timestamp(microseconds: 1))
        let neighbourObject = try store.insertUploaded(
            draft("n", bucket: neighbour.name), conditions: .none, at: Timestamp(microseconds: 2)
        ).stored
        let (first, _) = try store.insertUploaded(draft("v"), conditions: .none, at: Timestamp(microseconds: 3))
        let (second, _) = try store.insertUploaded(draft("v"), conditions: .none, at: Timestamp(microseconds: 4))
        func expectNotEmpty() throws {
            let error = #expect(throws: StorageError.self) { try store.deleteBucket(bucket) }
            #expect(error?.code == .conflict)
            #expect(error?.message == "The bucket you tried to delete is not empty: \(bucket.rawValue)")
            #expect(try store.bucket(bucket) != nil)
        }
        try expectNotEmpty()
        // Only noncurrent versions left: still not empty.
        _ = try store.deleteObject(bucket, second.name, generation: nil, conditions: .none)
        #expect(try store.object(bucket, second.name, generation: nil) == nil)
        try expectNotEmpty()
        _ = try store.deleteObject(bucket, first.name, generation: first.generation, conditions: .none)
        try expectNotEmpty()
        _ = try store.deleteObject(bucket, second.name, generation: second.generation, conditions: .none)

        let session = UploadSession(
            id: "in-deleted-bucket", bucket: bucket, name: objectName("s"), fields: ObjectFields(), declaredSize: nil,
            blobID: .random(), created: Timestamp(microseconds: 5))
        try store.insertSession(session)
        let pending = BlobID.random()
        try store.registerPendingBlob(pending, at: Timestamp(microseconds: 5))
        let garbageBefore = try Set(
            store.garbageBlobs(registeredBefore: Timestamp(microseconds: Int64.max), limit: 100))

        try store.deleteBucket(bucket)
        #expect(try store.bucket(bucket) == nil)
        #expect(try store.buckets() == [neighbour])
        // Nothing else is touched: other buckets' objects, sessions, garbage bookkeeping.
        #expect(try store.object(neighbour.name, neighbourObject.name, generation: nil) == neighbourObject)
        #expect(try store.session(id: session.id) == session)
        #expect(
            try Set(store.garbageBlobs(registeredBefore: Timestamp(microseconds: Int64.max), limit: 100))
                == garbageBefore)
        #expect(garbageBefore.isSuperset(of: [pending, first.blobID, second.blobID]))
        let again = #expect(throws: StorageError.self) { try store.deleteBucket(bucket) }
        #expect(again?.code == .notFound)
        // The name is free again, with fresh settings.
        #expect(try store.createBucket(bucket, versioning: false, at: Timestamp(microseconds: 9)).metageneration == 1)
    }

    // MARK: Versioning

    @Test(arguments: MetadataBackend.allCases)
    func versioningKeepsNoncurrentVersions(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        _ = try store.ensureBucket(bucket)
        #expect(try store.updateBucket(bucket, at: Timestamp(microseconds: 1)) { $0.versioning = true }.versioning)
        let name = objectName("v")
        let everything = Timestamp(microseconds: Int64.max)
        func versions() throws -> [ObjectRecord] {
            try store.listObjectVersions(bucket, prefix: "", startAfter: nil, limit: 100)
        }

        let (first, _) = try store.insertUploaded(draft("v"), conditions: .none, at: Timestamp(microseconds: 2))
        let (second, replaced) = try store.insertUploaded(draft("v"), conditions: .none, at: Timestamp(microseconds: 3))
        #expect(replaced == first)
        // The overwritten version stays, unchanged, readable by its generation and listed among the versions.
        #expect(try store.object(bucket, name, generation: nil) == second)
        #expect(try store.object(bucket, name, generation: first.generation) == first)
        #expect(try store.listObjects(bucket, prefix: "", startAfter: nil, limit: 100) == [second])
        #expect(try versions() == [first, second])
        #expect(try !store.garbageBlobs(registeredBefore: everything, limit: 100).contains(first.blobID))

        // Deleting a noncurrent generation removes it for good; its blob becomes garbage.
        #expect(try store.deleteObject(bucket, name, generation: first.generation, conditions: .none) == first)
        #expect(try store.object(bucket, name, generation: first.generation) == nil)
        #expect(try store.object(bucket, name, generation: nil) == second)
        #expect(try versions() == [second])
        #expect(try store.garbageBlobs(registeredBefore: everything, limit: 100).contains(first.blobID))

        // Deleting the live version keeps it as a noncurrent version: not live, not garbage.
        #expect(try store.deleteObject(bucket, name, generation: nil, conditions: .none) == second)
        #expect(try store.object(bucket, name, generation: nil) == nil)
        #expect(try store.object(bucket, name, generation: second.generation) == second)
        #expect(try store.listObjects(bucket, prefix: "", startAfter: nil, limit: 100) == [])
        #expect(try versions() == [second])
        #expect(try !store.garbageBlobs(registeredBefore: everything, limit: 100).contains(second.blobID))
        let noLive = #expect(throws: StorageError.self) {
            _ = try store.deleteObject(bucket, name, generation: nil, conditions: .none)
        }
        #expect(noLive?.code == .notFound)

        // A new live version replaces nothing live; ifGenerationMatch=0 sees only live versions.
        let (third, none) = try store.insertUploaded(
            draft("v"), conditions: .init(ifGenerationMatch: 0), at: Timestamp(microseconds: 4))
        #expect(none == nil)
        #expect(try versions() == [second, third])

        try fixture.reopen()
        #expect(
            try fixture.store.listObjectVersions(bucket, prefix: "", startAfter: nil, limit: 100) == [second, third])
    }

    // MARK: Generations

    @Test(arguments: MetadataBackend.allCases)
    func generationsStrictlyIncreaseEvenWithAFrozenClock(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let frozen = Timestamp(microseconds: 1_000_000)
        // Per name, as GCS promises: a store may give two names the same number (PostgreSQL's striped counters).
        var last: [String: Int64] = [:]
        for name in ["a", "a", "b", "a", "c", "a"] {
            let (stored, _) = try store.insertUploaded(draft(name), conditions: .none, at: frozen)
            #expect(stored.generation > last[name, default: 0])
            #expect(stored.generation >= frozen.microseconds)
            #expect(stored.metageneration == 1)
            #expect(stored.timeCreated == frozen && stored.updated == frozen)
            last[name] = stored.generation
        }
        // A generation follows the clock when the clock is ahead (microseconds, like GCS).
        let later = Timestamp(microseconds: 9_000_000)
        #expect(
            try store.insertUploaded(draft("a"), conditions: .none, at: later).stored.generation == later.microseconds)
        // ... and never goes back, even after the clock does or the name is deleted.
        _ = try store.deleteObject(bucket, objectName("a"), generation: nil, conditions: .none)
        #expect(
            try store.insertUploaded(draft("a"), conditions: .none, at: frozen).stored.generation == later.microseconds
                + 1)
    }

    @Test(arguments: MetadataBackend.allCases)
    func insertReturnsWhatItReplacedAndStoresEveryField(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        var first = draft("dir/file.txt")
        first.fields = ObjectFields(
            contentType: "image/png", contentEncoding: "gzip", contentDisposition: "inline", contentLanguage: "en",
            cacheControl: "no-cache", customTime: Timestamp(microseconds: 123_456_789),
            customMetadata: ["z": "1", "a": "é\"\\\n"], downloadTokens: ["t1", "t2"])
        first.componentCount = 3
        let (stored, replaced) = try store.insertUploaded(first, conditions: .none, at: Timestamp(microseconds: 5))
        #expect(replaced == nil)
        #expect(stored.fields == first.fields)
        #expect(stored.blob == first.blob && stored.blobID == first.blobID && stored.componentCount == 3)
        #expect(try store.object(bucket, first.name, generation: nil) == stored)
        #expect(try store.object(bucket, first.name, generation: stored.generation) == stored)
        #expect(try store.bucket(bucket) != nil, "an object implies its bucket")

        let (second, replacedNow) = try store.insertUploaded(
            draft("dir/file.txt"), conditions: .none, at: Timestamp(microseconds: 6))
        #expect(replacedNow == stored)
        #expect(try store.object(bucket, first.name, generation: nil) == second)
        #expect(
            try store.object(bucket, first.name, generation: stored.generation) == nil,
            "no versioning: old version gone")
        #expect(try store.object(bucket, objectName("dir"), generation: nil) == nil)
    }

    @Test(arguments: MetadataBackend.allCases)
    func metagenerationIncrementsOnUpdate(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let name = objectName("m")
        let (stored, _) = try store.insertUploaded(draft("m"), conditions: .none, at: Timestamp(microseconds: 10))
        let first = try store.updateObject(bucket, name, conditions: .none, at: Timestamp(microseconds: 20)) {
            $0.contentType = "application/json"
            $0.customMetadata["x"] = "y"
        }
        #expect(first.metageneration == 2 && first.generation == stored.generation)
        #expect(first.updated == Timestamp(microseconds: 20) && first.timeCreated == stored.timeCreated)
        #expect(first.fields.contentType == "application/json" && first.fields.customMetadata == ["k": "v", "x": "y"])
        let second = try store.updateObject(bucket, name, conditions: .none, at: Timestamp(microseconds: 30)) {
            $0.downloadTokens.append("token-2")
        }
        #expect(second.metageneration == 3)
        #expect(try store.object(bucket, name, generation: nil) == second)
        #expect(second.etag != first.etag)

        // A throwing change writes nothing.
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            _ = try store.updateObject(bucket, name, conditions: .none, at: Timestamp(microseconds: 40)) {
                $0.contentType = "nope"
                throw Refused()
            }
        }
        #expect(try store.object(bucket, name, generation: nil) == second)
        let missing = #expect(throws: StorageError.self) {
            _ = try store.updateObject(bucket, objectName("nothing"), conditions: .none, at: .now()) { _ in }
        }
        #expect(missing?.code == .notFound)
    }

    // MARK: Preconditions

    struct ConditionCase: Sendable, CustomStringConvertible {
        var description: String
        /// Builds conditions from the current live record (nil when the object does not exist).
        var make: @Sendable (ObjectRecord?) -> Preconditions
        var objectExists: Bool
        var passes: Bool
    }

    static let insertConditions: [ConditionCase] = [
        .init(
            description: "ifGenerationMatch=0 on absent", make: { _ in .init(ifGenerationMatch: 0) },
            objectExists: false, passes: true),
        .init(
            description: "ifGenerationMatch=0 on present", make: { _ in .init(ifGenerationMatch: 0) },
            objectExists: true, passes: false),
        .init(
            description: "ifGenerationMatch=current", make: { .init(ifGenerationMatch: $0!.generation) },
            objectExists: true, passes: true),
        .init(
            description: "ifGenerationMatch=other", make: { .init(ifGenerationMatch: $0!.generation + 1) },
            objectExists: true, passes: false),
        .init(
            description: "ifGenerationMatch=n on absent", make: { _ in .init(ifGenerationMatch: 42) },
            objectExists: false, passes: false),
        .init(
            description: "ifGenerationNotMatch=current", make: { .init(ifGenerationNotMatch: $0!.generation) },
            objectExists: true, passes: false),
        .init(
            description: "ifGenerationNotMatch=other", make: { .init(ifGenerationNotMatch: $0!.generation - 1) },
            objectExists: true, passes: true),
        .init(
            description: "ifMetagenerationMatch=current", make: { .init(ifMetagenerationMatch: $0!.metageneration) },
            objectExists: true, passes: true),
        .init(
            description: "ifMetagenerationMatch=other", make: { .init(ifMetagenerationMatch: $0!.metageneration + 1) },
            objectExists: true, passes: false),
        .init(
            description: "ifMetagenerationMatch on absent", make: { _ in .init(ifMetagenerationMatch: 1) },
            objectExists: false, passes: false),
        .init(
            description: "ifMetagenerationNotMatch=current",
            make: { .init(ifMetagenerationNotMatch: $0!.metageneration) }, objectExists: true, passes: false),
        .init(
            description: "ifMetagenerationNotMatch=other", make: { _ in .init(ifMetagenerationNotMatch: 99) },
            objectExists: true, passes: true),
        .init(
            description: "all four holding",
            make: {
                .init(
                    ifGenerationMatch: $0!.generation, ifGenerationNotMatch: $0!.generation + 1,
                    ifMetagenerationMatch: $0!.metageneration, ifMetagenerationNotMatch: $0!.metageneration + 1)
            }, objectExists: true, passes: true),
    ]

    @Test(arguments: MetadataBackend.allCases, insertConditions)
    func insertChecksPreconditionsInsideTheWrite(_ backend: MetadataBackend, _ condition: ConditionCase) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let name = objectName("p")
        var current: ObjectRecord?
        if condition.objectExists {
            _ = try store.insertUploaded(draft("p"), conditions: .none, at: Timestamp(microseconds: 1))
            current = try store.updateObject(bucket, name, conditions: .none, at: Timestamp(microseconds: 2)) { _ in }
        }
        let newDraft = draft("p")
        try store.registerPendingBlob(newDraft.blobID, at: Timestamp(microseconds: 0))
        let conditions = condition.make(current)
        if condition.passes {
            let (stored, replaced) = try store.insertUploaded(
                newDraft, conditions: conditions, at: Timestamp(microseconds: 3))
            #expect(replaced == current)
            #expect(try store.object(bucket, name, generation: nil) == stored)
        } else {
            let error = #expect(throws: StorageError.self) {
                _ = try store.insertUploaded(newDraft, conditions: conditions, at: Timestamp(microseconds: 3))
            }
            #expect(error?.code == .preconditionFailed)
            #expect(try store.object(bucket, name, generation: nil) == current, "a failed insert changes nothing")
            #expect(
                try store.garbageBlobs(registeredBefore: Timestamp(microseconds: 10), limit: 10) == [newDraft.blobID])
        }
    }

    @Test(arguments: MetadataBackend.allCases, insertConditions.filter(\.objectExists))
    func updateAndDeleteCheckPreconditions(_ backend: MetadataBackend, _ condition: ConditionCase) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let name = objectName("q")
        _ = try store.insertUploaded(draft("q"), conditions: .none, at: Timestamp(microseconds: 1))
        let current = try store.updateObject(bucket, name, conditions: .none, at: Timestamp(microseconds: 2)) { _ in }
        let conditions = condition.make(current)
        if condition.passes {
            let updated = try store.updateObject(bucket, name, conditions: conditions, at: .now()) {
                $0.cacheControl = "x"
            }
            // Metageneration moved on; rebuild the conditions against the new record for the delete.
            #expect(
                try store.deleteObject(bucket, name, generation: nil, conditions: condition.make(updated)) == updated)
            #expect(try store.object(bucket, name, generation: nil) == nil)
        } else {
            let updateError = #expect(throws: StorageError.self) {
                _ = try store.updateObject(bucket, name, conditions: conditions, at: .now()) { $0.cacheControl = "x" }
            }
            #expect(updateError?.code == .preconditionFailed)
            let deleteError = #expect(throws: StorageError.self) {
                _ = try store.deleteObject(bucket, name, generation: nil, conditions: conditions)
            }
            #expect(deleteError?.code == .preconditionFailed)
            #expect(try store.object(bucket, name, generation: nil) == current)
        }
    }

    // MARK: Listing

    @Test(arguments: MetadataBackend.allCases)
    func listingOrdersByUTF8Bytes(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let names = ["é", "a/b", "a\u{1F600}", "a-b", "b", "a", "A", "a/b/c", "\u{7F}", "日本"]
        for name in names { _ = try store.insertUploaded(draft(name), conditions: .none, at: .now()) }
        _ = try store.insertUploaded(draft("other", bucket: bucketName("other-bucket")), conditions: .none, at: .now())
        let listed = try store.listObjects(bucket, prefix: "", startAfter: nil, limit: 100).map(\.name.rawValue)
        // Byte order: 'A' 0x41 < 'a' 0x61 < "a-" 2D < "a/" 2F < "a😀" F0 < 'b' < DEL 7F < "é" C3 < "日" E6.
        #expect(listed == ["A", "a", "a-b", "a/b", "a/b/c", "a\u{1F600}", "b", "\u{7F}", "é", "日本"])
        #expect(listed == names.sorted { objectName($0) < objectName($1) })
    }

    @Test(arguments: MetadataBackend.allCases)
    func listingFiltersByPrefixSkipsWithStartAfterAndHonoursLimit(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        for name in ["a/1", "a/2", "a/b/1", "a/b/2", "a/b0", "a/c", "a0", "b", "a/\u{FFFF}x"] {
            _ = try store.insertUploaded(draft(name), conditions: .none, at: .now())
        }
        func list(_ prefix: String, _ startAfter: [UInt8]?, _ limit: Int = 100) throws -> [String] {
            try store.listObjects(bucket, prefix: prefix, startAfter: startAfter, limit: limit).map(\.name.rawValue)
        }
        #expect(try list("a/", nil) == ["a/1", "a/2", "a/b/1", "a/b/2", "a/b0", "a/c", "a/\u{FFFF}x"])
        #expect(try list("a/b/", nil) == ["a/b/1", "a/b/2"])
        #expect(try list("a/", Array("a/1".utf8)) == ["a/2", "a/b/1", "a/b/2", "a/b0", "a/c", "a/\u{FFFF}x"])
        // Skipping the whole "a/b/" "directory" with a 0xFF suffix, as delimiter listing does.
        #expect(try list("a/", Array("a/b/".utf8) + [0xFF]) == ["a/b0", "a/c", "a/\u{FFFF}x"])
        #expect(try list("", Array("a/".utf8) + [0xFF]) == ["a0", "b"])
        #expect(try list("a/", nil, 2) == ["a/1", "a/2"])
        #expect(try list("a/", Array("a/2".utf8), 2) == ["a/b/1", "a/b/2"])
        #expect(try list("a/", nil, 0) == [])
        #expect(try list("zzz", nil) == [])
        #expect(try list("a/", Array("a/z".utf8)) == ["a/\u{FFFF}x"])
        // A startAfter below the prefix does not widen the result.
        #expect(try list("b", Array("a".utf8)) == ["b"])
    }

    @Test(arguments: MetadataBackend.allCases)
    func versionListingOrdersByNameThenGenerationAndPagesByKey(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        _ = try store.createBucket(bucket, versioning: true, at: Timestamp(microseconds: 1))
        // A frozen clock: generations still increase in insertion order.
        let frozen = Timestamp(microseconds: 1)
        var generations: [String: [Int64]] = [:]
        for name in ["a", "a/b", "a", "b", "a/b", "a-", "é", "a"] {
            generations[name, default: []].append(
                try store.insertUploaded(draft(name), conditions: .none, at: frozen).stored.generation)
        }
        _ = try store.insertUploaded(draft("a", bucket: bucketName("other")), conditions: .none, at: frozen)
        _ = try store.deleteObject(bucket, objectName("b"), generation: nil, conditions: .none)  // b: noncurrent only

        func keys(_ records: [ObjectRecord]) -> [String] {
            records.map { "\($0.name.rawValue)#\($0.generation)" }
        }
        func expected(_ names: [String]) -> [String] {
            names.flatMap { name in generations[name]!.map { "\(name)#\($0)" } }
        }
        func list(_ prefix: String, _ startAfter: ObjectVersionKey?, _ limit: Int = 100) throws -> [String] {
            keys(try store.listObjectVersions(bucket, prefix: prefix, startAfter: startAfter, limit: limit))
        }
        func key(_ name: String, _ index: Int) -> ObjectVersionKey {
            ObjectVersionKey(name: Array(name.utf8), generation: generations[name]![index])
        }

        // Byte order of names ('-' 2D < '/' 2F), every generation ascending, live or not.
        let all = try store.listObjectVersions(bucket, prefix: "", startAfter: nil, limit: 100)
        #expect(keys(all) == expected(["a", "a-", "a/b", "b", "é"]))
        #expect(all.filter { $0.name.rawValue == "a" }.count == 3)
        #expect(try list("a/", nil) == expected(["a/b"]))
        #expect(try list("a", nil) == expected(["a", "a-", "a/b"]))
        #expect(try list("zzz", nil) == [])
        // Strictly after the key: later generations of the same name, then later names.
        #expect(try list("", key("a", 0)) == Array(expected(["a", "a-", "a/b", "b", "é"]).dropFirst()))
        #expect(try list("", key("a", 2)) == expected(["a-", "a/b", "b", "é"]))
        #expect(
            try list("", ObjectVersionKey(name: Array("a".utf8), generation: .max))
                == expected(["a-", "a/b", "b", "é"]))
        #expect(try list("", ObjectVersionKey(name: Array("a0".utf8), generation: .min)) == expected(["b", "é"]))
        // A key below the prefix does not widen the result; one past it empties it.
        #expect(try list("b", key("a", 1)) == expected(["b"]))
        #expect(try list("a/", key("b", 0)) == [])
        #expect(try list("", nil, 0) == [])

        // Paging through token bytes, two at a time, yields exactly the full listing.
        var paged: [ObjectRecord] = []
        var token: [UInt8]? = nil
        while true {
            let startAfter = try token.map { try #require(ObjectVersionKey(bytes: $0)) }
            let page = try store.listObjectVersions(bucket, prefix: "", startAfter: startAfter, limit: 2)
            paged += page
            guard page.count == 2, let last = page.last else { break }
            token = ObjectVersionKey(last).bytes
        }
        #expect(paged == all)
    }

    @Test(arguments: MetadataBackend.allCases)
    func deletingRemovesFromLookupAndListing(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let (kept, _) = try store.insertUploaded(draft("keep"), conditions: .none, at: .now())
        let (gone, _) = try store.insertUploaded(draft("gone"), conditions: .none, at: .now())
        #expect(try store.deleteObject(bucket, gone.name, generation: nil, conditions: .none) == gone)
        #expect(try store.object(bucket, gone.name, generation: nil) == nil)
        #expect(try store.listObjects(bucket, prefix: "", startAfter: nil, limit: 10) == [kept])
        let again = #expect(throws: StorageError.self) {
            _ = try store.deleteObject(bucket, gone.name, generation: nil, conditions: .none)
        }
        #expect(again?.code == .notFound)
        let wrongGeneration = #expect(throws: StorageError.self) {
            _ = try store.deleteObject(bucket, kept.name, generation: kept.generation + 1, conditions: .none)
        }
        #expect(wrongGeneration?.code == .notFound)
        #expect(try store.deleteObject(bucket, kept.name, generation: kept.generation, conditions: .none) == kept)
        #expect(try store.listObjects(bucket, prefix: "", startAfter: nil, limit: 10) == [])
        // The name can be used again.
        _ = try store.insertUploaded(draft("gone"), conditions: .init(ifGenerationMatch: 0), at: .now())
    }

    // MARK: Sessions

    @Test(arguments: MetadataBackend.allCases)
    func sessionsCRUDAndExpiryQuery(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        var session = UploadSession(
            id: RandomID.sessionID(), bucket: bucket, name: objectName("up/load é.bin"),
            fields: ObjectFields(contentType: "video/mp4", customMetadata: ["a": "b"], downloadTokens: ["tok"]),
            declaredSize: 1 << 40, blobID: .random(), conditions: .init(ifGenerationMatch: 0),
            starter: Principal(
                scheme: "Bearer", credential: "silo1.not-stored", uid: nil, claimsJSON: #"{"email":"sa@x.test"}"#,
                isAdmin: false, verified: true,
                serviceAccount: ServiceAccountCaller(email: "sa@x.test", scopes: ["s"], credential: .signedURL)),
            created: Timestamp(microseconds: 100), api: .gcs)
        session.expectedMD5 = "md5=="
        #expect(session.starter?.credential == "", "a session never holds its starter's credential")
        try store.insertSession(session)
        #expect(try store.session(id: session.id) == session)
        #expect(try store.session(id: session.id)?.api == .gcs)
        let duplicate = #expect(throws: StorageError.self) { try store.insertSession(session) }
        #expect(duplicate?.code == .alreadyExists)

        let older = UploadSession(
            id: RandomID.sessionID(), bucket: bucket, name: objectName("old"), fields: ObjectFields(),
            declaredSize: nil,
            blobID: .random(), created: Timestamp(microseconds: 50))
        try store.insertSession(older)
        #expect(try store.session(id: older.id)?.api == .firebase, "the initializer defaults to Firebase")

        let updated = try store.updateSession(id: session.id) {
            $0.received = 4096
            $0.updated = Timestamp(microseconds: 200)
            $0.state = .finalized
            $0.resultGeneration = 77
            $0.failureStatus = 412
            $0.failureMessage = "nope"
            $0.expectedCRC32C = "crc=="
        }
        #expect(updated.received == 4096 && updated.state == .finalized && updated.resultGeneration == 77)
        #expect(try store.session(id: session.id) == updated)

        #expect(try store.sessions(updatedBefore: Timestamp(microseconds: 150)).map(\.id) == [older.id])
        #expect(
            try Set(store.sessions(updatedBefore: Timestamp(microseconds: 201)).map(\.id)) == [older.id, session.id])
        #expect(try store.sessions(updatedBefore: Timestamp(microseconds: 50)).isEmpty)

        let missing = #expect(throws: StorageError.self) { _ = try store.updateSession(id: "nope") { _ in } }
        #expect(missing?.code == .notFound)
        try store.deleteSession(id: session.id)
        #expect(try store.session(id: session.id) == nil)
        try store.deleteSession(id: session.id)  // idempotent
        #expect(try store.session(id: older.id) == older)
    }

    /// What `/metrics` reports as open uploads: every caller's active sessions and their bytes; finished, failed and
    /// deleted ones are not counted.
    @Test(arguments: MetadataBackend.allCases)
    func activeSessionTotalsCountEveryCaller(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        #expect(try store.activeSessionTotals() == SessionUsage(sessions: 0, bytes: 0))
        var ids: [String] = []
        for (index, caller) in ["alice", "bob", "bob"].enumerated() {
            var session = UploadSession(
                id: RandomID.sessionID(), bucket: bucket, name: objectName("open/\(index)"), fields: ObjectFields(),
                declaredSize: nil, blobID: .random(), created: Timestamp(microseconds: 100))
            session.caller = caller
            session.received = Int64(1000 * (index + 1))
            try store.insertSession(session)
            ids.append(session.id)
        }
        #expect(try store.activeSessionTotals() == SessionUsage(sessions: 3, bytes: 6000))
        _ = try store.updateSession(id: ids[0]) { $0.state = .finalized }
        try store.deleteSession(id: ids[1])
        #expect(try store.activeSessionTotals() == SessionUsage(sessions: 1, bytes: 3000))
    }

    /// The parts of an XML multipart upload are sessions under one id prefix; they come back in id order (bytes),
    /// in pages, with their part checksums, and nothing outside the prefix does.
    @Test(arguments: MetadataBackend.allCases)
    func sessionsByIdPrefixInIdOrder(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        func session(_ id: String, part: Int? = nil) -> UploadSession {
            var made = UploadSession(
                id: id, bucket: bucket, name: objectName("o"), fields: ObjectFields(), declaredSize: nil,
                blobID: .random(), created: Timestamp(microseconds: 10), api: part == nil ? .xmlMultipart : .xmlPart)
            made.part = part.map { UploadPart(number: $0, md5: Array(repeating: UInt8($0), count: 16), crc32c: 7) }
            return made
        }
        // Inserted out of order; "u1/" must not see "u10/" nor "u1" itself.
        for id in ["u1/00003", "u10/00001", "u1/00001", "u1", "u0/00009", "u1/00002"] {
            try store.insertSession(session(id, part: id.contains("/") ? Int(id.suffix(5)) : nil))
        }
        let all = try store.sessions(idPrefix: "u1/", after: nil, limit: 10)
        #expect(all.map(\.id) == ["u1/00001", "u1/00002", "u1/00003"])
        #expect(all.map { $0.part?.number } == [1, 2, 3])
        #expect(all[1].part == UploadPart(number: 2, md5: Array(repeating: 2, count: 16), crc32c: 7))
        #expect(try store.sessions(idPrefix: "u1/", after: nil, limit: 2).map(\.id) == ["u1/00001", "u1/00002"])
        #expect(try store.sessions(idPrefix: "u1/", after: "u1/00002", limit: 2).map(\.id) == ["u1/00003"])
        #expect(try store.sessions(idPrefix: "u1/", after: "u1/00003", limit: 2).isEmpty)
        #expect(try store.sessions(idPrefix: "u1/", after: nil, limit: 0).isEmpty)
        #expect(try store.sessions(idPrefix: "v/", after: nil, limit: 5).isEmpty)
        let badPrefix = #expect(throws: StorageError.self) {
            _ = try store.sessions(idPrefix: "", after: nil, limit: 1)
        }
        #expect(badPrefix?.code == .invalidArgument)
    }

    @Test(arguments: MetadataBackend.allCases)
    func insertFinalizingASessionIsOneStepAndHappensOnce(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let blob = BlobID.random()
        try store.registerPendingBlob(blob, at: Timestamp(microseconds: 1))
        let session = UploadSession(
            id: RandomID.sessionID(), bucket: bucket, name: objectName("final"), fields: ObjectFields(),
            declaredSize: 3, blobID: blob, created: Timestamp(microseconds: 10))
        try store.insertSession(session)
        let (stored, replaced) = try store.insertObject(
            draft("final", bucket: bucket, blobID: blob), conditions: .none, at: Timestamp(microseconds: 20),
            finalizing: session.id)
        #expect(replaced == nil)
        let final = try #require(try store.session(id: session.id))
        #expect(final.state == .finalized)
        #expect(final.resultGeneration == stored.generation)
        #expect(final.updated == Timestamp(microseconds: 20))
        // A second finalize of the same session writes nothing: the blob is committed once.
        let again = #expect(throws: StorageError.self) {
            _ = try store.insertObject(
                draft("final", bucket: bucket, blobID: blob), conditions: .none, at: Timestamp(microseconds: 30),
                finalizing: session.id)
        }
        #expect(again?.code == .conflict)
        #expect(try store.object(bucket, objectName("final"), generation: nil) == stored)
        let missing = #expect(throws: StorageError.self) {
            _ = try store.insertObject(
                draft("other", bucket: bucket), conditions: .none, at: Timestamp(microseconds: 40),
                finalizing: "no-such-session")
        }
        #expect(missing?.code == .notFound)
        #expect(try store.object(bucket, objectName("other"), generation: nil) == nil)
    }

    @Test(arguments: MetadataBackend.allCases)
    func blobReferencesCountVersionsAndActiveSessions(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let live = BlobID.random()
        let sessionBlob = BlobID.random()
        #expect(try !store.isBlobReferenced(live))
        _ = try store.insertUploaded(
            draft("r", bucket: bucket, blobID: live), conditions: .none, at: Timestamp(microseconds: 5))
        #expect(try store.isBlobReferenced(live))
        let session = UploadSession(
            id: RandomID.sessionID(), bucket: bucket, name: objectName("s"), fields: ObjectFields(), declaredSize: nil,
            blobID: sessionBlob, created: Timestamp(microseconds: 6))
        try store.insertSession(session)
        #expect(try store.isBlobReferenced(sessionBlob))
        _ = try store.updateSession(id: session.id) { $0.state = .cancelled }
        #expect(try !store.isBlobReferenced(sessionBlob))
        _ = try store.deleteObject(bucket, objectName("r"), generation: nil, conditions: .none)
        #expect(try !store.isBlobReferenced(live))
    }

    // MARK: Garbage bookkeeping

    @Test(arguments: MetadataBackend.allCases)
    func pendingBlobsBecomeGarbageOnlyWhenUnreferencedAndOld(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let t0 = Timestamp(microseconds: 1_000)
        let t1 = Timestamp(microseconds: 2_000)
        let orphan = BlobID.random()
        let committed = draft("obj")
        let sessionBlob = BlobID.random()
        for id in [orphan, committed.blobID, sessionBlob] { try store.registerPendingBlob(id, at: t0) }
        #expect(try store.garbageBlobs(registeredBefore: t0, limit: 10) == [], "not before the grace period ends")

        _ = try store.insertUploaded(committed, conditions: .none, at: t1)
        var session = UploadSession(
            id: "s1", bucket: bucket, name: objectName("s"), fields: ObjectFields(), declaredSize: nil,
            blobID: sessionBlob,
            created: t0)
        try store.insertSession(session)
        #expect(try store.garbageBlobs(registeredBefore: t1, limit: 10) == [orphan])

        // The session ends without an object: its blob is garbage now.
        session = try store.updateSession(id: "s1") { $0.state = .cancelled }
        #expect(try Set(store.garbageBlobs(registeredBefore: t1, limit: 10)) == [orphan, sessionBlob])
        #expect(try store.garbageBlobs(registeredBefore: t1, limit: 1).count == 1)

        // Replacing the object makes the old blob garbage (registered at the replacement time).
        let replacement = draft("obj")
        let t2 = Timestamp(microseconds: 3_000)
        _ = try store.insertUploaded(replacement, conditions: .none, at: t2)
        #expect(try !store.garbageBlobs(registeredBefore: t2, limit: 10).contains(committed.blobID))
        #expect(
            try store.garbageBlobs(registeredBefore: Timestamp(microseconds: 3_001), limit: 10).contains(
                committed.blobID))
        #expect(try !store.garbageBlobs(registeredBefore: .now(), limit: 10).contains(replacement.blobID))

        // Deleting the object makes its blob garbage.
        _ = try store.deleteObject(bucket, replacement.name, generation: nil, conditions: .none)
        #expect(
            try store.garbageBlobs(registeredBefore: Timestamp(microseconds: Int64.max), limit: 10).contains(
                replacement.blobID))

        for id in [orphan, sessionBlob, committed.blobID, replacement.blobID] { try store.forgetBlob(id) }
        #expect(try store.garbageBlobs(registeredBefore: Timestamp(microseconds: Int64.max), limit: 10) == [])
        try store.forgetBlob(orphan)  // idempotent
    }

    @Test(arguments: MetadataBackend.allCases)
    func aBlobReusedByTheNewVersionIsNotGarbage(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let first = draft("same")
        _ = try store.insertUploaded(first, conditions: .none, at: Timestamp(microseconds: 1))
        // A metadata rewrite that keeps the blob (copy onto itself): the blob is not on the garbage list but its
        // version references it, so the commit may take it, and it stays referenced.
        _ = try store.insertObject(first, conditions: .none, at: Timestamp(microseconds: 2))
        #expect(try store.garbageBlobs(registeredBefore: Timestamp(microseconds: Int64.max), limit: 10) == [])
    }

    @Test(arguments: MetadataBackend.allCases)
    func aBlobClaimedForCollectionCannotBeCommitted(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let upload = draft("late")
        try store.registerPendingBlob(upload.blobID, at: Timestamp(microseconds: 1_000))
        #expect(
            try !store.claimGarbageBlob(upload.blobID, registeredBefore: Timestamp(microseconds: 1_000), at: .now()))
        #expect(try store.claimGarbageBlob(upload.blobID, registeredBefore: Timestamp(microseconds: 1_001), at: .now()))
        // Claimed, its bytes may be half gone: the commit must not acknowledge them, and writes nothing.
        let claimed = #expect(throws: StorageError.self) {
            _ = try store.insertObject(upload, conditions: .none, at: Timestamp(microseconds: 2_000))
        }
        #expect(claimed?.code == .unavailable)
        #expect(try store.object(bucket, upload.name, generation: nil) == nil)
        // A second claim (another node's pass, or a pass after a crash) finds it claimed and finishes the job.
        #expect(try store.claimGarbageBlob(upload.blobID, registeredBefore: nil, at: .now()))
        #expect(try store.garbageBlobs(registeredBefore: Timestamp(microseconds: 1_001), limit: 10) == [upload.blobID])
        // Deleted and forgotten: a commit of it still fails.
        try store.forgetBlob(upload.blobID)
        let forgotten = #expect(throws: StorageError.self) {
            _ = try store.insertObject(upload, conditions: .none, at: Timestamp(microseconds: 3_000))
        }
        #expect(forgotten?.code == .unavailable)
        #expect(try store.object(bucket, upload.name, generation: nil) == nil)
        #expect(try !store.claimGarbageBlob(upload.blobID, registeredBefore: nil, at: .now()))
    }

    @Test(arguments: MetadataBackend.allCases)
    func onlyUnreferencedBlobsAreHandedOver(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let (t0, t1, t2) = (
            Timestamp(microseconds: 1_000), Timestamp(microseconds: 2_000), Timestamp(microseconds: 3_000)
        )
        // Committed: off the list, referenced.
        let committed = try store.insertUploaded(draft("kept"), conditions: .none, at: t0).stored
        #expect(try !store.claimGarbageBlob(committed.blobID, registeredBefore: nil, at: t1))
        // An active session's blob stays however old; once the session is cancelled it goes.
        let sessionBlob = BlobID.random()
        try store.registerPendingBlob(sessionBlob, at: t0)
        try store.insertSession(
            UploadSession(
                id: "open", bucket: bucket, name: objectName("s"), fields: ObjectFields(), declaredSize: nil,
                blobID: sessionBlob, created: t0))
        #expect(try !store.claimGarbageBlob(sessionBlob, registeredBefore: t2, at: t2))
        _ = try store.updateSession(id: "open") { $0.state = .cancelled }
        #expect(try store.claimGarbageBlob(sessionBlob, registeredBefore: t2, at: t2))
        // A noncurrent version and a soft-deleted one keep their blobs; a version replaced for good gives it up.
        let versioned = bucketName("versioned-claims")
        _ = try store.createBucket(versioned, versioning: true, at: t0)
        let old = try store.insertUploaded(draft("v", bucket: versioned), conditions: .none, at: t0).stored
        _ = try store.insertUploaded(draft("v", bucket: versioned), conditions: .none, at: t1)
        #expect(try !store.claimGarbageBlob(old.blobID, registeredBefore: nil, at: t2))
        let soft = try store.insertUploaded(draft("soft"), conditions: .none, at: t0).stored
        _ = try store.deleteObject(
            bucket, soft.name, generation: nil, conditions: .none,
            softDeletion: SoftDeletion(at: t1, hardDeleteAt: Timestamp(microseconds: 10_000)))
        #expect(try !store.claimGarbageBlob(soft.blobID, registeredBefore: nil, at: t2))
        let replaced = try store.insertUploaded(draft("plain"), conditions: .none, at: t0).stored
        _ = try store.insertUploaded(draft("plain"), conditions: .none, at: t1)
        #expect(try !store.claimGarbageBlob(replaced.blobID, registeredBefore: t1, at: t2), "registered at t1")
        #expect(try store.claimGarbageBlob(replaced.blobID, registeredBefore: nil, at: t2))
        // Not on the list at all: nothing to hand over.
        #expect(try !store.claimGarbageBlob(.random(), registeredBefore: nil, at: t2))
    }

    /// The property a collection racing commits relies on, on every node: for each uploaded blob, exactly one of
    /// its commit and a collection's claim wins; a commit never succeeds on a blob a claim was given.
    @Test(arguments: MetadataBackend.allCases)
    func commitsAndClaimsOfOneBlobExcludeEachOther(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let rounds = 40
        let uploads = (0..<rounds).map { draft("race-\($0)") }
        for upload in uploads { try store.registerPendingBlob(upload.blobID, at: Timestamp(microseconds: 1)) }
        let committed = Mutex<Set<BlobID>>([])
        let claimed = Mutex<Set<BlobID>>([])
        let failures = Mutex<[String]>([])
        onThreads(4) { thread in
            for (index, upload) in uploads.enumerated() where index % 2 == thread % 2 {
                do {
                    if thread < 2 {
                        _ = try store.insertObject(upload, conditions: .none, at: Timestamp(microseconds: 10))
                        committed.withLock { _ = $0.insert(upload.blobID) }
                    } else if try store.claimGarbageBlob(upload.blobID, registeredBefore: nil, at: .now()) {
                        claimed.withLock { _ = $0.insert(upload.blobID) }
                    }
                } catch let error as StorageError where error.code == .unavailable {
                    // The claim won: the commit lost, as it must.
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let (won, taken) = (committed.withLock { $0 }, claimed.withLock { $0 })
        #expect(won.isDisjoint(with: taken), "a blob both committed and handed over for deletion")
        #expect(won.union(taken) == Set(uploads.map(\.blobID)), "each blob went one way")
        for upload in uploads {
            let live = try store.object(bucket, upload.name, generation: nil)
            #expect((live != nil) == won.contains(upload.blobID))
        }
    }

    @Test(arguments: MetadataBackend.allCases)
    func resetDropsEverythingAndTurnsBlobsIntoGarbage(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let a = draft("a")
        let b = draft("b", bucket: bucketName("second"))
        _ = try store.insertUploaded(a, conditions: .none, at: .now())
        _ = try store.insertUploaded(b, conditions: .none, at: .now())
        let session = UploadSession(
            id: "s", bucket: bucket, name: objectName("s"), fields: ObjectFields(), declaredSize: nil,
            blobID: .random(),
            created: .now())
        try store.insertSession(session)
        try store.reset()
        #expect(try store.buckets() == [])
        #expect(try store.object(bucket, a.name, generation: nil) == nil)
        #expect(try store.listObjects(bucket, prefix: "", startAfter: nil, limit: 10) == [])
        #expect(try store.session(id: "s") == nil)
        fixture.clock.advance(seconds: 1)
        let garbage = try store.garbageBlobs(registeredBefore: fixture.clock.now(), limit: 10)
        #expect(Set(garbage) == [a.blobID, b.blobID, session.blobID])
        // Generations keep increasing after a reset.
        let before = try #require(Optional(Int64(0)))
        #expect(
            try store.insertUploaded(draft("a"), conditions: .none, at: Timestamp(microseconds: 1)).stored.generation
                > before)
    }

    // MARK: Concurrency

    @Test(arguments: MetadataBackend.allCases)
    func concurrentInsertsOnOneNameAllSucceedWithDistinctGenerations(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let perThread = 25
        let results = Mutex<[Int: [Int64]]>([:])
        let failures = Mutex<[String]>([])
        onThreads(8) { thread in
            var generations: [Int64] = []
            for _ in 0..<perThread {
                do {
                    let (stored, _) = try store.insertUploaded(
                        draft("hot"), conditions: .none, at: Timestamp(microseconds: 7))
                    generations.append(stored.generation)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            results.withLock { $0[thread] = generations }
        }
        #expect(failures.withLock { $0 } == [])
        let all = results.withLock { $0 }
        for generations in all.values {
            #expect(generations == generations.sorted() && Set(generations).count == perThread)
        }
        let flat = all.values.flatMap { $0 }
        #expect(flat.count == 8 * perThread && Set(flat).count == flat.count)
        let live = try #require(try store.object(bucket, objectName("hot"), generation: nil))
        #expect(live.generation == flat.max())
        // Every replaced version's blob is garbage; only the live one is not.
        let garbage = try store.garbageBlobs(registeredBefore: Timestamp(microseconds: Int64.max), limit: 1000)
        #expect(garbage.count == flat.count - 1 && !garbage.contains(live.blobID))
    }

    @Test(arguments: MetadataBackend.allCases)
    func readsRunDuringWrites(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        for i in 0..<50 { _ = try store.insertUploaded(draft("r/\(i)"), conditions: .none, at: .now()) }
        let problems = Mutex<[String]>([])
        onThreads(6) { thread in
            do {
                if thread < 2 {
                    for i in 0..<100 {
                        _ = try store.insertUploaded(draft("w\(thread)/\(i % 10)"), conditions: .none, at: .now())
                        _ = try store.updateObject(
                            bucketName(), objectName("r/\(i % 50)"), conditions: .none, at: .now()
                        ) {
                            $0.customMetadata["n"] = "\(i)"
                        }
                    }
                } else {
                    for i in 0..<200 {
                        guard try store.object(bucketName(), objectName("r/\(i % 50)"), generation: nil) != nil else {
                            problems.withLock { $0.append("r/\(i % 50) missing") }
                            continue
                        }
                        let page = try store.listObjects(bucketName(), prefix: "r/", startAfter: nil, limit: 100)
                        if page.count != 50 { problems.withLock { $0.append("listed \(page.count)") } }
                    }
                }
            } catch {
                problems.withLock { $0.append("\(error)") }
            }
        }
        #expect(problems.withLock { $0 } == [])
    }

    // MARK: Persistence

    @Test(arguments: MetadataBackend.allCases)
    func everythingSurvivesReopen(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        guard fixture.canReopen else { return }
        let (stored, _) = try fixture.store.insertUploaded(
            draft("persist/é"), conditions: .none, at: Timestamp(microseconds: 5))
        let updated = try fixture.store.updateObject(
            bucket, stored.name, conditions: .none, at: Timestamp(microseconds: 6)
        ) {
            $0.customMetadata["after"] = "update"
        }
        let session = UploadSession(
            id: "persisted", bucket: bucket, name: objectName("s"), fields: ObjectFields(), declaredSize: 10,
            blobID: .random(), created: Timestamp(microseconds: 7))
        try fixture.store.insertSession(session)
        let pending = BlobID.random()
        try fixture.store.registerPendingBlob(pending, at: Timestamp(microseconds: 8))
        let buckets = try fixture.store.buckets()

        try fixture.reopen()
        let store = fixture.store
        #expect(try store.object(bucket, stored.name, generation: nil) == updated)
        #expect(try store.session(id: "persisted") == session)
        #expect(try store.buckets() == buckets)
        #expect(try store.garbageBlobs(registeredBefore: Timestamp(microseconds: 9), limit: 10) == [pending])
        // The generation counter is restored too: a frozen clock still moves the name forward.
        #expect(
            try store.insertUploaded(draft(stored.name.rawValue), conditions: .none, at: Timestamp(microseconds: 1))
                .stored.generation > updated.generation)
    }

    // MARK: GCS object semantics

    @Test(arguments: MetadataBackend.allCases)
    func moveRenamesInOneStepWithConditionsOnBothEnds(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let t = Timestamp(microseconds: 1_000)
        let (source, _) = try store.insertUploaded(draft("src"), conditions: .none, at: t)
        let (target, _) = try store.insertUploaded(draft("dst"), conditions: .none, at: t)
        // A failed source condition or destination condition changes nothing.
        let wrongSource = #expect(throws: StorageError.self) {
            _ = try store.moveObject(
                bucket, from: source.name, to: target.name,
                sourceConditions: Preconditions(ifGenerationMatch: source.generation + 1), destinationConditions: .none,
                at: t)
        }
        #expect(wrongSource?.code == .preconditionFailed)
        let wrongDestination = #expect(throws: StorageError.self) {
            _ = try store.moveObject(
                bucket, from: source.name, to: target.name, sourceConditions: .none,
                destinationConditions: Preconditions(ifGenerationMatch: 0), at: t)
        }
        #expect(wrongDestination?.code == .preconditionFailed)
        #expect(try store.object(bucket, source.name, generation: nil) == source)
        let (moved, replaced) = try store.moveObject(
            bucket, from: source.name, to: target.name,
            sourceConditions: Preconditions(ifGenerationMatch: source.generation, ifMetagenerationMatch: 1),
            destinationConditions: Preconditions(ifGenerationMatch: target.generation), at: t)
        #expect(replaced == target)
        #expect(moved.name == target.name && moved.blobID == source.blobID && moved.fields == source.fields)
        #expect(moved.generation > target.generation && moved.metageneration == 1)
        #expect(try store.object(bucket, source.name, generation: nil) == nil)
        #expect(try store.object(bucket, target.name, generation: nil) == moved)
        // The moved bytes are referenced; the replaced version's are not.
        #expect(try store.isBlobReferenced(source.blobID))
        #expect(try !store.isBlobReferenced(target.blobID))
        let gone = #expect(throws: StorageError.self) {
            _ = try store.moveObject(
                bucket, from: source.name, to: objectName("other"), sourceConditions: .none,
                destinationConditions: .none, at: t)
        }
        #expect(gone?.code == .notFound)
    }

    @Test(arguments: MetadataBackend.allCases)
    func metadataOfANoncurrentGenerationCanChange(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        _ = try store.createBucket(bucket, versioning: true, at: Timestamp(microseconds: 1))
        let (old, _) = try store.insertUploaded(draft("v"), conditions: .none, at: Timestamp(microseconds: 10))
        let (live, _) = try store.insertUploaded(draft("v"), conditions: .none, at: Timestamp(microseconds: 20))
        let patched = try store.updateObject(
            bucket, old.name, generation: old.generation, conditions: Preconditions(ifGenerationMatch: old.generation),
            at: Timestamp(microseconds: 30)
        ) {
            $0.contentLanguage = "en"
            $0.extras.temporaryHold = true
            $0.extras.storageClass = "NEARLINE"
            $0.extras.contexts = #"{"custom":{}}"#
        }
        #expect(patched.generation == old.generation && patched.metageneration == 2)
        #expect(try store.object(bucket, old.name, generation: old.generation) == patched)
        #expect(try store.object(bucket, old.name, generation: nil) == live, "the live version is untouched")
        #expect(patched.fields.extras.isHeld && patched.fields.extras.storageClass == "NEARLINE")
        let missing = #expect(throws: StorageError.self) {
            _ = try store.updateObject(bucket, old.name, generation: 1, conditions: .none, at: .now()) { _ in }
        }
        #expect(missing?.code == .notFound)
    }

    @Test(arguments: MetadataBackend.allCases)
    func protectedVersionsRefuseDeleteAndReplaceInTheStore(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        var held = draft("held")
        held.fields.extras.eventBasedHold = true
        let t = Timestamp(microseconds: 1_000_000)
        let (record, _) = try store.insertUploaded(held, conditions: .none, at: t)
        let protection = Preconditions.Protection(now: t, retentionSeconds: 0)
        for attempt in 0..<2 {
            let error = #expect(throws: StorageError.self) {
                if attempt == 0 {
                    _ = try store.deleteObject(
                        bucket, record.name, generation: nil, conditions: Preconditions.none.protecting(protection))
                } else {
                    _ = try store.insertUploaded(
                        draft("held"), conditions: Preconditions.none.protecting(protection), at: t)
                }
            }
            #expect(error?.code == .permissionDenied)
        }
        _ = try store.updateObject(bucket, record.name, conditions: .none, at: t) { $0.extras.eventBasedHold = false }
        // The bucket's retention period protects a version until it has passed.
        let young = Preconditions.none.protecting(.init(now: t, retentionSeconds: 10))
        let retained = #expect(throws: StorageError.self) {
            _ = try store.deleteObject(bucket, record.name, generation: nil, conditions: young)
        }
        #expect(retained?.code == .permissionDenied)
        let later = Preconditions.none.protecting(.init(now: Timestamp(microseconds: 12_000_000), retentionSeconds: 10))
        _ = try store.deleteObject(bucket, record.name, generation: nil, conditions: later)
        #expect(try store.object(bucket, record.name, generation: nil) == nil)
    }

    @Test(arguments: MetadataBackend.allCases)
    func softDeletedVersionsAreKeptRestoredAndPurged(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let t = Timestamp(microseconds: 1_000_000)
        let keep = SoftDeletion(at: t, hardDeleteAt: Timestamp(microseconds: 5_000_000))
        let (first, _) = try store.insertUploaded(draft("a/one"), conditions: .none, at: t)
        let (second, _) = try store.insertUploaded(draft("a/two"), conditions: .none, at: t)
        _ = try store.deleteObject(bucket, first.name, generation: nil, conditions: .none, softDeletion: keep)
        _ = try store.deleteObject(bucket, second.name, generation: nil, conditions: .none, softDeletion: keep)
        #expect(try store.object(bucket, first.name, generation: first.generation) == nil)
        #expect(try store.listObjectVersions(bucket, prefix: "", startAfter: nil, limit: 10).isEmpty)
        #expect(try store.isBlobReferenced(first.blobID), "a soft-deleted version keeps its bytes")
        #expect(
            try store.garbageBlobs(registeredBefore: Timestamp(microseconds: .max), limit: 10).contains(first.blobID)
                == false)
        let listed = try store.softDeletedObjects(bucket, prefix: "a/", startAfter: nil, limit: 10)
        #expect(listed.map(\.record) == [first, second] && listed.allSatisfy { $0.deletion == keep })
        #expect(
            try store.softDeletedObjects(bucket, prefix: "", startAfter: ObjectVersionKey(first), limit: 10).map(
                \.record)
                == [second])
        #expect(try store.softDeletedObject(bucket, first.name, generation: first.generation)?.record == first)
        // Restore: a new live generation with the same bytes and metadata; the soft-deleted entry is gone.
        let (restored, replaced) = try store.restoreObject(
            bucket, first.name, generation: first.generation, conditions: Preconditions(ifGenerationMatch: 0),
            at: Timestamp(microseconds: 2_000_000))
        #expect(replaced == nil && restored.generation > first.generation && restored.metageneration == 1)
        #expect(restored.blobID == first.blobID && restored.fields == first.fields)
        #expect(try store.object(bucket, first.name, generation: nil) == restored)
        #expect(try store.softDeletedObject(bucket, first.name, generation: first.generation) == nil)
        let again = #expect(throws: StorageError.self) {
            _ = try store.restoreObject(
                bucket, first.name, generation: first.generation, conditions: .none, at: .now())
        }
        #expect(again?.code == .notFound)
        // Purge: only what is due; its bytes become garbage.
        #expect(try store.purgeSoftDeleted(hardDeletedBy: Timestamp(microseconds: 4_999_999), limit: 10) == 0)
        #expect(try store.purgeSoftDeleted(hardDeletedBy: Timestamp(microseconds: 5_000_000), limit: 10) == 1)
        #expect(try store.softDeletedObjects(bucket, prefix: "", startAfter: nil, limit: 10).isEmpty)
        #expect(try !store.isBlobReferenced(second.blobID))
        #expect(
            try store.garbageBlobs(registeredBefore: Timestamp(microseconds: .max), limit: 10).contains(second.blobID))
        // An overwrite outside versioning keeps the replaced version the same way, when the draft says so.
        var overwrite = draft("a/one")
        overwrite.replacedSoftDeletion = keep
        let (newer, replacedByOverwrite) = try store.insertUploaded(overwrite, conditions: .none, at: t)
        #expect(replacedByOverwrite == restored)
        #expect(try store.softDeletedObject(bucket, first.name, generation: restored.generation)?.record == restored)
        #expect(
            try store.isBlobReferenced(restored.blobID)
                && (try store.object(bucket, first.name, generation: nil)) == newer)
        // A bucket whose only versions are soft-deleted can be deleted; they go with it.
        let other = bucketName("soft-only")
        let (lone, _) = try store.insertUploaded(draft("x", bucket: other), conditions: .none, at: t)
        _ = try store.deleteObject(other, lone.name, generation: nil, conditions: .none, softDeletion: keep)
        try store.deleteBucket(other)
        #expect(try store.softDeletedObjects(other, prefix: "", startAfter: nil, limit: 10).isEmpty)
        #expect(try !store.isBlobReferenced(lone.blobID))
    }

    @Test(arguments: MetadataBackend.allCases)
    func softDeletedBucketsComeBackWithTheirGeneration(_ backend: MetadataBackend) throws {
        let fixture = try backend.open()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        let created = try store.createBucket(
            BucketRecord(
                name: bucket, timeCreated: Timestamp(microseconds: 10), updated: Timestamp(microseconds: 10),
                versioning: true, resource: #"{"labels":{"a":"b"}}"#))
        let keep = SoftDeletion(at: Timestamp(microseconds: 20), hardDeleteAt: Timestamp(microseconds: 100))
        try store.deleteBucket(bucket, check: { _ in }, softDeletion: keep)
        #expect(try store.bucket(bucket) == nil)
        #expect(try store.softDeletedBuckets() == [SoftDeletedBucket(record: created, deletion: keep)])
        // While another bucket has the name, the old one cannot come back.
        _ = try store.createBucket(bucket, versioning: false, at: Timestamp(microseconds: 30))
        let taken = #expect(throws: StorageError.self) {
            _ = try store.restoreBucket(bucket, generation: created.generation, at: Timestamp(microseconds: 40))
        }
        #expect(taken?.code == .alreadyExists)
        try store.deleteBucket(bucket)
        #expect(try store.softDeletedBuckets().count == 1, "a delete without soft delete keeps nothing")
        let restored = try store.restoreBucket(bucket, generation: created.generation, at: Timestamp(microseconds: 50))
        #expect(restored == created)
        #expect(try store.bucket(bucket) == created)
        #expect(try store.softDeletedBuckets().isEmpty)
        let missing = #expect(throws: StorageError.self) {
            _ = try store.restoreBucket(bucket, generation: created.generation, at: Timestamp(microseconds: 60))
        }
        #expect(missing?.code == .notFound)
        try store.deleteBucket(bucket, check: { _ in }, softDeletion: keep)
        _ = try store.purgeSoftDeleted(hardDeletedBy: Timestamp(microseconds: 99), limit: 10)
        #expect(try store.softDeletedBuckets().count == 1)
        _ = try store.purgeSoftDeleted(hardDeletedBy: Timestamp(microseconds: 100), limit: 10)
        #expect(try store.softDeletedBuckets().isEmpty)
    }
}
