import Foundation
import SiloWire
import Testing

@testable import SiloStorage

@Suite struct MetadataTests {
    static var full: [String: AnyHashable] {
        [
            "bucket": "bucket", "cacheControl": "max-age=3600", "contentDisposition": "inline",
            "contentEncoding": "gzip", "contentLanguage": "en-us", "contentType": "application/octet-stream",
            "metadata": ["foo": "bar"] as [String: String], "generation": "12345", "metageneration": "67890",
            "name": "path/to/object", "timeCreated": "1992-08-07T17:22:53.108Z", "updated": "2016-03-01T20:16:01.673Z",
            "md5Hash": "d41d8cd98f00b204e9800998ecf8427e", "size": Int64(1337),
        ]
    }

    @Test func initialisesEveryProperty() {
        let m = StorageMetadata(dictionary: Self.full)
        #expect(m.bucket == "bucket")
        #expect(m.cacheControl == "max-age=3600")
        #expect(m.contentDisposition == "inline")
        #expect(m.contentEncoding == "gzip")
        #expect(m.contentLanguage == "en-us")
        #expect(m.contentType == "application/octet-stream")
        #expect(m.customMetadata == ["foo": "bar"])
        #expect(m.generation == 12345)
        #expect(m.metageneration == 67890)
        #expect(m.path == "path/to/object")
        #expect(m.name == "object")
        #expect(m.md5Hash == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(m.size == 1337)
        #expect(m.timeCreated == Date(timeIntervalSince1970: 713_208_173.108))
        #expect(!m.isFile && !m.isFolder)
    }

    @Test func dictionaryRoundTrip() {
        let d = StorageMetadata(dictionary: Self.full).dictionaryRepresentation()
        #expect(d["generation"] == AnyHashable("12345"))
        #expect(d["metageneration"] == AnyHashable("67890"))
        #expect(d["size"] == AnyHashable(Int64(1337)))
        #expect(d["timeCreated"] == AnyHashable("1992-08-07T17:22:53.108Z"))
        #expect(d["updated"] == AnyHashable("2016-03-01T20:16:01.673Z"))
        #expect(d == Self.full)
        #expect(StorageMetadata(dictionary: d) == StorageMetadata(dictionary: Self.full))
    }

    @Test func emptyMetadataDictionary() {
        let d = StorageMetadata().dictionaryRepresentation()
        #expect(d["bucket"] == AnyHashable(""))
        #expect(d.keys.contains("metadata"))
        #expect(Set(d.keys) == ["bucket", "metadata"])
    }

    @Test func lenientNumbersAndDates() {
        let m = StorageMetadata(dictionary: [
            "size": 7, "generation": "x", "timeCreated": "2020-01-01T00:00:00Z",
            "metadata": ["a": 1] as [String: AnyHashable],
        ])
        #expect(m.size == 7)
        #expect(m.generation == 0)
        #expect(m.timeCreated != nil)  // Firebase yields nil without milliseconds; we accept any RFC 3339
        #expect(m.customMetadata == nil)  // one non-string value drops the map, as in Firebase
    }

    @Test func equalityCopyAndHash() {
        let a = StorageMetadata(dictionary: Self.full)
        let b = a.copy()
        #expect(a == b && a !== b)
        #expect(a.hashValue == b.hashValue)
        #expect(StorageMetadata(dictionary: ["md5Hash": "a"]) != StorageMetadata(dictionary: ["md5Hash": "b"]))
        #expect(StorageMetadata(dictionary: ["nonsense": "x"]) == StorageMetadata())
    }

    @Test func updateSendsOnlyChanges() {
        let m = StorageMetadata(dictionary: Self.full)
        #expect(m.updateJSON().serializedString == "{}")
        m.contentType = "text/plain"
        m.cacheControl = nil
        var custom = m.customMetadata ?? [:]
        custom["new"] = "v"
        custom["foo"] = nil
        m.customMetadata = custom
        #expect(
            m.updateJSON().serializedString
                == #"{"cacheControl":null,"contentType":"text/plain","metadata":{"new":"v","foo":null}}"#)
        m.customMetadata = nil
        #expect(m.updateJSON().objectValue?["metadata"] == .null)
    }

