import Foundation
import SiloCore
import Synchronization
import Testing

@_spi(Testing) @testable import SiloSQLite

#if canImport(Glibc)
import Glibc
import SiloTesting
#endif

final class SQLRecorder: Sendable {
    private let lines = Mutex<[String]>([])
    func withLock<R>(_ body: (inout [String]) -> R) -> R { lines.withLock { body(&$0) } }
}

/// SQLite-specific checks: schema bookkeeping, pragmas, the SQL actually run, and failure mapping.
@Suite struct SQLiteMetadataStoreTests {
    private func tracedStore(
        _ directory: TempDirectory, _ configure: (inout SQLiteMetadataStore.Configuration) -> Void = { _ in }
    )
        throws -> (SQLiteMetadataStore, SQLRecorder)
    {
        let recorded = SQLRecorder()
        var configuration = SQLiteMetadataStore.Configuration()
        configuration.trace = { sql in recorded.withLock { $0.append(sql) } }
        configure(&configuration)
        return (
            try SQLiteMetadataStore(path: directory.path + "/metadata.sqlite", configuration: configuration), recorded
        )
    }

    @Test func migrationVersionIsRecordedAndNotReapplied() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let path = directory.path + "/metadata.sqlite"
        let first = try SQLiteMetadataStore(path: path)
        let current = String(Migrations.currentVersion)
        #expect(first.schemaVersionAtOpen == 0)
        #expect(try first.scalar("PRAGMA user_version") == current)
        first.close()
        let second = try SQLiteMetadataStore(path: path)
        #expect(second.schemaVersionAtOpen == Migrations.currentVersion)
        #expect(try second.scalar("PRAGMA user_version") == current)
    }

    /// Sessions written before step 9 kept the starter's raw Authorization header as `principal`: the step drops it,
    /// fails the active sessions that held one (their starter cannot be known without it), and leaves the rest.
    @Test func sessionCredentialsAreDroppedByTheMigration() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let path = directory.path + "/metadata.sqlite"
        let store = try SQLiteMetadataStore(path: path)
        func session(_ name: String) -> UploadSession {
            UploadSession(
                id: RandomID.sessionID(), bucket: bucketName(), name: objectName(name), fields: ObjectFields(),
                declaredSize: nil, blobID: .random(), created: Timestamp(microseconds: 1))
        }
        let active = session("active")
        let finished = session("finished")
        let anonymous = session("anonymous")
        for one in [active, finished, anonymous] { try store.insertSession(one) }
        _ = try store.updateSession(id: finished.id) { $0.state = .finalized }
        for id in [active.id, finished.id] {
            try store.executeOnWriter(
                "UPDATE sessions SET record = json_set(record, '$.principal', 'Bearer legacy-admin-key') "
                    + "WHERE id = '\(id)'")
        }
        try store.executeOnWriter("PRAGMA user_version = 8")
        store.close()

        let migrated = try SQLiteMetadataStore(path: path)
        #expect(migrated.schemaVersionAtOpen == 8)
        #expect(try migrated.scalar("SELECT count(*) FROM sessions WHERE record LIKE '%legacy-admin-key%'") == "0")
        let failed = try #require(try migrated.session(id: active.id))
        #expect(failed.state == .failed && failed.failureStatus == 410)
        #expect(failed.failureMessage == UploadSession.credentialDropped.message)
        #expect(try migrated.scalar("SELECT state FROM sessions WHERE id = '\(active.id)'") == "failed")
        #expect(try migrated.session(id: finished.id)?.state == .finalized)
        #expect(try migrated.session(id: anonymous.id)?.state == .active, "a session without a credential goes on")
        // A record that still holds one (an older node writing beside a migrated database) is never committed.
        try migrated.executeOnWriter(
            "UPDATE sessions SET record = json_set(record, '$.principal', 'Bearer late') WHERE id = '\(anonymous.id)'")
        #expect(try migrated.session(id: anonymous.id)?.state == .failed)
    }

    @Test func walModeAndConnectionSettings() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let (store, recorded) = try tracedStore(directory) { $0.synchronous = .normal }
        #expect(try store.scalar("PRAGMA journal_mode") == "wal")
        let sql = recorded.withLock { $0 }
        #expect(sql.contains { $0.hasPrefix("PRAGMA synchronous = NORMAL") })
        #expect(sql.contains { $0.hasPrefix("PRAGMA foreign_keys = ON") })
        let other = try TempDirectory()
        let (full, fullSQL) = try tracedStore(other)
        #expect(fullSQL.withLock { $0 }.contains { $0.hasPrefix("PRAGMA synchronous = FULL") }, "FULL is the default")
        withExtendedLifetime((full, other)) {}
    }

    @Test func theSQLRunIsRecordedWithoutUserData() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let (store, recorded) = try tracedStore(directory)
        recorded.withLock { $0 = [] }
        _ = try store.insertUploaded(draft("secret-name"), conditions: .init(ifGenerationMatch: 0), at: .now())
        let insert = recorded.withLock { $0 }
        #expect(insert.first == "BEGIN IMMEDIATE" && insert.last == "COMMIT")
        #expect(insert.contains { $0.hasPrefix("INSERT INTO objects") })
        #expect(!insert.contains { $0.contains("secret-name") }, "bound values stay out of traces")

        _ = try store.listObjects(bucketName(), prefix: "se", startAfter: nil, limit: 10)  // opens a reader
        recorded.withLock { $0 = [] }
        _ = try store.listObjects(bucketName(), prefix: "se", startAfter: nil, limit: 10)
        #expect(recorded.withLock { $0 }.count == 1, "a listing is one statement")
        #expect(store.busyStatementCount() == 0, "no statement left running between calls")
    }

    @Test func listingsAreARangeSearchInNameOrder() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let store = try SQLiteMetadataStore(path: directory.path + "/metadata.sqlite")
        let plan = try store.textRows(
            """
            EXPLAIN QUERY PLAN SELECT name FROM objects
            WHERE bucket = 'b' AND live = 1 AND name >= x'61' AND name < x'61FF' AND name > x'' ORDER BY name LIMIT 5
            """
        ).compactMap { $0.last ?? nil }
        // A range search on (bucket, name) — the primary key or the live index, both in name order — never a scan.
        #expect(
            plan.count == 1 && plan[0].hasPrefix("SEARCH objects USING") && plan[0].contains("name>? AND name<?"),
            "\(plan)")
        #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "no sort step: \(plan)")
    }

    @Test func sessionsWrittenBeforeTheAPIFieldReadAsFirebase() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let store = try SQLiteMetadataStore(path: directory.path + "/metadata.sqlite")
        let session = UploadSession(
            id: "old", bucket: bucketName(), name: objectName("o"), fields: ObjectFields(), declaredSize: nil,
            blobID: .random(), created: Timestamp(microseconds: 1), api: .gcs)
        try store.insertSession(session)
        #expect(try store.scalar("SELECT json_extract(record, '$.api') FROM sessions") == "gcs")
        // What an older Silo wrote: the same record without the key.
        try store.executeOnWriter("UPDATE sessions SET record = json_remove(record, '$.api')")
        #expect(try store.scalar("SELECT json_type(record, '$.api') FROM sessions") == nil)
        var expected = session
        expected.api = .firebase
        #expect(try store.session(id: "old") == expected)
    }

    /// A page deep into a prefix seeks to its cursor: the statement has one lower bound on the name. With the prefix
    /// and the cursor both as parameters, SQLite sought by the prefix and filtered up to the cursor row by row (the
    /// middle and last pages of a 100,000-object listing took 2-3x the first).
    @Test func liveListingsHaveOneLowerBound() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let (store, recorded) = try tracedStore(directory)
        _ = try store.listObjects(bucketName(), prefix: "a", startAfter: nil, limit: 5)  // opens a reader
        for startAfter in [nil, Array("ab".utf8), Array("0".utf8)] {
            recorded.withLock { $0 = [] }
            _ = try store.listObjects(bucketName(), prefix: "a", startAfter: startAfter, limit: 5)
            let sql = try #require(recorded.withLock { $0 }.first)
            let lowerBounds = ["name > ?", "name >= ?"].map { sql.components(separatedBy: $0).count - 1 }.reduce(0, +)
            #expect(lowerBounds == 1, "\(sql)")
        }
    }

    /// Reopening a store reads no object row: none of the statements it runs names the `objects` table. (A `max` over
    /// its generations once did; no index serves it, and readiness grew with the object count: 0.03 s at 10⁴ objects,
    /// 3.1 s at 10⁷. Its query plan says `SEARCH … USING COVERING INDEX`, so a plan check would not have caught it.)
    @Test func reopeningReadsNoObjectRows() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        do {
            let (store, _) = try tracedStore(directory)
            let first = draft("a")
            try store.registerPendingBlob(first.blobID, at: Timestamp(microseconds: 1_000))
            _ = try store.insertObject(first, conditions: .none, at: Timestamp(microseconds: 1_000))
            store.close()
        }
        let (store, recorded) = try tracedStore(directory)
        let statements = recorded.withLock { $0 }
        #expect(!statements.isEmpty)
        for sql in statements {
            #expect(sql.range(of: #"\bobjects\b"#, options: .regularExpression) == nil, "\(sql)")
        }
        // And the generations go on from the counter.
        let second = draft("b")
        try store.registerPendingBlob(second.blobID, at: Timestamp(microseconds: 1))
        let next = try store.insertObject(second, conditions: .none, at: Timestamp(microseconds: 1)).stored
        #expect(next.generation == 1_001)
    }

    @Test func versionListingsSeekThePrimaryKeyInOrder() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let (store, recorded) = try tracedStore(directory)
        _ = try store.listObjectVersions(bucketName(), prefix: "a", startAfter: nil, limit: 5)  // opens a reader
        recorded.withLock { $0 = [] }
        _ = try store.listObjectVersions(
            bucketName(), prefix: "a", startAfter: ObjectVersionKey(name: Array("ab".utf8), generation: 7), limit: 5)
        let sql = try #require(recorded.withLock { $0 }.first)
        // The statement the store ran, planned with literals in place of its parameters.
        let literals = ["'b'", "x'6162'", "x'61FF'", "x'6162'", "x'6162'", "7", "5"]
        var planned = "EXPLAIN QUERY PLAN "
        var next = 0
        for character in sql {
            if character == "?" {
                planned += literals[next]
                next += 1
            } else {
                planned.append(character)
            }
        }
        #expect(next == literals.count, "\(sql)")
        let plan = try store.textRows(planned).compactMap { $0.last ?? nil }
        // A seek into the primary key (bucket, name, generation), already in listing order: no scan, no sort.
        #expect(
            plan.count == 1 && plan[0].hasPrefix("SEARCH objects USING PRIMARY KEY")
                && plan[0].contains("name>? AND name<?"),
            "\(plan)")
        #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "no sort step: \(plan)")
    }

    /// Rewrites the object's JSON columns as given (SQL literals are built here, so quotes are doubled).
    private func storeJSON(_ store: SQLiteMetadataStore, customMetadata: String, downloadTokens: String) throws {
        func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
        try store.executeOnWriter(
            "UPDATE objects SET custom_metadata = \(literal(customMetadata)), download_tokens = \(literal(downloadTokens))"
        )
    }

    static let awkwardStrings = [
        "", "plain", "a/b//c", "quote \" backslash \\ slash /", "é 日本 \u{1F600}", "\n\r\t\u{8}\u{C}\u{1}\u{1F}\u{7F}",
        "nul \u{0} inside", "\u{FFFF}\u{10FFFF}", "'single'",
    ]

    @Test func objectRowsWrittenByJSONEncoderStillRead() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let store = try SQLiteMetadataStore(path: directory.path + "/metadata.sqlite")
        let (stored, _) = try store.insertUploaded(draft("o"), conditions: .none, at: .now())
        // Exactly how rows were written before FieldJSON.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        func old(_ value: some Encodable) throws -> String {
            String(decoding: try encoder.encode(value), as: UTF8.self)
        }
        var metadata: [String: String] = [:]
        for (index, text) in Self.awkwardStrings.enumerated() {
            metadata[text] = Self.awkwardStrings[(index + 1) % Self.awkwardStrings.count]
        }
        try storeJSON(store, customMetadata: try old(metadata), downloadTokens: try old(Self.awkwardStrings))
        var expected = stored
        expected.fields.customMetadata = metadata
        expected.fields.downloadTokens = Self.awkwardStrings
        #expect(try store.object(bucketName(), stored.name, generation: nil) == expected)
        for value in [[:], ["k": "v"]] as [[String: String]] {
            try storeJSON(store, customMetadata: try old(value), downloadTokens: try old([String]()))
            #expect(try store.object(bucketName(), stored.name, generation: nil)?.fields.customMetadata == value)
        }

        // Escapes any JSON writer may use: \/, \u (BMP and surrogate pairs, any hex case), whitespace between tokens.
        try storeJSON(
            store, customMetadata: #" { "a\/b" : "\u00e9\uD83D\uDE00\u0041" , "q":"\"\\\b\f\n\r\t\/" } "#,
            downloadTokens: #"[ "\u65e5\u672C" ,"x"]"#)
        let read = try #require(try store.object(bucketName(), stored.name, generation: nil))
        #expect(read.fields.customMetadata == ["a/b": "é\u{1F600}A", "q": "\"\\\u{8}\u{C}\n\r\t/"])
        #expect(read.fields.downloadTokens == ["日本", "x"])
    }

    @Test func objectRowsAreWrittenAsCompactSortedJSON() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let store = try SQLiteMetadataStore(path: directory.path + "/metadata.sqlite")
        var object = draft("o")
        object.fields.customMetadata = ["b": "/x", "a": "é\u{1}\"", "B": "", "ä": "1"]
        object.fields.downloadTokens = ["t2", "t1"]
        let (stored, _) = try store.insertUploaded(object, conditions: .none, at: .now())
        let row = try store.textRows("SELECT custom_metadata, download_tokens FROM objects")
        #expect(row == [[#"{"B":"","a":"é\u0001\"","b":"/x","ä":"1"}"#, #"["t2","t1"]"#]])
        #expect(try store.object(bucketName(), stored.name, generation: nil) == stored)
    }

    @Test(arguments: [
        ("1", "[]"), ("[]", "[]"), (#"{"a":1}"#, "[]"), (#"{"a":null}"#, "[]"), (#"{"a":"b","a":"c"}"#, "[]"),
        (#"{"a":"b"} x"#, "[]"), (#"{"a":"\x"}"#, "[]"), (#"{"a":"\uD800"}"#, "[]"), ("", "[]"),
        ("{}", "{}"), ("{}", #"["a",null]"#), ("{}", #"[["a"]]"#), ("{}", #"["a",]"#), ("{}", #""a""#),
    ])
    func malformedObjectJSONIsACorruptRow(_ customMetadata: String, _ downloadTokens: String) throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let store = try SQLiteMetadataStore(path: directory.path + "/metadata.sqlite")
        let (stored, _) = try store.insertUploaded(draft("o"), conditions: .none, at: .now())
        try storeJSON(store, customMetadata: customMetadata, downloadTokens: downloadTokens)
        let error = #expect(throws: StorageError.self) {
            _ = try store.object(bucketName(), stored.name, generation: nil)
        }
        #expect(error?.code == .corrupt)
    }

    @Test func aNewerSchemaIsRefused() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let path = directory.path + "/metadata.sqlite"
        let store = try SQLiteMetadataStore(path: path)
        try store.executeOnWriter("PRAGMA user_version = 99")
        store.close()
        let error = #expect(throws: StorageError.self) { _ = try SQLiteMetadataStore(path: path) }
        #expect(error?.code == .unavailable)
    }

    @Test func aFileThatIsNotADatabaseIsCorrupt() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let path = directory.path + "/metadata.sqlite"
        let fd = creat(path, 0o600)
        let junk = [UInt8](repeating: 0x42, count: 8192)
        #expect(write(fd, junk, junk.count) == junk.count)
        close(fd)
        let error = #expect(throws: StorageError.self) { _ = try SQLiteMetadataStore(path: path) }
        #expect(error?.code == .corrupt)
        #expect(error?.cause is SQLiteError)
    }

    @Test func closedStoreRefusesCalls() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let store = try SQLiteMetadataStore(path: directory.path + "/metadata.sqlite")
        _ = try store.buckets()
        store.close()
        let read = #expect(throws: StorageError.self) { _ = try store.buckets() }
        #expect(read?.code == .unavailable)
        let write = #expect(throws: StorageError.self) { try store.registerPendingBlob(.random(), at: .now()) }
        #expect(write?.code == .unavailable)
    }

    @Test func oneLiveVersionPerNameIsEnforcedByTheSchema() throws {
        let directory = try TempDirectory()
        defer { withExtendedLifetime(directory) {} }
        let store = try SQLiteMetadataStore(path: directory.path + "/metadata.sqlite")
        let (stored, _) = try store.insertUploaded(draft("only"), conditions: .none, at: .now())
        let error = #expect(throws: StorageError.self) {
            try store.executeOnWriter(
                "INSERT INTO objects SELECT bucket, name, generation + 1, metageneration, 1, size, md5, crc32c, blob_id, "
                    + "content_type, content_encoding, content_disposition, content_language, cache_control, custom_time, "
                    + "custom_metadata, download_tokens, time_created, updated, component_count, extra FROM objects")
        }
        #expect(error?.code == .alreadyExists)
        #expect(try store.object(bucketName(), stored.name, generation: nil) == stored)
    }
}
