import Foundation
import SiloAuth
import SiloCore
@_spi(Testing) import SiloHashing
import SiloWire
import Testing

/// GCS's V4 signing, checked against google-cloud-storage's conformance vectors (``GoogleSDist``):
///
/// - the canonical request of the request a client builds from each vector's inputs is the vector's;
/// - the signature in each vector's `expectedUrl` verifies over the canonical request of that URL as sent;
/// - a URL signed for each vector with the vectors' service account key is accepted at the vector's time, and
///   changing any signed part, the method, the host or the time makes it fail.
///
/// Two quirks of the data file, release 3.17.1: its `expectedUrl`s carry the vector's timestamp in `X-Goog-Date` as
/// written (`2019-02-01T09:00:00Z`, so the credential's date is `2019-02-`), as google-cloud-storage's own test signs
/// them — a form GCS refuses; and its `expectedStringToSign` digests are not the SHA-256 of its
/// `expectedCanonicalRequest`s, so they are not compared.
@Suite struct SignedURLVectorTests {
    /// One URL vector as the request a client would send with it.
    struct Vector: CustomStringConvertible {
        var description: String
        var method: String
        var path: String
        var host: String
        /// The X-Goog-* parameters and the vector's own, without the signature.
        var query: [(name: String, value: String)]
        /// The vector's headers and `host`.
        var headers: [(name: String, value: String)]
        var signature: String
        var time: Timestamp
        var expires: Int64
        var canonicalRequest: String?
        var stringToSign: String?

        /// The request as a server that takes its `Host` for its own would hand it over (``SignedRequest/hosts``).
        func request(
            method: String? = nil, path: String? = nil, query: [(name: String, value: String)]? = nil,
            headers: [(name: String, value: String)]? = nil, signature: String? = nil
        ) -> SignedRequest {
            let headers = headers ?? self.headers
            return SignedRequest(
                method: method ?? self.method, rawPath: path ?? self.path,
                query: (query ?? self.query) + [("X-Goog-Signature", signature ?? self.signature)],
                headers: headers, hosts: headers.filter { $0.name.lowercased() == "host" }.map(\.value))
        }
    }

    static func files() throws -> GoogleSDist.Files {
        switch GoogleSDist.files {
        case .success(let files): return files
        case .failure(let error):
            Issue.record("the V4 signing vectors are unavailable: \(error)")
            throw error
        }
    }

    static func account() throws -> ServiceAccount { try ServiceAccount(keyJSON: files().accountJSON) }

