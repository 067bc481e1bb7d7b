import Foundation
import SiloAuth
import SiloCore
import SiloHTTP
import SiloServer
import SiloTesting
import SiloWire
import Testing

@testable import SiloConsole
@testable import SiloFirebaseAPI
@testable import SiloGCSAPI
@testable import SiloServerKit
@testable import SiloTestFaults

/// HTML form uploads with a V4 POST policy (`POST /{bucket}`, `multipart/form-data`), checked —
/// signature, conditions, the signer's permission — before the file's first byte is stored, and the file held to
/// the policy's content-length-range as it streams.
@Suite struct PostPolicyUploadTests {
    let s: SecuredServer

    init() throws {
        s = try SecuredServer()
        try s.bind([("roles/storage.objectCreator", ["serviceAccount:\(SecuredServer.writer.email)"])])
    }

    var writer: TestServiceAccount { SecuredServer.writer }

    static let boundary = "----silo-form-4b1f0c"

    /// A form body in a browser's layout: the fields, then `file`.
    static func form(
        _ fields: [(String, String)], file: [UInt8], filename: String = "upload.bin", fileType: String? = nil
    )
        -> [UInt8]
    {
        var body: [UInt8] = []
        for (name, value) in fields {
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
        }
        body += Array(
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\(filename)\"\r\n".utf8)
        if let fileType { body += Array("Content-Type: \(fileType)\r\n".utf8) }
        body += Array("\r\n".utf8) + file + Array("\r\n--\(boundary)--\r\n".utf8)
        return body
    }

    func post(_ fields: [(String, String)], file: [UInt8], filename: String = "upload.bin") throws -> TestResponse {
        try s.client.send(
            method: "POST", target: "/\(s.bucketName)",
            headers: ["Content-Type": "multipart/form-data; boundary=\(Self.boundary)"],
            body: Self.form(fields, file: file, filename: filename, fileType: "image/png"))
    }

    func stored(_ name: String) throws -> TestResponse {
        try s.send("GET", "\(s.objects)/\(PercentCoding.encodeComponent(name))?alt=media", headers: s.admin)
    }

    @Test("a signed form stores its file with the form's metadata and answers 204")
    func upload() throws {
        let fields = try writer.postPolicyFields(
            bucket: s.bucketName, key: "uploads/${filename}",
            fields: [("Content-Type", "text/plain"), ("x-goog-meta-origin", "form")], date: .now())
        let response = try post(fields, file: Array("form bytes".utf8), filename: "note.txt")
        #expect(response.status == 204, "\(response.text)")
        #expect(response.headers["ETag"] != nil)
        #expect(try stored("uploads/note.txt").text == "form bytes")
        let metadata = try s.send("GET", "\(s.objects)/uploads%2Fnote.txt", headers: s.admin).json()
        #expect(metadata["contentType"]?.stringValue == "text/plain")
        #expect(metadata["metadata"]?.objectValue?["origin"]?.stringValue == "form")
    }

