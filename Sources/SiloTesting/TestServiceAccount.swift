public import SiloAuth
public import SiloCore
@_spi(Testing) import SiloHashing
public import SiloWire

/// A Google service account made up for a test: a fresh RSA key, its JSON key file, and what its clients do with
/// it — sign token-request assertions, V4 signed URLs and POST policies — written out here from the protocol's
/// definition so tests drive the server the way google-auth and google-cloud-storage do.
public final class TestServiceAccount: Sendable {
    public let email: String
    public let keyID: String
    public let projectID: String
    private let key: RSAPrivateKey

    /// Key generation takes tens of milliseconds; suites share a few.
    public init(email: String = "uploader@silo-test.iam.gserviceaccount.com", keyID: String? = nil) throws {
        self.email = email
        self.keyID = keyID ?? String(email.utf8.count) + "f0e1d2c3b4a5968778695a4b3c2d1e0f"
        projectID = "silo-test"
        key = try RSAPrivateKey()
    }

    /// The key file as Google's console writes it (`token_uri` pointing where the test says).
    public func keyJSON(tokenURI: String = "https://oauth2.googleapis.com/token") throws -> [UInt8] {
        JSONValue.object([
            "type": .string("service_account"), "project_id": .string(projectID), "private_key_id": .string(keyID),
            "private_key": .string(try key.privateKeyPEM()), "client_email": .string(email),
            "client_id": .string("100000000000000000001"),
            "auth_uri": .string("https://accounts.google.com/o/oauth2/auth"),
            "token_uri": .string(tokenURI), "universe_domain": .string("googleapis.com"),
        ]).serialized()
    }

    public func account() throws -> ServiceAccount { try ServiceAccount(keyJSON: keyJSON()) }

    /// An RS256 JWT with `claims`, `kid` set to the key id unless told otherwise, signed with this account's key
    /// (or `signer`'s, to forge one).
    public func jwt(_ claims: JSONObject, kid: String?? = .none, signer: TestServiceAccount? = nil) throws -> String {
        var header: JSONObject = ["alg": .string("RS256"), "typ": .string("JWT")]
        switch kid {
        case .none: header["kid"] = .string(keyID)
        case .some(.some(let value)): header["kid"] = .string(value)
        case .some(.none): break
        }
        let input =
            Base64.encodeURLSafe(JSONValue.object(header).serialized()) + "."
            + Base64.encodeURLSafe(JSONValue.object(claims).serialized())
        return input + "." + Base64.encodeURLSafe(try (signer?.key ?? key).signRS256(Array(input.utf8)))
    }

    /// The claims google-auth puts in its token request, issued at `now`.
    public func assertionClaims(
        now: Timestamp, scope: String = "https://www.googleapis.com/auth/devstorage.full_control",
        audience: String = "https://oauth2.googleapis.com/token"
    ) -> JSONObject {
        let seconds = now.microseconds / 1_000_000
        return [
            "iat": .number(seconds), "exp": .number(seconds + 3600), "iss": .string(email), "aud": .string(audience),
            "scope": .string(scope),
        ]
    }

