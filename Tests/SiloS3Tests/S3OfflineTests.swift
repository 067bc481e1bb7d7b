import SiloCore
import SiloS3Signer
import SiloWire
import Testing

@testable import SiloS3

/// What SiloS3 decides without talking to a store: URL parsing, the segment layout, XML, error mapping.
@Suite struct S3OfflineTests {
    private let environment = ["AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret"]

    @Test func parsesTheFactoryURL() throws {
        var environment = self.environment
        environment["AWS_SESSION_TOKEN"] = "token"
        let configuration = try S3BlobStore.Configuration(
            url: "s3://silo-blobs/tenant/a?endpoint=http://127.0.0.1:8333/&region=eu-west-3&partSize=16777216",
            environment: environment)
        #expect(configuration.bucket == "silo-blobs")
        #expect(configuration.prefix == "tenant/a")
        #expect(configuration.endpoint == "http://127.0.0.1:8333")
        #expect(configuration.region == "eu-west-3")
        #expect(configuration.partSize == 16 << 20)
        #expect(
            configuration.credentials
                == SigV4Credentials(accessKeyID: "AKID", secretAccessKey: "secret", sessionToken: "token"))
    }

    @Test func regionAndEndpointDefaults() throws {
        var environment = self.environment
        environment["AWS_DEFAULT_REGION"] = "ap-south-1"
        let aws = try S3BlobStore.Configuration(url: "s3://bucket", environment: environment)
        #expect(aws.region == "ap-south-1")
        #expect(aws.endpoint == "https://s3.ap-south-1.amazonaws.com")
        #expect(aws.prefix == "")
        environment["AWS_REGION"] = "us-west-2"
        #expect(try S3BlobStore.Configuration(url: "s3://bucket", environment: environment).region == "us-west-2")
        #expect(try S3BlobStore.Configuration(url: "s3://bucket", environment: self.environment).region == "us-east-1")
    }

    @Test(arguments: [
        "http://bucket", "s3://", "s3://bucket?endpoint=ftp://host", "s3://bucket?endpoint=http://host/path",
        "s3://bucket?colour=blue", "s3://bucket?partSize=1024",
    ])
    func rejectsBadURLs(_ url: String) {
        let error = #expect(throws: S3Error.self) { try S3BlobStore.Configuration(url: url, environment: environment) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.storageError.code == .invalidArgument)
    }

    @Test func requiresCredentials() {
        let error = #expect(throws: S3Error.self) {
            try S3BlobStore.Configuration(url: "s3://bucket", environment: ["AWS_ACCESS_KEY_ID": "AKID"])
        }
        #expect(error?.message.contains("AWS_SECRET_ACCESS_KEY") == true)
    }

    @Test func segmentKeysSortNumerically() throws {
        let layout = S3SegmentLayout(prefix: "p/q")
        let id = BlobID(rawValue: "0123456789abcdef0123456789abcdef")!
        #expect(layout.segmentKey(id, start: 0) == "p/q/0123456789abcdef0123456789abcdef/seg-00000000000000000000")
        let keys = [9, 10, 100, 8_388_608, Int64.max].map { layout.segmentKey(id, start: $0) }
        #expect(keys == keys.sorted())
        #expect(keys.map { layout.segmentStart($0, of: id) } == [9, 10, 100, 8_388_608, Int64.max])
        #expect(layout.segmentStart("p/q/\(id)/seg-12", of: id) == nil)
        #expect(layout.segmentStart("p/q/\(id)/other", of: id) == nil)
        #expect(layout.blobID(ofSegmentKey: keys[1]) == id)
        #expect(layout.blobID(ofSegmentKey: "p/q/\(id)/other") == nil)
        #expect(layout.blobID(ofSegmentKey: "p/q/conformance/seg-00000000000000000000") == nil)
        #expect(layout.blobID(ofSegmentKey: "p/\(id)/seg-00000000000000000000") == nil)
        #expect(S3SegmentLayout(prefix: "").segmentKey(id, start: 5).hasPrefix("\(id)/seg-0000"))
    }

    @Test func aLaterSegmentCutsOffTheOneBeforeIt() throws {
        let id = BlobID.random()
        func segment(_ start: Int64, _ size: Int64) -> S3StoredSegment {
            S3StoredSegment(key: "k\(start)", start: start, storedSize: size)
        }
        // 0..<100, then a resume at 60 that wrote 10 bytes, listed out of order.
        let chain = try S3SegmentChain([segment(60, 10), segment(0, 100)], blob: id)
        #expect(chain.size == 70)
        #expect(chain.pieces.map { [$0.start, $0.length] } == [[0, 60], [60, 10]])
        #expect(chain.pieceIndex(containing: 59) == 0 && chain.pieceIndex(containing: 60) == 1)
        // An empty segment only marks a cut: a truncated blob that nothing was appended to yet.
        let cut = try S3SegmentChain([segment(0, 100), segment(40, 0)], blob: id)
        #expect(cut.size == 40 && cut.pieces.map(\.length) == [40])
        #expect(try S3SegmentChain([segment(0, 0)], blob: id).size == 0)
        #expect(try S3SegmentChain([], blob: id).size == 0)

        let hole = #expect(throws: StorageError.self) {
            try S3SegmentChain([segment(0, 10), segment(11, 5)], blob: id)
        }
        #expect(hole?.code == .corrupt)
        let headless = #expect(throws: StorageError.self) { try S3SegmentChain([segment(5, 10)], blob: id) }
        #expect(headless?.code == .corrupt)
    }

    @Test func xmlValuesAndEscapes() {
        let xml: Substring = """
            <?xml version="1.0"?><ListBucketResult><Prefix>p/</Prefix><Contents><Key>a&amp;b&#x2F;c&#47;&lt;</Key>\
            <Size>12</Size></Contents><Contents><Key>d</Key><Size>0</Size></Contents>\
            <CommonPrefixes><Prefix>p/x/</Prefix></CommonPrefixes><IsTruncated>false</IsTruncated></ListBucketResult>
            """
        let contents = XMLText.elements("Contents", in: xml)
        #expect(contents.count == 2)
        #expect(XMLText.value("Key", in: contents[0]) == "a&b/c/<")
        #expect(XMLText.value("Size", in: contents[1]) == "0")
        #expect(XMLText.elements("CommonPrefixes", in: xml).compactMap { XMLText.value("Prefix", in: $0) } == ["p/x/"])
        #expect(XMLText.escape("\"e\"&<>") == "&quot;e&quot;&amp;&lt;&gt;")
    }

    @Test func errorsMapToStorageErrors() {
        let cases: [(S3Error.Code, StorageError.Code)] = [
            (.notFound, .notFound), (.accessDenied, .permissionDenied), (.unavailable, .unavailable),
            (.rejected, .internalError), (.invalidResponse, .ioError),
        ]
        for (code, expected) in cases {
            let error = S3Error(code, "GET blobs/x/seg-0", status: 500, s3Code: "InternalError")
            #expect(error.storageError.code == expected)
            #expect(error.storageError.message.contains("blobs/x/seg-0"))
            #expect(error.storageError.cause is S3Error)
        }
    }

    /// Error replies as two engines send them: SeaweedFS fills `<Message>`, Ceph RGW leaves it empty (its 404 verbatim,
    /// from docs/s3-engines.md). Neither leaves a dangling ": " in the message; the code is kept either way.
    @Test func errorRepliesWithAndWithoutAMessage() {
        let rgw = Array(
            ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>NoSuchKey</Code><Message></Message>"
                + "<BucketName>silo-test</BucketName><RequestId>tx0000006f749050dd8f33d-006b1638aa-1016-default"
                + "</RequestId><HostId>1016-default-default</HostId></Error>").utf8)
        let fromRGW = S3Client.failure(status: 404, body: rgw, "GET blobs/x/seg-0")
        #expect(fromRGW.message == "GET blobs/x/seg-0 failed")
        #expect(fromRGW.s3Code == "NoSuchKey")
        #expect(fromRGW.code == .notFound)
        #expect(fromRGW.description == "notFound: GET blobs/x/seg-0 failed (HTTP 404 NoSuchKey)")

        let seaweed = Array(
            "<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>".utf8)
        let fromSeaweed = S3Client.failure(status: 404, body: seaweed, "GET blobs/x/seg-0")
        #expect(fromSeaweed.message == "GET blobs/x/seg-0 failed: The specified key does not exist.")

        let empty = S3Client.failure(status: 503, body: [], "PUT blobs/x/seg-0")
        #expect(empty.message == "PUT blobs/x/seg-0 failed" && empty.s3Code == nil && empty.code == .unavailable)
    }

    @Test func anUnreachableEndpointIsUnavailable() throws {
        var configuration = try S3BlobStore.Configuration(
            url: "s3://bucket?endpoint=http://127.0.0.1:1", environment: environment)
        configuration.maxAttempts = 1
        let store = S3BlobStore(configuration: configuration)
        let error = #expect(throws: StorageError.self) { _ = try store.openReader(.random()) }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("list") == true)
    }
}
