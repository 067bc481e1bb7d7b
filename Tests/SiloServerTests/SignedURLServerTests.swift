import Foundation
import SiloAuth
import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTesting
import SiloWire
import Testing

/// Signed URLs on the XML API, verified before any route sees them, their signer held to its IAM
/// permissions; refusals in GCS's XML error shape.
///
/// The XML object routes answer 501 on main until the XML API's GET/PUT/DELETE land; a URL these tests expect to
/// pass therefore answers 501 (the route) today and 200 once they do — either shows it got past verification and
/// IAM, which would answer 400 or 403.
@Suite struct SignedURLServerTests {
    let s: SecuredServer

    init() throws {
        s = try SecuredServer()
        try s.put("photo.jpg", "jpeg bytes")
        try s.bind([("roles/storage.objectAdmin", ["serviceAccount:\(SecuredServer.reader.email)"])])
    }

    var reader: TestServiceAccount { SecuredServer.reader }
    var path: String { "/\(s.bucketName)/photo.jpg" }

    /// The signature was accepted and the route did its work (201: a resumable start, 204: a delete).
    static func passed(_ response: TestResponse) -> Bool { (200...204).contains(response.status) }

    static func code(_ response: TestResponse) -> String? {
        XMLText.value("Code", in: Substring(response.text))
    }

    func url(
        _ method: String = "GET", path: String? = nil, host: String = "storage.googleapis.com",
        headers: [(String, String)] = [], account: TestServiceAccount? = nil, date: Timestamp = .now(),
        expires: Int64 = 900
    ) throws -> String {
        try (account ?? reader).signedURL(
            method: method, path: path ?? self.path, host: host, headers: headers, date: date, expires: expires)
    }

