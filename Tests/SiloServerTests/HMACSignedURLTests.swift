import Foundation
import SiloAuth
import SiloCore
import SiloHTTP
import SiloHashing
import SiloServer
import SiloServerKit
import SiloTesting
import SiloWire
import Testing

/// `GOOG4-HMAC-SHA256` signed URLs on the XML API: an HMAC key's access id as the credential, verified by the same
/// code as RSA signatures, its service account then held to its IAM permissions.
@Suite struct HMACSignedURLTests {
    let s: SecuredServer
    static let keys = "/storage/v1/projects/silo-test/hmacKeys"

    init() throws {
        s = try SecuredServer()
        try s.put("photo.jpg", "jpeg bytes")
        try s.bind([("roles/storage.objectAdmin", ["serviceAccount:\(SecuredServer.writer.email)"])])
    }

    var path: String { "/\(s.bucketName)/photo.jpg" }

    func createKey(_ email: String = SecuredServer.writer.email) throws -> (id: String, secret: String) {
        let created = try s.send("POST", Self.keys + "?serviceAccountEmail=\(email)", headers: s.admin)
        #expect(created.status == 200, "\(created.text)")
        let json = try created.json()
        return (
            try #require(json["metadata"]?.objectValue?["accessId"]?.stringValue),
            try #require(json["secret"]?.stringValue)
        )
    }

    /// A URL signed with an HMAC key for the server's own host.
    func url(
        _ method: String = "GET", path: String? = nil, id: String, secret: String, date: Timestamp = .now(),
        expires: Int64 = 900
    ) -> String {
        let path = path ?? self.path
        let stamp = String(date.rfc3339.prefix(19).filter { $0 != "-" && $0 != ":" }) + "Z"
        let scope = "\(stamp.prefix(8))/auto/storage/goog4_request"
        let query: [(name: String, value: String)] = [
            ("X-Goog-Algorithm", "GOOG4-HMAC-SHA256"), ("X-Goog-Credential", "\(id)/\(scope)"), ("X-Goog-Date", stamp),
            ("X-Goog-Expires", String(expires)), ("X-Goog-SignedHeaders", "host"),
        ]
        let canonical = GoogleV4Signing.canonicalRequest(
            method: method, path: path, query: query, headers: [("host", "127.0.0.1:\(s.server.port)")],
            payload: GoogleV4Signing.unsignedPayload)
        let stringToSign = GoogleV4Signing.stringToSign(
            algorithm: GoogleV4Signing.hmacAlgorithm, date: stamp, scope: scope, canonicalRequest: canonical)
        let key = GoogleV4Signing.hmacSigningKey(secret: secret, scope: scope)
        let signature = HMACSHA256.authenticationCode(key: key, message: Array(stringToSign.utf8))
            .map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        return path + "?" + GoogleV4Signing.canonicalQuery(query) + "&X-Goog-Signature=" + signature
    }

    static func code(_ response: TestResponse) -> String? { XMLText.value("Code", in: Substring(response.text)) }

