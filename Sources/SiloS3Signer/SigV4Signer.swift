/// AWS Signature Version 4 for one region and service (`s3` by default), as documented in the AWS "Signature
/// Version 4 signing process" and the S3 "Authenticating Requests (AWS Signature Version 4)" pages.
///
/// Stateless apart from its configuration, so one signer serves every thread. The intermediate steps are public so
/// tests can check each against a computation done by hand.
public struct SigV4Signer: Sendable {
    public static let algorithm = "AWS4-HMAC-SHA256"

    public var credentials: SigV4Credentials
    public var region: String
    public var service: String
    private let hashing: SigV4Hashing

    public init(credentials: SigV4Credentials, region: String, service: String = "s3", hashing: SigV4Hashing) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.hashing = hashing
    }

    /// The headers to add to `request` for header-based authentication: `x-amz-date`, `x-amz-content-sha256`,
    /// `x-amz-security-token` when there is a session token, and `Authorization`.
    public func sign(_ request: SigV4Request, payload: SigV4Payload, at time: SigV4Timestamp) -> [SigV4Header] {
        var added = [
            SigV4Header("x-amz-date", time.dateTime), SigV4Header("x-amz-content-sha256", payload.headerValue),
        ]
        if let token = credentials.sessionToken { added.append(SigV4Header("x-amz-security-token", token)) }
        var signed = request
        signed.headers += added
        let headers = canonicalHeaders(signed)
        let canonical = canonicalRequest(signed, canonicalHeaders: headers, payload: payload.headerValue)
        let signature = self.signature(canonicalRequest: canonical, at: time)
        let authorization =
            "\(Self.algorithm) Credential=\(credentials.accessKeyID)/\(scope(time)), "
            + "SignedHeaders=\(headers.signedNames), Signature=\(signature)"
        return added + [SigV4Header("Authorization", authorization)]
    }

    /// A presigned URL's request target (path and query, signature included) for query-string authentication.
    /// Only `host` and the request's headers are signed; the payload is `UNSIGNED-PAYLOAD`.
    public func presign(_ request: SigV4Request, expiresInSeconds: Int, at time: SigV4Timestamp) -> String {
        var signed = request
        signed.query += [
            SigV4QueryItem("X-Amz-Algorithm", Self.algorithm),
            SigV4QueryItem("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope(time))"),
            SigV4QueryItem("X-Amz-Date", time.dateTime),
            SigV4QueryItem("X-Amz-Expires", String(expiresInSeconds)),
        ]
        if let token = credentials.sessionToken { signed.query.append(SigV4QueryItem("X-Amz-Security-Token", token)) }
        let headers = canonicalHeaders(signed)
        signed.query.append(SigV4QueryItem("X-Amz-SignedHeaders", headers.signedNames))
        let canonical = canonicalRequest(signed, canonicalHeaders: headers, payload: SigV4Payload.unsigned.headerValue)
        signed.query.append(SigV4QueryItem("X-Amz-Signature", signature(canonicalRequest: canonical, at: time)))
        return signed.encodedPathAndQuery
    }

    // MARK: The steps

    /// Step 1: the canonical request for `request` whose headers already include everything to be signed.
    public func canonicalRequest(_ request: SigV4Request, payload: String) -> String {
        canonicalRequest(request, canonicalHeaders: canonicalHeaders(request), payload: payload)
    }

    /// Step 2: the string to sign.
    public func stringToSign(canonicalRequest: String, at time: SigV4Timestamp) -> String {
        let hash = SigV4Encoding.hex(hashing.sha256(Array(canonicalRequest.utf8)))
        return "\(Self.algorithm)\n\(time.dateTime)\n\(scope(time))\n\(hash)"
    }

    /// Step 3: the signing key, `HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request")`.
    public func signingKey(date: String) -> [UInt8] {
        var key = hashing.hmacSHA256(Array("AWS4\(credentials.secretAccessKey)".utf8), Array(date.utf8))
        for part in [region, service, "aws4_request"] { key = hashing.hmacSHA256(key, Array(part.utf8)) }
        return key
    }

    /// Step 4: the hex signature of a canonical request.
    public func signature(canonicalRequest: String, at time: SigV4Timestamp) -> String {
        let toSign = stringToSign(canonicalRequest: canonicalRequest, at: time)
        return SigV4Encoding.hex(hashing.hmacSHA256(signingKey(date: time.date), Array(toSign.utf8)))
    }

    /// `date/region/service/aws4_request`.
    public func scope(_ time: SigV4Timestamp) -> String { "\(time.date)/\(region)/\(service)/aws4_request" }

    // MARK: Helpers

    private struct CanonicalHeaders {
        /// `name:value\n` for each header, sorted by lowercase name.
        var block: String
        /// `name;name;…`.
        var signedNames: String
    }

    /// Lowercase names, trimmed values with inner runs of spaces collapsed, values of a repeated name joined by
    /// commas, sorted by name; `host` comes from the request.
    private func canonicalHeaders(_ request: SigV4Request) -> CanonicalHeaders {
        var values: [String: [String]] = ["host": [request.host]]
        for header in request.headers {
            let name = header.name.lowercased()
            guard name != "host" else { continue }
            values[name, default: []].append(Self.normalise(header.value))
        }
        let names = values.keys.sorted()
        let block = names.map { "\($0):\(values[$0]!.joined(separator: ","))\n" }.joined()
        return CanonicalHeaders(block: block, signedNames: names.joined(separator: ";"))
    }

    private func canonicalRequest(
        _ request: SigV4Request, canonicalHeaders: CanonicalHeaders, payload: String
    ) -> String {
        [
            request.method.uppercased(), SigV4Encoding.path(request.path),
            SigV4Encoding.canonicalQuery(request.query), canonicalHeaders.block, canonicalHeaders.signedNames,
            payload,
        ].joined(separator: "\n")
    }

    private static func normalise(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }
}