    @Test("success_action_status 201 answers a PostResponse; success_action_redirect answers 303 to it")
    func successActions() throws {
        let created = try post(
            try writer.postPolicyFields(
                bucket: s.bucketName, key: "a.txt", fields: [("success_action_status", "201")], date: .now()),
            file: [1, 2, 3])
        #expect(created.status == 201)
        #expect(XMLText.value("Key", in: Substring(created.text)) == "a.txt")
        #expect(XMLText.value("Bucket", in: Substring(created.text)) == s.bucketName)
        let redirected = try post(
            try writer.postPolicyFields(
                bucket: s.bucketName, key: "b.txt", fields: [("success_action_redirect", "https://app.example/done")],
                date: .now()), file: [4])
        #expect(redirected.status == 303)
        #expect(
            redirected.headers["Location"]?.hasPrefix("https://app.example/done?bucket=\(s.bucketName)&key=b.txt&etag=")
                == true)
    }

    @Test("content-length-range is held while the file streams: too large or too small stores nothing")
    func contentLengthRange() throws {
        let range: [JSONValue] = [.array([.string("content-length-range"), .number(4), .number(8)])]
        for (name, size, status) in [("small.bin", 2, 400), ("large.bin", 64 << 10, 400), ("fits.bin", 6, 204)] {
            let fields = try writer.postPolicyFields(bucket: s.bucketName, key: name, conditions: range, date: .now())
            let response = try post(fields, file: [UInt8](repeating: 7, count: size))
            #expect(response.status == status, "\(name): \(response.text)")
            #expect(try stored(name).status == (status == 204 ? 200 : 404), "\(name)")
        }
    }

    @Test("a condition the form breaks, a field no condition names, an expired policy or a forged signature fail")
    func refusals() throws {
        var fields = try writer.postPolicyFields(bucket: s.bucketName, key: "k.txt", date: .now())
        fields = fields.map { $0.0 == "key" ? ("key", "other.txt") : $0 }
        let renamed = try post(fields, file: [1])
        #expect(renamed.status == 400 && SignedURLServerTests.code(renamed) == "InvalidPolicyDocument")
        let extra = try post(
            try writer.postPolicyFields(bucket: s.bucketName, key: "k.txt", date: .now()) + [("acl", "public-read")],
            file: [1])
        #expect(extra.status == 400 && SignedURLServerTests.code(extra) == "InvalidPolicyDocument")
        let old = Timestamp(microseconds: Timestamp.now().microseconds - 3_600_000_000)
        let expired = try post(try writer.postPolicyFields(bucket: s.bucketName, key: "k.txt", date: old), file: [1])
        #expect(expired.status == 400 && SignedURLServerTests.code(expired) == "ExpiredToken")
        let forged = try SecuredServer.stranger.postPolicyFields(bucket: s.bucketName, key: "k.txt", date: .now())
            .map {
                $0.0 == "x-goog-credential" ? ($0.0, $0.1.replacingOccurrences(of: "stranger", with: "writer")) : $0
            }
        let mismatch = try post(forged, file: [1])
        #expect(mismatch.status == 403 && SignedURLServerTests.code(mismatch) == "SignatureDoesNotMatch")
        #expect(try stored("k.txt").status == 404)
        #expect(try stored("other.txt").status == 404)
    }

    @Test("a field GCS's forms do not take is refused even when the policy names it; x-ignore-* fields are not")
    func unknownField() throws {
        // google-cloud-storage's system test of an invalid field: `fields=` puts it in the form and the policy.
        let unknown = try post(
            try writer.postPolicyFields(
                bucket: s.bucketName, key: "u.txt", fields: [("x-goog-random", "invalid_field")], date: .now()),
            file: [1])
        #expect(unknown.status == 400 && SignedURLServerTests.code(unknown) == "InvalidArgument", "\(unknown.text)")
        #expect(unknown.text.contains("x-goog-random"))
        #expect(try stored("u.txt").status == 404)
        let ignored = try post(
            try writer.postPolicyFields(bucket: s.bucketName, key: "i.txt", date: .now()) + [("x-ignore-note", "n")],
            file: [2])
        #expect(ignored.status == 204, "\(ignored.text)")
        let timed = try post(
            try writer.postPolicyFields(
                bucket: s.bucketName, key: "t.txt", fields: [("x-goog-custom-time", "2026-01-02T03:04:05Z")],
                date: .now()), file: [3])
        #expect(timed.status == 204, "\(timed.text)")
        let metadata = try s.send("GET", "\(s.objects)/t.txt", headers: s.admin).json()
        #expect(metadata["customTime"]?.stringValue?.hasPrefix("2026-01-02T03:04:05") == true)
    }

    @Test("the signer needs storage.objects.create (and delete to replace); an unsigned form is anonymous")
    func permission() throws {
        let unbound = try post(
            try SecuredServer.reader.postPolicyFields(bucket: s.bucketName, key: "r.txt", date: .now()), file: [1])
        #expect(unbound.status == 403 && SignedURLServerTests.code(unbound) == "AccessDenied")
        try s.put("taken.txt", "admin's")
        let replace = try post(
            try writer.postPolicyFields(bucket: s.bucketName, key: "taken.txt", date: .now()), file: [1])
        #expect(replace.status == 403)
        #expect(try stored("taken.txt").text == "admin's")
        #expect(try post([("key", "anon.txt")], file: [1]).status == 401)
    }

    @Test("in emulator mode an unsigned form uploads, as the Firebase emulator's does")
    func emulatorMode() throws {
        let emulator = try SecuredServer(emulator: true, registered: false)
        let response = try emulator.client.send(
            method: "POST", target: "/\(emulator.bucketName)",
            headers: ["Content-Type": "multipart/form-data; boundary=\(Self.boundary)"],
            body: Self.form([("key", "e.txt")], file: Array("e".utf8)))
        #expect(response.status == 204, "\(response.text)")
    }

    @Test("the form parser gives the same fields and file however the body is cut")
    func parserChunking() throws {
        let body = Self.form(
            [("key", "a;b \"c\".txt"), ("policy", String(repeating: "p", count: 3000))],
            file: Array((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31) }), fileType: "application/x-thing")
        func parse(_ cuts: [Int]) throws -> ([String], [UInt8], String?) {
            var parser = MultipartParser(formBoundary: Self.boundary, maxFieldBytes: 64 << 10, maxFields: 8)
            var fields: [String] = []
            var file: [UInt8] = []
            var type: String?
            var start = 0
            for end in cuts + [body.count] where end > start {
                try body[start..<end].withUnsafeBytes { chunk in
                    try parser.feed(chunk) { event in
                        switch event {
                        case .field(let name, let value):
                            fields.append(name + "=" + String(decoding: value, as: UTF8.self))
                        case .fileStart(let filename, let contentType):
                            fields.append("file:" + (filename ?? ""))
                            type = contentType
                        case .mediaBytes(let bytes): file.append(contentsOf: bytes)
                        case .metadata, .mediaStart: Issue.record("related-mode events from a form parser")
                        }
                    }
                }
                start = end
            }
            try parser.finish()
            return (fields, file, type)
        }
        let whole = try parse([])
        #expect(whole.0.first == "key=a;b \"c\".txt")
        #expect(whole.0.last == "file:upload.bin")
        #expect(whole.1.count == 5000)
        #expect(whole.2 == "application/x-thing")
        let bytewise = try parse(Array(1..<body.count))
        #expect(bytewise.0 == whole.0 && bytewise.1 == whole.1 && bytewise.2 == whole.2)
        for cut in stride(from: 1, to: body.count, by: 97) {
            let split = try parse([cut])
            #expect(split.0 == whole.0 && split.1 == whole.1, "cut at \(cut)")
        }
    }
}