    /// The vectors' signing key, to sign as the vectors' client would.
    static func signingKey() throws -> RSAPrivateKey {
        let json = try JSONValue.parse(files().accountJSON)
        return try RSAPrivateKey(pem: try #require(json.objectValue?["private_key"]?.stringValue))
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static func authority(hosts: [String] = []) throws -> ServiceAccountAuthority {
        ServiceAccountAuthority(accounts: try ServiceAccounts([account()]), signedURLHosts: hosts)
    }

    static func parseTime(_ text: String) -> Timestamp? { Timestamp(rfc3339: text) ?? GoogleV4Signing.parseDate(text) }

    /// `2019-02-01T09:00:00.000Z` as `20190201T090000Z`.
    static func basic(_ time: Timestamp) -> String {
        String(time.rfc3339.prefix(19).filter { $0 != "-" && $0 != ":" }) + "Z"
    }

    static func vectors() throws -> [Vector] {
        let files = try files()
        let email = try account().email
        var vectors: [Vector] = []
        for case .object(let v) in files.vectors["signingV4Tests"]?.arrayValue ?? [] {
            let bucket = v["bucket"]?.stringValue ?? ""
            let object = v["object"]?.stringValue
            let time = try #require(parseTime(v["timestamp"]?.stringValue ?? ""))
            let expires = try #require(v["expiration"]?.int64Value)
            let host: String
            var path: String
            let encoded = object.map {
                $0.split(separator: "/", omittingEmptySubsequences: false).map { PercentCoding.encodeComponent($0) }
                    .joined(separator: "/")
            }
            switch v["urlStyle"]?.stringValue {
            case "VIRTUAL_HOSTED_STYLE":
                host = "\(bucket).storage.googleapis.com"
                path = "/" + (encoded ?? "")
            case "BUCKET_BOUND_HOSTNAME":
                host = v["bucketBoundHostname"]?.stringValue ?? ""
                path = "/" + (encoded ?? "")
            default:
                host = "storage.googleapis.com"
                path = "/" + bucket + (encoded.map { "/" + $0 } ?? "")
            }
            var headers: [(name: String, value: String)] = (v["headers"]?.objectValue?.members ?? []).map {
                ($0.key, $0.value.stringValue ?? "")
            }
            headers.append(("host", host))
            let signed = headers.map { $0.name.lowercased() }.sorted().joined(separator: ";")
            let date = basic(time)
            var query: [(name: String, value: String)] = [
                ("X-Goog-Algorithm", "GOOG4-RSA-SHA256"),
                ("X-Goog-Credential", "\(email)/\(date.prefix(8))/auto/storage/goog4_request"),
                ("X-Goog-Date", date), ("X-Goog-Expires", String(expires)), ("X-Goog-SignedHeaders", signed),
            ]
            query += (v["queryParameters"]?.objectValue?.members ?? []).map { ($0.key, $0.value.stringValue ?? "") }
            let sorted = headers.map { (name: $0.name.lowercased(), value: $0.value) }.sorted { $0.name < $1.name }
            let payload = sorted.first { $0.name == "x-goog-content-sha256" }?.value ?? "UNSIGNED-PAYLOAD"
            let canonical = GoogleV4Signing.canonicalRequest(
                method: v["method"]?.stringValue ?? "GET", path: path, query: query, headers: sorted, payload: payload)
            let stringToSign = GoogleV4Signing.stringToSign(
                date: date, scope: "\(date.prefix(8))/auto/storage/goog4_request", canonicalRequest: canonical)
            let signature = hex(try signingKey().signRS256(Array(stringToSign.utf8)))
            vectors.append(
                Vector(
                    description: v["description"]?.stringValue ?? "", method: v["method"]?.stringValue ?? "GET",
                    path: path, host: host, query: query, headers: headers, signature: signature, time: time,
                    expires: expires, canonicalRequest: v["expectedCanonicalRequest"]?.stringValue,
                    stringToSign: v["expectedStringToSign"]?.stringValue))
        }
        return vectors
    }

    @Test("every vector's canonical request comes out as the vector says")
    func canonicalization() throws {
        let vectors = try Self.vectors()
        #expect(vectors.count >= 20)
        var compared = 0
        for vector in vectors {
            guard let expected = vector.canonicalRequest else { continue }
            let headers = vector.headers.map { (name: $0.name.lowercased(), value: $0.value) }.sorted {
                $0.name < $1.name
            }
            let payload = headers.first { $0.name == "x-goog-content-sha256" }?.value ?? "UNSIGNED-PAYLOAD"
            let canonical = GoogleV4Signing.canonicalRequest(
                method: vector.method, path: vector.path, query: vector.query, headers: headers, payload: payload)
            #expect(canonical == expected, "\(vector)")
            compared += 1
        }
        #expect(compared >= 18)
    }

    @Test("the signature in every vector's expectedUrl verifies over that URL's canonical request as sent")
    func expectedURLSignatures() throws {
        let files = try Self.files()
        let account = try Self.account()
        var checked = 0
        for case .object(let v) in files.vectors["signingV4Tests"]?.arrayValue ?? [] {
            let url = try #require(v["expectedUrl"]?.stringValue)
            let afterScheme = try #require(url.split(separator: "://", maxSplits: 1).last)
            let host = String(afterScheme.prefix { $0 != "/" })
            let target = afterScheme.dropFirst(host.count)
            let path = String(target.prefix { $0 != "?" })
            let all = Self.decodeQuery(target.drop { $0 != "?" }.dropFirst())
            let query = all.filter { $0.name != "X-Goog-Signature" }
            let signature = try #require(all.first { $0.name == "X-Goog-Signature" }?.value)
            let parameters = Dictionary(query.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
            var values: [String: String] = ["host": host]
            for (key, value) in v["headers"]?.objectValue?.members ?? [] {
                values[key.lowercased()] = value.stringValue
            }
            let signed = (parameters["X-Goog-SignedHeaders"] ?? "").split(separator: ";").map(String.init)
            let canonical = GoogleV4Signing.canonicalRequest(
                method: v["method"]?.stringValue ?? "GET", path: path, query: query,
                headers: signed.map { (name: $0, value: values[$0] ?? "") },
                payload: values["x-goog-content-sha256"] ?? "UNSIGNED-PAYLOAD")
            let credential = parameters["X-Goog-Credential"] ?? ""
            let stringToSign = GoogleV4Signing.stringToSign(
                date: parameters["X-Goog-Date"] ?? "",
                scope: credential.split(separator: "/").dropFirst().joined(separator: "/"), canonicalRequest: canonical)
            let bytes = try #require(Self.unhex(signature))
            #expect(
                account.publicKey.verifyRS256(signature: bytes, message: Array(stringToSign.utf8)),
                "\(v["description"]?.stringValue ?? "")")
            checked += 1
        }
        #expect(checked >= 20)
    }

    /// A query string's `name=value` pairs, percent-decoded, in order.
    static func decodeQuery(_ raw: Substring) -> [(name: String, value: String)] {
        raw.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (
                PercentCoding.decodeQueryComponent(parts[0]) ?? "",
                parts.count > 1 ? PercentCoding.decodeQueryComponent(parts[1]) ?? "" : ""
            )
        }
    }

    static func unhex(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        return stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16) ?? 0
        }
    }

    @Test("every vector's signature verifies at the vector's time, for its host or a configured signing host")
    func verification() throws {
        let authority = try Self.authority()
        for vector in try Self.vectors() {
            let signer = try authority.signer(of: vector.request(), at: vector.time)
            #expect(signer?.email == (try Self.account().email), "\(vector)")
            // Sent to Silo instead: the URL was signed for the vector's host, which Silo is configured with.
            let elsewhere = vector.headers.map { $0.name == "host" ? (name: "Host", value: "127.0.0.1:9199") : $0 }
            let configured = try Self.authority(hosts: [vector.host])
            #expect(try configured.signer(of: vector.request(headers: elsewhere), at: vector.time) != nil, "\(vector)")
            expectRefusal(.badSignature, "\(vector): another host") {
                try authority.signer(of: vector.request(headers: elsewhere), at: vector.time)
            }
        }
    }

    @Test("the host comes from the server, never from the request's own Host or X-Forwarded-Host")
    func hostFromTheServer() throws {
        let authority = try Self.authority()
        for vector in try Self.vectors() {
            let forwarded = vector.headers + [(name: "X-Forwarded-Host", value: vector.host)]
            for headers in [vector.headers, forwarded] {
                var request = vector.request(headers: headers)
                request.hosts = []
                expectRefusal(.badSignature, "\(vector): a host only the request names") {
                    try authority.signer(of: request, at: vector.time)
                }
            }
        }
    }

    @Test("the query may be sent in any order and encoding: it is decoded, then canonicalized")
    func queryIsCanonicalized() throws {
        let authority = try Self.authority()
        for vector in try Self.vectors() {
            let shuffled = Array(vector.query.reversed())
            #expect(try authority.signer(of: vector.request(query: shuffled), at: vector.time) != nil, "\(vector)")
        }
    }

    @Test("changing the method, the path, the query, a signed header or the signature fails")
    func tampering() throws {
        let authority = try Self.authority()
        for vector in try Self.vectors() {
            let at = vector.time
            let other = vector.method == "GET" ? "PUT" : "GET"
            expectRefusal(.badSignature, "\(vector): method") {
                try authority.signer(of: vector.request(method: other), at: at)
            }
            expectRefusal(.badSignature, "\(vector): path") {
                try authority.signer(of: vector.request(path: vector.path + "x"), at: at)
            }
            expectRefusal(.badSignature, "\(vector): extra parameter") {
                try authority.signer(of: vector.request(query: vector.query + [("generation", "1")]), at: at)
            }
            let longer = vector.query.map { $0.name == "X-Goog-Expires" ? ($0.name, String(vector.expires + 1)) : $0 }
            expectRefusal(.badSignature, "\(vector): expiry") {
                try authority.signer(of: vector.request(query: longer), at: at)
            }
            for header in vector.headers where header.name != "host" {
                let changed = vector.headers.map { $0.name == header.name ? ($0.name, $0.value + "x") : $0 }
                expectRefusal(.badSignature, "\(vector): header \(header.name)") {
                    try authority.signer(of: vector.request(headers: changed), at: at)
                }
                let dropped = vector.headers.filter { $0.name != header.name }
                expectRefusal(.badSignature, "\(vector): without \(header.name)") {
                    try authority.signer(of: vector.request(headers: dropped), at: at)
                }
            }
            let last = vector.signature.last == "0" ? "1" : "0"
            expectRefusal(.badSignature, "\(vector): signature") {
                try authority.signer(of: vector.request(signature: vector.signature.dropLast() + last), at: at)
            }
        }
    }

    @Test("a URL is valid from X-Goog-Date (less a minute of clock skew) until X-Goog-Expires seconds later")
    func validityWindow() throws {
        let authority = try Self.authority()
        for vector in try Self.vectors() {
            let seconds = { (s: Int64) in Timestamp(microseconds: vector.time.microseconds + s * 1_000_000) }
            #expect(try authority.signer(of: vector.request(), at: seconds(vector.expires - 1)) != nil)
            expectRefusal(.expired, "\(vector)") {
                try authority.signer(of: vector.request(), at: seconds(vector.expires))
            }
            #expect(try authority.signer(of: vector.request(), at: seconds(-60)) != nil)
            expectRefusal(.notYetValid, "\(vector)") { try authority.signer(of: vector.request(), at: seconds(-61)) }
        }
    }

    @Test("an unregistered signer is refused, or in emulator mode checked in all but its signature")
    func unregisteredSigner() throws {
        let vector = try #require(try Self.vectors().first)
        let none = ServiceAccountAuthority.none(emulator: false)
        expectRefusal(.unknownKey, "secured") { try none.signer(of: vector.request(), at: vector.time) }
        let emulator = ServiceAccountAuthority.none(emulator: true)
        #expect(try emulator.signer(of: vector.request(signature: "00"), at: vector.time) == nil)
        let late = Timestamp(microseconds: vector.time.microseconds + vector.expires * 1_000_000)
        expectRefusal(.expired, "emulator still checks expiry") { try emulator.signer(of: vector.request(), at: late) }
    }

    @Test("malformed or missing signature parameters are refused as malformed, naming the parameter")
    func malformedParameters() throws {
        let authority = try Self.authority()
        let vector = try #require(try Self.vectors().first)
        let cases: [(String, String?)] = [
            ("X-Goog-Expires", "604801"), ("X-Goog-Expires", "0"), ("X-Goog-Expires", "1e3"),
            ("X-Goog-Date", "2019-02-01"),
            ("X-Goog-Credential", "someone/20190201/auto/storage/goog4_request"),
            ("X-Goog-Credential", "a@b.c/20190202/auto/storage/goog4_request"),
            ("X-Goog-SignedHeaders", "content-type"),
            ("X-Goog-Date", nil), ("X-Goog-Credential", nil),
        ]
        for (name, value) in cases {
            let query = vector.query.compactMap { item -> (name: String, value: String)? in
                guard item.name == name else { return item }
                return value.map { (name, $0) }
            }
            do {
                _ = try authority.signer(of: vector.request(query: query), at: vector.time)
                Issue.record("\(name)=\(value ?? "(none)") was accepted")
            } catch {
                #expect(error.code == .malformedToken, "\(name)=\(value ?? "(none)"): \(error.message)")
                #expect(error.signedRequest?.parameter == name)
            }
        }
        let other = vector.query.map { $0.name == "X-Goog-Algorithm" ? ($0.name, "GOOG4-ECDSA-SHA256") : $0 }
        expectRefusal(.unsupportedAlgorithm, "X-Goog-Algorithm") {
            try authority.signer(of: vector.request(query: other), at: vector.time)
        }
        // An HMAC signature names an access id, not an email.
        let hmac = vector.query.map { $0.name == "X-Goog-Algorithm" ? ($0.name, "GOOG4-HMAC-SHA256") : $0 }
        expectRefusal(.malformedToken, "ACCESS_ID") {
            try authority.signer(of: vector.request(query: hmac), at: vector.time)
        }
    }

    // MARK: POST policies

    @Test("every POST policy vector's signature verifies over its policy, and its conditions hold for its form")
    func postPolicies() throws {
        let files = try Self.files()
        let policies = (files.vectors["postPolicyV4Tests"]?.arrayValue ?? []).compactMap(\.objectValue)
        #expect(policies.count >= 10)
        let account = try Self.account()
        let authority = try Self.authority()
        for vector in policies {
            let input = try #require(vector["policyInput"]?.objectValue)
            let output = try #require(vector["policyOutput"]?.objectValue)
            let name = vector["description"]?.stringValue ?? ""
            let time = try #require(Self.parseTime(input["timestamp"]?.stringValue ?? ""))
            var form: [String: String] = [:]
            for (key, value) in output["fields"]?.objectValue?.members ?? [] {
                form[key.lowercased()] = value.stringValue
            }
            // The data file's `policy` fields name the account as `…@dummy-project-id…` while their signatures were
            // made over the policy naming it as the key file does (`…@test-project-id…`), which its `x-goog-credential`
            // fields and `expectedDecodedPolicy` show: that corrected policy is the one signed.
            let field = try #require(form["policy"])
            let stale = try #require(Base64.decode(field))
            let signed = String(decoding: stale, as: UTF8.self).replacingOccurrences(
                of: "dummy-project-id", with: "test-project-id")
            let policy = Base64.encode(Array(signed.utf8))
            form["policy"] = policy
            #expect(
                try authority.signer(ofPolicy: policy, field: { form[$0] }, at: time)?.email == account.email, "\(name)"
            )
            let document = try PostPolicyDocument(base64: policy)
            var fields = form
            fields["bucket"] = input["bucket"]?.stringValue
            if case .array(let range)? = input["conditions"]?.objectValue?["contentLengthRange"] {
                #expect(document.contentLengthRange?.min == range.first?.int64Value, "\(name)")
                #expect(document.contentLengthRange?.max == range.last?.int64Value, "\(name)")
            }
            if case .array(let startsWith)? = input["conditions"]?.objectValue?["startsWith"],
                let field = startsWith.first?.stringValue, let prefix = startsWith.last?.stringValue
            {
                fields[String(field.dropFirst())] = prefix + "-and-more"
            }
            try document.check(fields: fields, at: time)
            // The policy expires `expiration` seconds after the vector's time.
            let expiration = try #require(input["expiration"]?.int64Value)
            let end = Timestamp(microseconds: time.microseconds + expiration * 1_000_000)
            expectRefusal(.expired, name) { try document.check(fields: fields, at: end) }
            var renamed = fields
            renamed["key"] = (fields["key"] ?? "") + "-other"
            expectRefusal(.invalidClaims, "\(name): key") { try document.check(fields: renamed, at: time) }
            var otherBucket = fields
            otherBucket["bucket"] = "another-bucket"
            expectRefusal(.invalidClaims, "\(name): bucket") { try document.check(fields: otherBucket, at: time) }
            var extra = fields
            extra["x-goog-meta-unsigned"] = "1"
            expectRefusal(.invalidClaims, "\(name): an extra field") { try document.check(fields: extra, at: time) }
            var ignored = fields
            ignored["x-ignore-this"] = "1"
            try document.check(fields: ignored, at: time)
            let tampered = Base64.encode(Array(signed.replacingOccurrences(of: "\"key\"", with: "\"kex\"").utf8))
            expectRefusal(.badSignature, "\(name): policy text") {
                try authority.signer(ofPolicy: tampered, field: { form[$0] }, at: time)
            }
        }
    }
}

/// Expects `body` to throw an ``AuthError`` with `code`.
func expectRefusal<T>(
    _ code: AuthError.Code, _ comment: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> T
) {
    do {
        _ = try body()
        Issue.record("accepted, expected \(code): \(comment)", sourceLocation: sourceLocation)
    } catch let error as AuthError {
        #expect(error.code == code, "\(comment): \(error.message)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(comment): \(error)", sourceLocation: sourceLocation)
    }
}
