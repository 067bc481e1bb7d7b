import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTesting
import SiloWire
import Testing

let bucket = "demo.appspot.com"

func objectPath(_ name: String, bucket: String = bucket) -> String {
    "/v0/b/\(bucket)/o/" + PercentCoding.encodeComponent(name)
}

func bucketPath(_ bucket: String = bucket) -> String { "/v0/b/\(bucket)/o" }

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Deterministic pseudo-random bytes (so failures reproduce).
func pattern(_ count: Int, seed: UInt64 = 42) -> [UInt8] {
    var state = seed
    return (0..<count).map { _ in
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return UInt8(truncatingIfNeeded: state >> 33)
    }
}

extension HTTPTestClient {
    /// A v0 media upload (`POST /v0/b/{b}/o?name=`).
    @discardableResult
    func mediaUpload(_ name: String, _ body: [UInt8], contentType: String? = nil, headers extra: HTTPHeaders = [:])
        throws -> TestResponse
    {
        var headers = extra
        if let contentType { headers.set("Content-Type", contentType) }
        return try send(
            method: "POST", target: bucketPath() + "?name=" + PercentCoding.encodeComponent(name), headers: headers,
            body: body)
    }

    /// A v0 multipart upload in the JS SDK's byte layout.
    @discardableResult
    func multipartUpload(
        _ name: String, metadata: String, _ body: [UInt8], boundary: String = "4827393847291837465",
        mediaType: String = "text/plain"
    ) throws -> TestResponse {
        var payload = bytes(
            "--\(boundary)\r\nContent-Type: application/json; charset=utf-8\r\n\r\n\(metadata)\r\n--\(boundary)\r\nContent-Type: \(mediaType)\r\n\r\n"
        )
        payload += body
        payload += bytes("\r\n--\(boundary)--")
        return try send(
            method: "POST", target: bucketPath() + "?name=" + PercentCoding.encodeComponent(name),
            headers: [
                "X-Goog-Upload-Protocol": "multipart", "Content-Type": "multipart/related; boundary=\(boundary)",
            ], body: payload)
    }

}

/// Access decisions for the server suites: `public/**` for everyone, `testing/**` for
/// signed-in users, and no empty uploads under `deny-empty/`. A policy in Swift rather than a rules file: it tests
/// where the server asks and with which identity, not the rules language.
struct VectorPolicy: AccessPolicy {
    func allows(_ request: AccessRequest) -> Bool {
        if request.path.hasPrefix("public") { return true }
        if request.path.hasPrefix("testing") { return request.principal?.uid != nil }
        if request.path.hasPrefix("deny-empty") { return request.proposedSize.map { $0 > 0 } ?? true }
        return false
    }
}

/// An unsigned JWT of the shape the Firebase emulators issue (`alg: none`, `iat: 0`).
func emulatorToken(uid: String) -> String {
    let header = Base64.encodeURLSafe(bytes(#"{"alg":"none","type":"JWT"}"#))
    let claims = Base64.encodeURLSafe(
        bytes(
            #"{"iss":"https://securetoken.google.com/demo","aud":"demo","iat":0,"exp":3600,"auth_time":0,"sub":"\#(uid)","user_id":"\#(uid)","firebase":{"sign_in_provider":"custom"}}"#
        ))
    return "\(header).\(claims)."
}

func matchesTimestamp(_ s: String?) -> Bool {
    guard let s else { return false }
    let b = Array(s.utf8)
    guard b.count == 24 else { return false }
    let digits: Set<Int> = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22]
    for (i, c) in b.enumerated() {
        if digits.contains(i) { if !(c >= 0x30 && c <= 0x39) { return false } }
    }
    return b[4] == 0x2D && b[7] == 0x2D && b[10] == 0x54 && b[13] == 0x3A && b[16] == 0x3A && b[19] == 0x2E
        && b[23] == 0x5A
}