    /// A V4 signed URL's target (`/path?query`) for `method` on `path` (already percent-encoded), signed for
    /// `host` with `headers` (lowercase names) at `date`, valid `expires` seconds.
    public func signedURL(
        method: String, path: String, host: String, headers: [(String, String)] = [],
        query: [(String, String)] = [], date: Timestamp, expires: Int64 = 900
    ) throws -> String {
        let stamp = String(date.rfc3339.prefix(19).filter { $0 != "-" && $0 != ":" }) + "Z"
        let signed = ([("host", host)] + headers).sorted { $0.0 < $1.0 }
        var parameters: [(name: String, value: String)] = [
            ("X-Goog-Algorithm", "GOOG4-RSA-SHA256"),
            ("X-Goog-Credential", "\(email)/\(stamp.prefix(8))/auto/storage/goog4_request"), ("X-Goog-Date", stamp),
            ("X-Goog-Expires", String(expires)), ("X-Goog-SignedHeaders", signed.map(\.0).joined(separator: ";")),
        ]
        parameters += query.map { (name: $0.0, value: $0.1) }
        let payload = signed.first { $0.0 == "x-goog-content-sha256" }?.1 ?? "UNSIGNED-PAYLOAD"
        let canonical = GoogleV4Signing.canonicalRequest(
            method: method, path: path, query: parameters, headers: signed.map { (name: $0.0, value: $0.1) },
            payload: payload)
        let stringToSign = GoogleV4Signing.stringToSign(
            date: stamp, scope: "\(stamp.prefix(8))/auto/storage/goog4_request", canonicalRequest: canonical)
        let signature = try key.signRS256(Array(stringToSign.utf8)).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }
            .joined()
        return path + "?" + GoogleV4Signing.canonicalQuery(parameters) + "&X-Goog-Signature=" + signature
    }

    /// A V2 signed URL's target: `GoogleAccessId`, `Expires` and a base64 RSA-SHA256 signature of
    /// `METHOD\nContent-MD5\nContent-Type\nEXPIRES\n` + `x-goog-*` headers + the path.
    public func signedURLV2(
        method: String, path: String, expires: Int64, contentType: String = "", headers: [(String, String)] = []
    ) throws -> String {
        let extensions = headers.sorted { $0.0 < $1.0 }.map { "\($0.0):\($0.1)\n" }.joined()
        let stringToSign = "\(method)\n\n\(contentType)\n\(expires)\n" + extensions + path
        let signature = Base64.encode(try key.signRS256(Array(stringToSign.utf8)))
        return path + "?GoogleAccessId=\(PercentCoding.encodeComponent(email))&Expires=\(expires)&Signature="
            + PercentCoding.encodeComponent(signature)
    }

    /// The fields of a V4 POST policy form for `key` in `bucket`: the policy signs `conditions` plus the bucket, the
    /// key and the x-goog-* fields, as `generate_signed_post_policy_v4` does.
    public func postPolicyFields(
        bucket: String, key objectKey: String, conditions: [JSONValue] = [], fields: [(String, String)] = [],
        date: Timestamp, expires: Int64 = 600
    ) throws -> [(String, String)] {
        try PostPolicyForm.fields(
            bucket: bucket, key: objectKey, conditions: conditions, fields: fields, date: date, expires: expires,
            signer: email, algorithm: "GOOG4-RSA-SHA256"
        ) { policy, _ in try key.signRS256(Array(policy.utf8)) }
    }
}

/// A V4 POST policy form as `generate_signed_post_policy_v4` lays it out, signed by whatever `sign` does with the
/// base64 policy text and the credential scope (`DATE/auto/storage/goog4_request`).
public enum PostPolicyForm {
    public static func fields(
        bucket: String, key objectKey: String, conditions: [JSONValue] = [], fields: [(String, String)] = [],
        date: Timestamp, expires: Int64 = 600, signer: String, algorithm: String,
        sign: (_ policy: String, _ scope: String) throws -> [UInt8]
    ) throws -> [(String, String)] {
        let stamp = String(date.rfc3339.prefix(19).filter { $0 != "-" && $0 != ":" }) + "Z"
        let scope = "\(stamp.prefix(8))/auto/storage/goog4_request"
        let credential = "\(signer)/\(scope)"
        var all = conditions + fields.map { .object([$0.0: .string($0.1)]) }
        all += [
            .object(["bucket": .string(bucket)]), .object(["key": .string(objectKey)]),
            .object(["x-goog-date": .string(stamp)]), .object(["x-goog-credential": .string(credential)]),
            .object(["x-goog-algorithm": .string(algorithm)]),
        ]
        let expiration = Timestamp(microseconds: date.microseconds + expires * 1_000_000)
        let document: JSONObject = [
            "conditions": .array(all), "expiration": .string(String(expiration.rfc3339.prefix(19)) + "Z"),
        ]
        let policy = Base64.encode(JSONValue.object(document).serialized())
        let signature = try sign(policy, scope).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        return [("key", objectKey)] + fields + [
            ("x-goog-algorithm", algorithm), ("x-goog-credential", credential), ("x-goog-date", stamp),
            ("policy", policy), ("x-goog-signature", signature),
        ]
    }
}