    @Test("the signing key and signature match values computed with Python's hmac module")
    func knownAnswer() {
        let secret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlYw"
        let scope = "20261202/auto/storage/goog4_request"
        let key = GoogleV4Signing.hmacSigningKey(secret: secret, scope: scope)
        let hex = { (bytes: [UInt8]) in bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }
        #expect(hex(key) == "57de6692bed0de997c105d9ff390efb85cc19e2519e30d05f517a808c446c78e")
        let message = "GOOG4-HMAC-SHA256\n20261202T000000Z\n\(scope)\nabc"
        #expect(
            hex(HMACSHA256.authenticationCode(key: key, message: Array(message.utf8)))
                == "d531f5bb230b88fcd56a5fd16a0c7da63c9803d81727c731483d4befcdad88dd")
    }

    @Test("a URL signed with an active key acts as its service account; a changed one does not")
    func verified() throws {
        let (id, secret) = try createKey()
        let target = url(id: id, secret: secret)
        let got = try s.send("GET", target)
        #expect(got.status == 200 && got.text == "jpeg bytes", "\(got.text)")
        let tampered = try s.send("GET", target.replacingOccurrences(of: "photo.jpg", with: "photo.jpeg"))
        #expect(tampered.status == 403 && Self.code(tampered) == "SignatureDoesNotMatch", "\(tampered.text)")
        #expect(tampered.text.contains("<StringToSign>GOOG4-HMAC-SHA256\n"))
        let wrongSecret = try s.send("GET", url(id: id, secret: String(secret.reversed())))
        #expect(wrongSecret.status == 403 && Self.code(wrongSecret) == "SignatureDoesNotMatch")
        let wrongMethod = try s.send("DELETE", target)
        #expect(wrongMethod.status == 403 && Self.code(wrongMethod) == "SignatureDoesNotMatch")
        let expired = try s.send(
            "GET",
            url(
                id: id, secret: secret, date: Timestamp(microseconds: Timestamp.now().microseconds - 7_200_000_000),
                expires: 60))
        #expect(expired.status == 400 && Self.code(expired) == "ExpiredToken", "\(expired.text)")
    }

    @Test("an unknown, inactive or deleted key signs nothing")
    func revoked() throws {
        let (id, secret) = try createKey()
        let unknown = try s.send("GET", url(id: "GOOG1ENOSUCHKEY", secret: secret))
        #expect(unknown.status == 403, "\(unknown.text)")
        let target = url(id: id, secret: secret)
        #expect(try s.send("GET", target).status == 200)
        let inactive = try s.send("PUT", "\(Self.keys)/\(id)", #"{"state":"INACTIVE"}"#, headers: s.admin)
        #expect(inactive.status == 200, "\(inactive.text)")
        #expect(try s.send("GET", target).status == 403)
        #expect(try s.send("DELETE", "\(Self.keys)/\(id)", headers: s.admin).status == 204)
        #expect(try s.send("GET", target).status == 403)
    }

    @Test("the key's service account is held to its IAM permissions")
    func permissions() throws {
        let (id, secret) = try createKey(SecuredServer.stranger.email)
        let denied = try s.send("GET", url(id: id, secret: secret))
        #expect(denied.status == 403 && Self.code(denied) == "AccessDenied", "\(denied.text)")
        #expect(denied.text.contains(SecuredServer.stranger.email))
    }

    /// `Authorization: GOOG4-HMAC-SHA256 …` and `x-goog-date` for a request to the server's own host.
    func signedHeaders(
        _ method: String, path: String, id: String, secret: String, date: Timestamp = .now()
    ) -> HTTPHeaders {
        let stamp = String(date.rfc3339.prefix(19).filter { $0 != "-" && $0 != ":" }) + "Z"
        let scope = "\(stamp.prefix(8))/auto/storage/goog4_request"
        let canonical = GoogleV4Signing.canonicalRequest(
            method: method, path: path, query: [],
            headers: [("host", "127.0.0.1:\(s.server.port)"), ("x-goog-date", stamp)],
            payload: GoogleV4Signing.unsignedPayload)
        let stringToSign = GoogleV4Signing.stringToSign(
            algorithm: GoogleV4Signing.hmacAlgorithm, date: stamp, scope: scope, canonicalRequest: canonical)
        let key = GoogleV4Signing.hmacSigningKey(secret: secret, scope: scope)
        let signature = HMACSHA256.authenticationCode(key: key, message: Array(stringToSign.utf8))
            .map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        return [
            "x-goog-date": stamp,
            "Authorization":
                "GOOG4-HMAC-SHA256 Credential=\(id)/\(scope), SignedHeaders=host;x-goog-date, Signature=\(signature)",
        ]
    }

    @Test("an Authorization: GOOG4-HMAC-SHA256 header signs a request the same way")
    func headerSigned() throws {
        let (id, secret) = try createKey()
        let got = try s.send("GET", path, headers: signedHeaders("GET", path: path, id: id, secret: secret))
        #expect(got.status == 200 && got.text == "jpeg bytes", "\(got.text)")
        let other = "/\(s.bucketName)/other.txt"
        let put = try s.send(
            "PUT", other, "by header", headers: signedHeaders("PUT", path: other, id: id, secret: secret))
        #expect(put.status == 200, "\(put.text)")
        let wrongPath = try s.send("GET", path, headers: signedHeaders("GET", path: other, id: id, secret: secret))
        #expect(wrongPath.status == 403 && Self.code(wrongPath) == "SignatureDoesNotMatch", "\(wrongPath.text)")
        let old = Timestamp(microseconds: Timestamp.now().microseconds - 3_600_000_000)
        let stale = try s.send(
            "GET", path, headers: signedHeaders("GET", path: path, id: id, secret: secret, date: old))
        #expect(stale.status == 400, "\(stale.text)")
        let withDate = signedHeaders("GET", path: path, id: id, secret: secret)
        let missingDate: HTTPHeaders = ["Authorization": try #require(withDate["Authorization"])]
        #expect(try s.send("GET", path, headers: missingDate).status == 400)
        let stranger = try createKey(SecuredServer.stranger.email)
        let denied = try s.send(
            "GET", path, headers: signedHeaders("GET", path: path, id: stranger.id, secret: stranger.secret))
        #expect(denied.status == 403 && Self.code(denied) == "AccessDenied", "\(denied.text)")
    }

    /// A POST policy form signed with an HMAC key: the signature is the HMAC of the base64 policy under the key's
    /// derived signing key.
    func hmacPolicyForm(key name: String, id: String, secret: String) throws -> [(String, String)] {
        try PostPolicyForm.fields(
            bucket: s.bucketName, key: name, date: .now(), signer: id, algorithm: GoogleV4Signing.hmacAlgorithm
        ) { policy, scope in
            HMACSHA256.authenticationCode(
                key: GoogleV4Signing.hmacSigningKey(secret: secret, scope: scope), message: Array(policy.utf8))
        }
    }

    func postForm(_ fields: [(String, String)], file: String) throws -> TestResponse {
        try s.client.send(
            method: "POST", target: "/\(s.bucketName)",
            headers: ["Content-Type": "multipart/form-data; boundary=\(PostPolicyUploadTests.boundary)"],
            body: PostPolicyUploadTests.form(fields, file: Array(file.utf8)))
    }

    @Test("a POST policy signed with an HMAC key uploads as its service account; a wrong secret or other key does not")
    func postPolicy() throws {
        let (id, secret) = try createKey()
        let stored = try postForm(try hmacPolicyForm(key: "form.txt", id: id, secret: secret), file: "hmac form")
        #expect(stored.status == 204, "\(stored.text)")
        let read = try s.send("GET", "/\(s.bucketName)/form.txt", headers: s.admin)
        #expect(read.status == 200 && read.text == "hmac form", "\(read.text)")
        let forged = try postForm(
            try hmacPolicyForm(key: "forged.txt", id: id, secret: String(secret.reversed())), file: "x")
        #expect(forged.status == 403 && Self.code(forged) == "SignatureDoesNotMatch", "\(forged.text)")
        let stranger = try createKey(SecuredServer.stranger.email)
        let denied = try postForm(
            try hmacPolicyForm(key: "denied.txt", id: stranger.id, secret: stranger.secret), file: "x")
        #expect(denied.status == 403 && Self.code(denied) == "AccessDenied", "\(denied.text)")
        #expect(try s.send("GET", "/\(s.bucketName)/forged.txt", headers: s.admin).status == 404)
        #expect(try s.send("GET", "/\(s.bucketName)/denied.txt", headers: s.admin).status == 404)
    }
}
