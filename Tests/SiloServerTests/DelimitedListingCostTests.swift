import SiloCore
import SiloServer
import SiloServerKit
import SiloTesting
import SiloWire
import Testing

/// A delimited listing of many small folders (what the Firebase SDKs' `listAll` and a GCS `delimiter=/` page ask
/// for) reads the store in a few large batches: each folder's names roll up into its prefix inside the batch. It
/// used to fetch a batch per folder, of up to a thousand rows, and use one of them.
@Suite struct DelimitedListingCostTests {
    static let folders = 600
    static let perFolder = 4

    /// A server over a recorded in-memory store with `folders` folders of `perFolder` objects, plus loose objects.
    static func seeded() throws -> (TestServer, StoreCallHooks) {
        let hooks = StoreCallHooks()
        let store = InMemoryMetadataStore()
        let server = try TestServer(metadata: store, blobs: InMemoryBlobStore(), hooks: hooks)
        let bucketName = try BucketName(bucket)
        var names = (0..<folders).flatMap { folder in
            (0..<perFolder).map { "users/u\(1000 + folder)/photos/\($0).jpg" }
        }
        names += ["users/loose-a.txt", "users/u1300.txt", "users/zz.txt"]
        for (index, name) in names.enumerated() {
            _ = try store.insertUploaded(
                ObjectDraft(
                    bucket: bucketName, name: try ObjectName(name),
                    blob: BlobSummary(size: 1, md5: Array(repeating: 1, count: 16), crc32c: 1), blobID: .random(),
                    fields: ObjectFields(contentType: "image/jpeg", downloadTokens: ["t"])),
                conditions: .none, at: Timestamp(microseconds: Int64(index + 1)))
        }
        return (server, hooks)
    }

    static func strings(_ value: JSONValue?) -> [String] {
        value?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    static func listCalls(_ hooks: StoreCallHooks, _ body: () throws -> Void) rethrows -> Int {
        hooks.record()
        try body()
        return hooks.recorded().filter { $0.method == "listObjects" }.count
    }

    @Test func v0ListAllOfManyFoldersTakesAFewStoreReads() throws {
        let (server, hooks) = try Self.seeded()
        let client = server.client()
        var page: JSONObject = [:]
        let calls = try Self.listCalls(hooks) {
            page = try client.get(bucketPath() + "?prefix=users%2F&delimiter=%2F&maxResults=1000").json()
        }
        let prefixes = Self.strings(page["prefixes"])
        #expect(prefixes.count == Self.folders)
        #expect(prefixes.first == "users/u1000/")
        #expect(prefixes == prefixes.sorted())
        let items = page["items"]?.arrayValue?.compactMap { $0.objectValue?["name"]?.stringValue }
        #expect(items == ["users/loose-a.txt", "users/u1300.txt", "users/zz.txt"])
        // 2,403 rows in batches of at most 1,001: three reads, and room for a seek or two.
        #expect(calls <= 5, "\(calls) store reads for one page")
    }

    @Test func gcsDelimitedPagesTakeAFewStoreReadsAndResumeWhereTheyStopped() throws {
        let (server, hooks) = try Self.seeded()
        let client = server.client()
        let base = "/storage/v1/b/\(bucket)/o?prefix=users%2F&delimiter=%2F&maxResults=250"
        var seen: [String] = []
        var token: String?
        var pages = 0
        repeat {
            var page: JSONObject = [:]
            let calls = try Self.listCalls(hooks) {
                let target = base + (token.map { "&pageToken=" + PercentCoding.encodeComponent($0) } ?? "")
                page = try client.get(target).json()
            }
            #expect(calls <= 3, "\(calls) store reads for a page of 250")
            seen += Self.strings(page["prefixes"])
            token = page["nextPageToken"]?.stringValue
            pages += 1
        } while token != nil && pages < 10
        #expect(seen.count == Self.folders)
        #expect(Set(seen).count == Self.folders)
        #expect(seen == seen.sorted())
    }
}
