import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import SiloWire
import Testing

/// The XML API's listings beyond live objects on a live socket — `?versions` as `<ListVersionsResult>`
/// (every generation, `IsLatest`, paged by `marker` and `generation-marker`, as gsutil's `ls -a` in XML mode pages),
/// and `encoding-type=url`.
@Suite struct XMLVersionListingTests {
    let server: TestServer
    let client: HTTPTestClient

    init() throws {
        server = try TestServer()
        client = server.client()
        #expect(try client.send(method: "PUT", target: "/\(bucket)").status == 200)
        let enable = "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>"
        #expect(try client.send(method: "PUT", target: "/\(bucket)?versioning", body: bytes(enable)).status == 200)
    }

    @discardableResult
    func put(_ name: String, _ text: String) throws -> Int64 {
        let answer = try client.send(
            method: "PUT", target: "/\(bucket)/" + PercentCoding.encodeComponent(name), body: bytes(text))
        #expect(answer.status == 200)
        return try #require(answer.headers["x-goog-generation"].flatMap { Int64($0) })
    }

    struct Version: Equatable, CustomStringConvertible {
        var key: String
        var generation: Int64
        var latest: Bool
        var description: String { "\(key)#\(generation)\(latest ? "*" : "")" }
    }

    func versions(_ response: TestResponse) -> [Version] {
        XMLText.elements("Version", in: response.text[...]).map {
            Version(
                key: XMLText.value("Key", in: $0) ?? "",
                generation: XMLText.value("Generation", in: $0).flatMap { Int64($0) } ?? 0,
                latest: XMLText.value("IsLatest", in: $0) == "true")
        }
    }

    func prefixes(_ response: TestResponse) -> [String] {
        XMLText.elements("CommonPrefixes", in: response.text[...]).compactMap { XMLText.value("Prefix", in: $0) }
    }

    /// a.txt three times, b/1.txt and b/2.txt once each with b/1.txt deleted (noncurrent only), c.txt once.
    func populate() throws -> [Version] {
        let a = [try put("a.txt", "a1"), try put("a.txt", "a2"), try put("a.txt", "a3")]
        let b1 = try put("b/1.txt", "b1")
        let b2 = try put("b/2.txt", "b2")
        #expect(try client.send(method: "DELETE", target: "/\(bucket)/b/1.txt").status == 204)
        let c = try put("c.txt", "c")
        return [
            Version(key: "a.txt", generation: a[0], latest: false),
            Version(key: "a.txt", generation: a[1], latest: false),
            Version(key: "a.txt", generation: a[2], latest: true),
            Version(key: "b/1.txt", generation: b1, latest: false),
            Version(key: "b/2.txt", generation: b2, latest: true), Version(key: "c.txt", generation: c, latest: true),
        ]
    }

    @Test("GET /{b}?versions lists every generation with Generation, MetaGeneration and IsLatest")
    func all() throws {
        let expected = try populate()
        let listing = try client.get("/\(bucket)?versions")
        #expect(listing.status == 200)
        #expect(listing.text.contains("<ListVersionsResult xmlns=\"http://doc.s3.amazonaws.com/2006-03-01\">"))
        #expect(versions(listing) == expected)
        #expect(XMLText.value("IsTruncated", in: listing.text[...]) == "false")
        let first = try #require(XMLText.elements("Version", in: listing.text[...]).first)
        #expect(XMLText.value("MetaGeneration", in: first) == "1" && XMLText.value("Size", in: first) == "2")
        // The live listing is unchanged: one entry per live object.
        let live = try client.get("/\(bucket)")
        #expect(live.text.contains("<ListBucketResult") && !live.text.contains("<Version>"))
        #expect(XMLText.elements("Contents", in: live.text[...]).count == 3)
        #expect(try client.get("/\(bucket)?versions=false").text.contains("<ListBucketResult"))
    }

    @Test("versions page by marker and generation-marker, every version once, as boto's lister follows them")
    func paging() throws {
        let expected = try populate()
        var seen: [Version] = []
        var marker = ""
        var generation = ""
        for _ in 0..<10 {
            let page = try client.get(
                "/\(bucket)?versions&max-keys=2&marker=\(PercentCoding.encodeComponent(marker))"
                    + "&generation-marker=\(generation)")
            #expect(page.status == 200)
            seen += versions(page)
            guard XMLText.value("IsTruncated", in: page.text[...]) == "true" else { break }
            marker = try #require(XMLText.value("NextMarker", in: page.text[...]))
            generation = try #require(XMLText.value("NextGenerationMarker", in: page.text[...]))
        }
        #expect(seen == expected)
        // S3's names for the same markers.
        let s3 = try client.get(
            "/\(bucket)?versions&key-marker=a.txt&version-id-marker=\(expected[1].generation)")
        #expect(versions(s3) == Array(expected[2...]))
        // A marker without a generation starts after every version of that name.
        #expect(versions(try client.get("/\(bucket)?versions&marker=a.txt")) == Array(expected[3...]))
        #expect(try client.get("/\(bucket)?versions&generation-marker=x").status == 400)
        #expect(try client.get("/\(bucket)?versions&list-type=2").status == 400)
    }

    @Test("versions with a delimiter roll names up into CommonPrefixes, and page past them")
    func delimiter() throws {
        let expected = try populate()
        let folded = try client.get("/\(bucket)?versions&delimiter=%2F")
        #expect(prefixes(folded) == ["b/"])
        #expect(versions(folded).map(\.key) == ["a.txt", "a.txt", "a.txt", "c.txt"])
        var seen: [String] = []
        var marker = ""
        var generation = ""
        for _ in 0..<10 {
            let page = try client.get(
                "/\(bucket)?versions&delimiter=%2F&max-keys=1&marker=\(PercentCoding.encodeComponent(marker))"
                    + "&generation-marker=\(generation)")
            seen += versions(page).map(\.description) + prefixes(page)
            guard XMLText.value("IsTruncated", in: page.text[...]) == "true" else { break }
            marker = try #require(XMLText.value("NextMarker", in: page.text[...]))
            generation = XMLText.value("NextGenerationMarker", in: page.text[...]) ?? ""
        }
        #expect(seen == expected[0..<3].map(\.description) + ["b/"] + [expected[5].description])
    }

    @Test("encoding-type=url percent-encodes names in V1, V2 and versions listings")
    func encodingType() throws {
        let odd = "odd \u{1}name+plus&.txt"
        try put(odd, "x")
        let encoded = PercentCoding.encodeComponent(odd)
        for query in ["encoding-type=url", "list-type=2&encoding-type=url", "versions&encoding-type=url"] {
            let answer = try client.get("/\(bucket)?\(query)&prefix=odd%20")
            #expect(answer.status == 200, "\(query)")
            #expect(!answer.text.contains("&#x1;") && answer.text.contains("<Key>\(encoded)</Key>"), "\(query)")
            #expect(XMLText.value("Prefix", in: answer.text[...]) == "odd%20", "\(query)")
            #expect(XMLText.value("EncodingType", in: answer.text[...]) == "url", "\(query)")
        }
        let plain = try client.get("/\(bucket)?prefix=odd%20")
        #expect(
            XMLText.value("Key", in: plain.text[...]) == odd
                && XMLText.value("EncodingType", in: plain.text[...]) == nil)
        #expect(try client.get("/\(bucket)?encoding-type=base64").status == 400)
    }
}
