import SiloCore
import SiloWire
import Testing

@Suite struct JSONTests {
    @Test func roundTripKeepsOrderNullsAndNumbers() throws {
        let text =
            #"{"b":1,"a":null,"n":1607878624162589,"s":"x\"y\\z\n\u00e9\ud83d\ude00","l":[true,false,-0.5e3],"o":{}}"#
        let value = try JSONValue.parse(text)
        let object = try #require(value.objectValue)
        #expect(object.keys == ["b", "a", "n", "s", "l", "o"])
        #expect(object["a"] == .null)
        #expect(object["missing"] == nil)
        #expect(object["n"]?.int64Value == 1_607_878_624_162_589)
        #expect(object["s"]?.stringValue == "x\"y\\z\né😀")
        #expect(try JSONValue.parse(value.serialized()) == value)
    }

    @Test(
        "rejects malformed input",
        arguments: [
            "", "{", "{\"a\":}", "[1,]", "01", "1.", "\"\\x\"", "\"\u{01}\"", "{\"a\" 1}", "nul", "[1] 2",
            "\"\\ud800\"",
        ])
    func rejects(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test func depthBound() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(deep) }
    }
}

@Suite struct MetadataChangesTests {
    @Test("absent keeps, null removes, value sets; tokens key replaces tokens")
    func semantics() throws {
        var fields = ObjectFields(
            contentType: "a", cacheControl: "c", customMetadata: ["k": "v", "x": "y"], downloadTokens: ["t"])
        let changes = try MetadataChanges(
            json: JSONValue.parse(
                #"{"contentType":null,"contentLanguage":"en","metadata":{"k":null,"n":5,"firebaseStorageDownloadTokens":"u1, u2"},"size":"9"}"#
            ))
        try changes.apply(to: &fields)
        #expect(fields.contentType == nil)
        #expect(fields.cacheControl == "c")
        #expect(fields.contentLanguage == "en")
        #expect(fields.customMetadata == ["x": "y", "n": "5"])
        #expect(fields.downloadTokens == ["u1", "u2"])
        var cleared = fields
        try MetadataChanges(json: JSONValue.parse(#"{"metadata":null}"#)).apply(to: &cleared)
        #expect(cleared.customMetadata.isEmpty)
        #expect(cleared.downloadTokens == ["u1", "u2"])
    }

    @Test func wrongTypes() {
        #expect(throws: StorageError.self) { try MetadataChanges(json: JSONValue.parse(#"{"contentType":1}"#)) }
        #expect(throws: StorageError.self) { try MetadataChanges(json: JSONValue.parse(#"{"metadata":[]}"#)) }
        #expect(throws: StorageError.self) {
            try MetadataChanges(json: JSONValue.parse(#"{"customTime":"yesterday"}"#))
        }
        #expect(throws: StorageError.self) { try MetadataChanges(json: JSONValue.parse("[]")) }
    }

    @Test func metadataJSONShape() throws {
        let record = ObjectRecord(
            bucket: try BucketName("demo.appspot.com"), name: try ObjectName("a/b.txt"), generation: 12,
            metageneration: 3,
            blob: BlobSummary(
                size: 0,
                md5: [0xD4, 0x1D, 0x8C, 0xD9, 0x8F, 0x00, 0xB2, 0x04, 0xE9, 0x80, 0x09, 0x98, 0xEC, 0xF8, 0x42, 0x7E],
                crc32c: 0),
            blobID: BlobID.random(), fields: ObjectFields(contentType: "text/plain", downloadTokens: ["t1", "t2"]),
            timeCreated: Timestamp(microseconds: 1_000), updated: Timestamp(microseconds: 2_000))
        let o = try #require(FirebaseMetadata.json(record).objectValue)
        #expect(o["size"] == .string("0"))
        #expect(o["generation"] == .string("12"))
        #expect(o["metageneration"] == .string("3"))
        #expect(o["md5Hash"] == .string("1B2M2Y8AsgTpgAmY7PhCfg=="))
        #expect(o["crc32c"] == .string("AAAAAA=="))
        #expect(o["contentEncoding"] == .string("identity"))
        #expect(o["downloadTokens"] == .string("t1,t2"))
        #expect(o["metadata"] == nil)
        #expect(o["timeCreated"] == .string("1970-01-01T00:00:00.001Z"))
    }
}

/// JSON bombs are refused without costing more than a pass over the bytes.
@Suite struct JSONBombTests {
    @Test func duplicateKeysAreRefusedInSmallAndLargeObjects() throws {
        #expect(throws: JSONParseError.self) { _ = try JSONValue.parse(#"{"contentType":"a/b","contentType":"c/d"}"#) }
        let many = (0..<50_000).map { "\"k\($0)\":1" }.joined(separator: ",")
        #expect(throws: Never.self) { _ = try JSONValue.parse("{" + many + "}") }
        // The 50,001st key repeats the 8th: found through the set, not by rescanning (which would be quadratic).
        #expect(throws: JSONParseError.self) { _ = try JSONValue.parse("{" + many + ",\"k7\":2}") }
    }

    @Test func hugeNumbersAreRefused() throws {
        #expect(throws: JSONParseError.self) { _ = try JSONValue.parse(String(repeating: "9", count: 300_000)) }
        #expect(try JSONValue.parse("1e999999") == .number("1e999999"))
        #expect(try JSONValue.parse(String(repeating: "9", count: 64)) == .number(String(repeating: "9", count: 64)))
    }
}