    @Test("a URL signed for storage.googleapis.com, or for the server's own host, gets through; any change fails")
    func verified() throws {
        #expect(Self.passed(try s.send("GET", try url())))
        #expect(Self.passed(try s.send("HEAD", try url("HEAD"))))
        #expect(Self.passed(try s.send("GET", try url(host: "127.0.0.1:\(s.server.port)"))))
        let target = try url()
        let tampered = target.replacingOccurrences(of: "photo.jpg", with: "photo.jpeg")
        let mismatch = try s.send("GET", tampered)
        #expect(mismatch.status == 403)
        #expect(Self.code(mismatch) == "SignatureDoesNotMatch")
        #expect(mismatch.text.contains("<StringToSign>GOOG4-RSA-SHA256\n"))
        #expect(mismatch.text.contains("<CanonicalRequest>GET\n/\(s.bucketName)/photo.jpeg\n"))
        let wrongMethod = try s.send("DELETE", target)
        #expect(wrongMethod.status == 403 && Self.code(wrongMethod) == "SignatureDoesNotMatch")
        let extra = try s.send("GET", target + "&generation=1")
        #expect(extra.status == 403 && Self.code(extra) == "SignatureDoesNotMatch")
        #expect(
            try s.send("GET", target.replacingOccurrences(of: "X-Goog-Expires=900", with: "X-Goog-Expires=901")).status
                == 403)
    }

    @Test("expired and malformed URLs are 400 (ExpiredToken, MalformedSecurityHeader); not yet valid is 403")
    func timeAndForm() throws {
        let expired = try s.send(
            "GET", try url(date: Timestamp(microseconds: Timestamp.now().microseconds - 1_000_000_000), expires: 900))
        #expect(expired.status == 400 && Self.code(expired) == "ExpiredToken", "\(expired.text)")
        let future = try s.send(
            "GET", try url(date: Timestamp(microseconds: Timestamp.now().microseconds + 600_000_000)))
        #expect(future.status == 403 && Self.code(future) == "AccessDenied")
        let week = try url().replacingOccurrences(of: "X-Goog-Expires=900", with: "X-Goog-Expires=604801")
        let malformed = try s.send("GET", week)
        #expect(malformed.status == 400 && Self.code(malformed) == "MalformedSecurityHeader")
        #expect(malformed.text.contains("<ParameterName>X-Goog-Expires</ParameterName>"))
        let both = try s.send("GET", try url(), headers: ["Authorization": "Bearer \(SecuredServer.adminKey)"])
        #expect(both.status == 400)
    }

    @Test("the signer needs the permission: no binding is 403 AccessDenied, an unregistered key 403")
    func signerPermission() throws {
        let unbound = try s.send("GET", try url(account: SecuredServer.writer))
        #expect(unbound.status == 403 && Self.code(unbound) == "AccessDenied")
        #expect(unbound.text.contains(SecuredServer.writer.email))
        let unknown = try s.send("GET", try url(account: SecuredServer.stranger))
        #expect(unknown.status == 403 && Self.code(unknown) == "SignatureDoesNotMatch")
    }

    @Test("signed headers must come with the request: Content-Type on PUT, x-goog-resumable on a resumable start")
    func signedHeaders() throws {
        let put = try url("PUT", path: "/\(s.bucketName)/upload.txt", headers: [("content-type", "text/plain")])
        #expect(Self.passed(try s.send("PUT", put, "hello", headers: ["Content-Type": "text/plain"])))
        let missing = try s.send("PUT", put, "hello")
        #expect(missing.status == 403 && Self.code(missing) == "SignatureDoesNotMatch")
        let other = try s.send("PUT", put, "hello", headers: ["Content-Type": "text/html"])
        #expect(other.status == 403)
        let start = try url("POST", path: "/\(s.bucketName)/big.bin", headers: [("x-goog-resumable", "start")])
        #expect(Self.passed(try s.send("POST", start, headers: ["x-goog-resumable": "start"])))
        #expect(try s.send("POST", start).status == 403)
    }

    @Test("a resumable session URL keeps the signed URL's query: its upload_id, not the signature, authorizes it")
    func sessionURL() throws {
        let start = try url("POST", path: "/\(s.bucketName)/big.bin", headers: [("x-goog-resumable", "start")])
        let chunk = try s.send("PUT", start + "&upload_id=0123456789abcdef", "bytes")
        #expect(![400, 401, 403].contains(chunk.status), "\(chunk.text)")
    }

    @Test("x-goog-content-length-range bounds an upload: a declared length outside it is refused before the route")
    func contentLengthRange() throws {
        let range = [("x-goog-content-length-range", "0,10")]
        let put = try url("PUT", path: "/\(s.bucketName)/bounded.txt", headers: range)
        let big = try s.send(
            "PUT", put, String(repeating: "x", count: 20), headers: ["x-goog-content-length-range": "0,10"])
        #expect(big.status == 413 && Self.code(big) == "EntityTooLarge")
        #expect(Self.passed(try s.send("PUT", put, "small", headers: ["x-goog-content-length-range": "0,10"])))
    }

    @Test("V2 signed URLs (GoogleAccessId, Expires, Signature) are verified too")
    func v2() throws {
        let expires = Timestamp.now().microseconds / 1_000_000 + 600
        #expect(Self.passed(try s.send("GET", try reader.signedURLV2(method: "GET", path: path, expires: expires))))
        let wrong = try s.send("DELETE", try reader.signedURLV2(method: "GET", path: path, expires: expires))
        #expect(wrong.status == 403 && Self.code(wrong) == "SignatureDoesNotMatch")
        let late = try s.send("GET", try reader.signedURLV2(method: "GET", path: path, expires: expires - 1200))
        #expect(late.status == 400 && Self.code(late) == "ExpiredToken")
    }

    @Test("a server configured with no signing host accepts only URLs signed for the host they arrive at")
    func noSigningHosts() throws {
        let strict = try SecuredServer(signedURLHosts: [])
        try strict.put("photo.jpg", "x")
        try strict.bind([("roles/storage.objectViewer", ["serviceAccount:\(reader.email)"])])
        let forGCS = try reader.signedURL(method: "GET", path: path, host: "storage.googleapis.com", date: .now())
        #expect(try strict.send("GET", forGCS).status == 403)
        let forSilo = try reader.signedURL(
            method: "GET", path: path, host: "127.0.0.1:\(strict.server.port)", date: .now())
        #expect(Self.passed(try strict.send("GET", forSilo)))
    }

    @Test("emulator mode without a registered key: everything but the signature is checked")
    func emulatorMode() throws {
        let emulator = try SecuredServer(emulator: true, registered: false)
        try emulator.put("photo.jpg", "x")
        let forged = try SecuredServer.stranger.signedURL(method: "GET", path: path, host: "anything", date: .now())
        #expect(Self.passed(try emulator.send("GET", forged)))
        let expired = try SecuredServer.stranger.signedURL(
            method: "GET", path: path, host: "anything",
            date: Timestamp(microseconds: Timestamp.now().microseconds - 1_000_000_000), expires: 900)
        #expect(try emulator.send("GET", expired).status == 400)
    }
}
