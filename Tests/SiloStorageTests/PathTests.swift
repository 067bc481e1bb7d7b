import Foundation
import Testing

@testable import SiloStorage

@Suite struct PathTests {
    let storage = Storage(url: "gs://bucket")

    @Test(arguments: [
        ("", ""), ("/object/", "object"), ("/path///to////object////////", "path/to/object"), ("//////////", ""),
        ("a/b", "a/b"), ("?/%/#", "?/%/#"), ("./..", "./.."),
    ])
    func childCanonicalises(child: String, expected: String) {
        let ref = storage.reference().child(child)
        #expect(ref.fullPath == expected)
        #expect(ref.description == "gs://bucket/\(expected)")
    }

    @Test func chainedChildren() {
        let ref = storage.reference().child("/path").child("to/").child("object")
        #expect(ref.fullPath == "path/to/object")
        #expect(ref.name == "object")
        #expect(ref.bucket == "bucket")
        #expect(ref.child("") == ref)
        #expect(ref.child("1") == ref.child("1"))
        #expect(ref.child("1") !== ref.child("1"))
    }

    @Test func parentAndRoot() {
        let ref = storage.reference(withPath: "path/to/object")
        #expect(ref.parent()?.fullPath == "path/to")
        #expect(storage.reference(withPath: "path/to////").parent()?.fullPath == "path")
        #expect(storage.reference(withPath: "path").parent() == storage.reference())
        #expect(storage.reference(withPath: "path").parent()?.description == "gs://bucket/")
        #expect(storage.reference().parent() == nil)
        #expect(storage.reference(withPath: "/////").parent() == nil)
        #expect(ref.root() == storage.reference())
        #expect(ref.root().name == "")
        #expect(ref.root().fullPath == "")
        // Firebase answers false here; we normalise the root (docs/compatibility.md).
        #expect(ref.child("a").parent()?.parent()?.parent()?.parent() == ref.root())
    }

    @Test(arguments: [
        ("gs://bucket", ""), ("gs://bucket/", ""), ("gs://bucket/path/to/object", "path/to/object"),
        ("gs://bucket//path//to//", "path/to"), ("gs://bucket/?/%/#", "?/%/#"),
        ("http://localhost:8070/v0/b/bucket", ""), ("https://firebasestorage.googleapis.com/v0/b/bucket/", ""),
        ("https://firebasestorage.googleapis.com/v0/b/bucket/o", ""),
        ("https://firebasestorage.googleapis.com/v0/b/bucket/o/path%2Fto%2Fobject?alt=media&token=x", "path/to/object"),
        ("https://host/v0/b/bucket/o/%3F%2F%25%2F%23", "?/%/#"),
        ("https://host/v0/b/bucket/o/a%20b#hashtag/no/token", "a b"),
        ("https://firebasestorage.googleapis.com/b/bucket/o/images%20stars.jpg", "images stars.jpg"),
    ])
    func parsesURLs(url: String, object: String) throws {
        let ref = storage.reference(forURL: url)
        #expect(ref.bucket == "bucket")
        #expect(ref.fullPath == object)
        // Foundation's URL re-escapes `%` in `gs://` paths, so only compare the URL form where it round-trips.
        if let parsed = URL(string: url), parsed.absoluteString == url {
            #expect(try storage.reference(for: parsed).fullPath == object)
        }
    }

    @Test(arguments: [
        "gs://", "gs:///", "http://host/", "http://host/v1/b/bucket/o/x", "http://host/v0/x/bucket/o/x",
        "http://host/v0/b/bucket/x/obj", "ftp://bucket/x", "htttp://host/v0/b/bucket",
    ])
    func rejectsURLs(url: String) {
        do {
            _ = try StoragePath.parse(url)
            Issue.record("accepted \(url)")
        } catch {
            #expect(error.code == .pathError)
        }
    }

    @Test func badSchemeMessage() throws {
        #expect(throws: StorageError.self) { try storage.reference(for: URL(string: "ftp://bucket/a")!) }
        do {
            _ = try storage.reference(for: URL(string: "ftp://bucket/a")!)
        } catch let error as StorageError {
            #expect(error.message == "Internal error: URL scheme must be one of gs://, http://, or https://")
            #expect((error as NSError).code == StorageErrorCode.pathError.rawValue)
        }
    }

    @Test func bucketMismatch() {
        do {
            _ = try storage.reference(for: URL(string: "gs://other/a")!)
            Issue.record("no error")
        } catch StorageError.bucketMismatch(let message) {
            #expect(
                message
                    == "Provided bucket: `other` does not match the Storage bucket of the current instance: `bucket`")
        } catch {
            Issue.record("wrong error \(error)")
        }
    }

    @Test func emptyBucketAcceptsAnyBucket() throws {
        let open = Storage(url: "")
        #expect(try open.reference(for: URL(string: "gs://other/a")!).bucket == "other")
        #expect(open.reference().bucket == "")
    }

    @Test func requestURLs() {
        let s = Storage(url: "gs://bucket")
        #expect(
            s.url(for: StoragePath(bucket: "bucket", object: "path/to/object")).absoluteString
                == "https://firebasestorage.googleapis.com:443/v0/b/bucket/o/path%2Fto%2Fobject")
        #expect(
            s.url(for: StoragePath(bucket: "bucket")).absoluteString
                == "https://firebasestorage.googleapis.com:443/v0/b/bucket/o")
        #expect(
            s.url(for: StoragePath(bucket: "b", object: "-._~!$'()*,=:@&+; ?#%")).absoluteString.hasSuffix(
                "/o/-._~!$'()*,=:@%26%2B%3B%20%3F%23%25"))
        let e = Storage(url: "gs://bucket")
        e.useEmulator(withHost: "localhost", port: 8080)
        #expect(
            e.url(for: StoragePath(bucket: "bucket"), query: [("prefix", "a+b/"), ("delimiter", "/")]).absoluteString
                == "http://localhost:8080/v0/b/bucket/o?prefix=a%2Bb%2F&delimiter=%2F")
    }

    @Test func tokensOnlyOverHTTPSOrLoopback() {
        #expect(Storage.mayAttachTokens(to: URL(string: "https://example.com/v0")!))
        #expect(Storage.mayAttachTokens(to: URL(string: "http://127.0.0.1:9199/v0")!))
        #expect(Storage.mayAttachTokens(to: URL(string: "http://localhost:9199/v0")!))
        #expect(!Storage.mayAttachTokens(to: URL(string: "http://10.0.2.2:9199/v0")!))
    }

    @Test func sharedInstances() {
        #expect(Storage.storage(url: "gs://shared-a") === Storage.storage(url: "gs://shared-a/"))
        #expect(Storage.storage(url: "gs://shared-a") !== Storage.storage(url: "gs://shared-b"))
    }

    @Test func mimeTypes() {
        #expect(MIMETypes.type(forPathExtension: "txt") == "text/plain")
        #expect(MIMETypes.type(forPathExtension: "png") == "image/png")
        #expect(MIMETypes.type(forPathExtension: "mp3") == "audio/mpeg")
        #expect(MIMETypes.type(forPathExtension: "mov") == "video/quicktime")
        #expect(MIMETypes.type(forPathExtension: "gif") == "image/gif")
        #expect(MIMETypes.type(forPathExtension: "xyz") == "application/octet-stream")
    }
}