    @Test func freshMetadataSendsOnlyWhatWasSet() {
        let fresh = StorageMetadata()
        fresh.cacheControl = "public,max-age=300"
        fresh.contentType = "image/jpeg"
        #expect(
            fresh.updateJSON().serializedString == #"{"cacheControl":"public,max-age=300","contentType":"image/jpeg"}"#)
        let delete = StorageMetadata()
        delete.contentType = nil
        #expect(delete.updateJSON().serializedString == #"{"contentType":null}"#)
    }

    @Test func uploadBody() {
        let m = StorageMetadata()
        m.contentType = "text/plain"
        m.customMetadata = ["k": "v"]
        m.path = "a/b.txt"
        #expect(
            m.uploadJSON().serializedString == #"{"name":"a/b.txt","contentType":"text/plain","metadata":{"k":"v"}}"#)
    }

    @Test func serverJSON() throws {
        let body =
            #"{"name":"a/b","bucket":"bk","generation":"1","metageneration":"2","size":"11","contentEncoding":"identity","timeCreated":"2020-12-13T16:57:04.162Z","metadata":{"x":"y"},"downloadTokens":"t1,t2"}"#
        let m = try StorageMetadata.fromServer(Data(body.utf8))
        #expect(m.isFile && m.size == 11 && m.metageneration == 2 && m.name == "b" && m.customMetadata == ["x": "y"])
        #expect(throws: StorageError.self) { try StorageMetadata.fromServer(Data("nope".utf8)) }
    }
}

@Suite struct ErrorTests {
    @Test func rawValues() {
        #expect(StorageErrorCode.unknown.rawValue == -13000)
        #expect(StorageErrorCode.objectNotFound.rawValue == -13010)
        #expect(StorageErrorCode.unauthenticated.rawValue == -13020)
        #expect(StorageErrorCode.downloadSizeExceeded.rawValue == -13032)
        #expect(StorageErrorCode.cancelled.rawValue == -13040)
        #expect(StorageErrorCode.pathError.rawValue == -13053)
        #expect(StorageErrorDomain == "FIRStorageErrorDomain")
    }

    @Test(arguments: [
        (400, StorageErrorCode.unknown), (401, .unauthenticated), (402, .quotaExceeded), (403, .unauthorized),
        (404, .objectNotFound), (409, .unknown), (500, .unknown), (503, .unknown),
    ])
    func httpMapping(status: Int, code: StorageErrorCode) {
        let error = StorageError.http(status: status, body: Data("{}".utf8), bucket: "b", object: "o/p")
        #expect(error.code == code)
        #expect(error.serverError["ResponseErrorCode"] as? Int == status)
        #expect(error.serverError["ResponseErrorDomain"] as? String == "com.google.HTTPStatus")
        #expect(error.serverError["object"] as? String == "o/p")
        let ns = error as NSError
        #expect(ns.domain == StorageErrorDomain)
        #expect(ns.code == code.rawValue)
        #expect(StorageErrorCode(error) == code)
    }

    @Test func messages() {
        #expect(
            StorageError.http(status: 404, body: Data(), bucket: "b", object: "x").localizedDescription
                == "Object x does not exist.")
        #expect(
            StorageError.http(status: 403, body: Data(), bucket: "b", object: "x").message
                == "User does not have permission to access gs://b/x.")
        #expect(
            StorageError.http(status: 403, body: Data(), bucket: "b", object: nil).message
                == "User does not have permission to access gs://b/<object-entity-internal-error>.")
        #expect(
            StorageError.http(status: 418, body: Data(), bucket: "b", object: "x").message
                == "Unexpected 418 code from backend")
        #expect(
            StorageError.http(status: 400, body: Data(), bucket: "b", object: "x").message
                == "Unknown 400 error from backend")
        #expect(StorageError.cancelled.localizedDescription == "User cancelled the upload/download.")
        let big = StorageError.downloadSizeExceeded(total: 1_048_576, maxSize: 1024)
        #expect((big as NSError).userInfo["totalSize"] as? Int64 == 1_048_576)
        #expect((big as NSError).userInfo["maxAllowedSize"] as? Int64 == 1024)
        #expect(StorageError.transport(CancellationError(), bucket: "b", object: nil).code == .cancelled)
        let posix = StorageError.transport(NSError(domain: NSPOSIXErrorDomain, code: 40), bucket: "b", object: nil)
        #expect(posix.message.hasPrefix("POSIX errno 40 ("))
    }

    @Test func errorsAreSendable() {
        let error: any Error & Sendable = StorageError.unknown(message: "m", serverError: ["a": 1])
        #expect(StorageErrorCode(error) == .unknown)
    }
}
