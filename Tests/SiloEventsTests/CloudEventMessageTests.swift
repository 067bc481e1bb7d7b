import SiloCore
import SiloEvents
import SiloHashing
import Testing

@Suite struct CloudEventMessageTests {
    private func event(_ kind: StorageEvent.Kind, name: String = "dir/a b\u{fc}.txt") throws -> OutboxEvent {
        let record = ObjectRecord(
            bucket: try BucketName("photos.appspot.com"), name: try ObjectName(name), generation: 1_700_000_000_000_001,
            metageneration: 2, blob: BlobSummary(size: 5, md5: Array(repeating: 1, count: 16), crc32c: 7),
            blobID: .random(), fields: ObjectFields(contentType: "text/plain"),
            timeCreated: Timestamp(microseconds: 1_700_000_000_000_000),
            updated: Timestamp(microseconds: 1_700_000_000_000_000))
        return OutboxEvent(
            sequence: 42,
            event: StorageEvent(kind: kind, object: record, time: Timestamp(microseconds: 1_700_000_001_000_000)),
            attempts: 0)
    }

    private func header(_ message: CloudEventMessage, _ name: String) -> String? {
        message.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    @Test func binaryModeAttributesAndSignature() throws {
        let secret = Array("a secret of enough bytes".utf8)
        let message = CloudEventMessage(try event(.finalize), base: "http://127.0.0.1:9199", secret: secret)
        #expect(header(message, "ce-specversion") == "1.0")
        #expect(header(message, "ce-id") == "42")
        #expect(header(message, "ce-type") == "google.cloud.storage.object.v1.finalized")
        #expect(header(message, "ce-source") == "//storage.googleapis.com/projects/_/buckets/photos.appspot.com")
        // Space and non-ASCII are percent-encoded, '/' is not.
        #expect(header(message, "ce-subject") == "objects/dir/a%20b%C3%BC.txt")
        #expect(header(message, "ce-time") == "2023-11-14T22:13:21.000Z")
        #expect(header(message, "Content-Type") == "application/json")
        let mac = HMACSHA256.authenticationCode(key: secret, message: message.body)
        let hex = mac.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
        #expect(header(message, CloudEventMessage.signatureHeader) == "sha256=" + hex.joined())
        let body = String(decoding: message.body, as: UTF8.self)
        #expect(body.contains("\"kind\":\"storage#object\"") && body.contains("\"metageneration\":\"2\""))
        #expect(!body.contains("timeDeleted"))
    }

    @Test func archiveCarriesTimeDeletedAndEachKindItsType() throws {
        let archived = CloudEventMessage(try event(.archive), base: "http://h", secret: [1])
        #expect(String(decoding: archived.body, as: UTF8.self).contains("\"timeDeleted\":\"2023-11-14T22:13:21.000Z\""))
        #expect(
            StorageEvent.Kind.allCases.map(CloudEventMessage.type) == [
                "google.cloud.storage.object.v1.finalized", "google.cloud.storage.object.v1.deleted",
                "google.cloud.storage.object.v1.archived", "google.cloud.storage.object.v1.metadataUpdated",
            ])
    }

    @Test func headerValuesAreEncodedOutsidePrintableASCII() throws {
        let message = CloudEventMessage(
            try event(.delete, name: "x\tInjected: 1\"%\u{7F}"), base: "http://h", secret: [1])
        #expect(header(message, "ce-subject") == "objects/x%09Injected:%201%22%25%7F")
    }

    @Test func webhookSpecificationsAndTheirFilters() throws {
        let plain = try WebhookTarget(parsing: "http://127.0.0.1:8080/hook")
        #expect(plain == WebhookTarget(url: "http://127.0.0.1:8080/hook"))
        let filtered = try WebhookTarget(
            parsing: "https://h.example/x?y=1;bucket=a-bucket,b-bucket;types=finalize,delete")
        #expect(filtered.url == "https://h.example/x?y=1")
        #expect(filtered.buckets == [try BucketName("a-bucket"), try BucketName("b-bucket")])
        #expect(filtered.kinds == [.finalize, .delete])
        let finalize = try event(.finalize).event
        #expect(plain.wants(finalize) && !filtered.wants(finalize))
        for bad in [
            "ftp://h/x", "http://", "http:///path", "http://h/a b", "http://h;types=upload", "http://h;bucket=",
            "http://h;colour=red", "http://h;types=finalize;types=delete", "http://h;bucket=Bad Name",
        ] {
            #expect(throws: StorageError.self, "\(bad)") { _ = try WebhookTarget(parsing: bad) }
        }
    }

    @Test func backoffGrowsIsCappedAndJittered() {
        let backoff = DeliveryBackoff(initial: .seconds(1), maximum: .seconds(60))
        #expect(backoff.delay(afterAttempts: 1, unit: 0) == .milliseconds(500))
        #expect(backoff.delay(afterAttempts: 1, unit: 1) == .seconds(1))
        #expect(backoff.delay(afterAttempts: 4, unit: 1) == .seconds(8))
        #expect(backoff.delay(afterAttempts: 50, unit: 1) == .seconds(60))
        #expect(backoff.delay(afterAttempts: 50, unit: 0.5) == .seconds(45))
    }
}
