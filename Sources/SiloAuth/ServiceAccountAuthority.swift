public import SiloCore
import SiloHashing
import SiloWire

/// The service accounts a server accepts and the credentials they present: access tokens from Silo's token endpoint,
/// V4 (and V2) signed URLs and V4 POST policies signed with their keys.
///
/// Signed URLs are checked as GCS checks them (``GoogleV4Signing``), against the hosts the server vouches for
/// (``SignedRequest/hosts``) and against ``signedURLHosts``: clients sign for the host they will send the URL to, which is
/// `storage.googleapis.com` by default (Rust's object_store always signs for it; google-cloud-storage for its
/// `api_access_endpoint`), so a URL signed for GCS works against Silo once its host is changed.
///
/// With ``acceptUnverifiedSigners`` (emulator mode), a URL or policy whose signer is not registered is checked in
/// every way but its signature — form, algorithm, credential scope, dates, expiry, signed headers — and then carries
/// no identity; one whose signer is registered is verified in full, as on a secured server.
public struct ServiceAccountAuthority: Sendable {
    public var accounts: ServiceAccounts
    public var tokens: AccessTokens
    /// Hosts a signed URL may have been signed for besides the server's own (`--signed-url-host`).
    public var signedURLHosts: [String]
    public var acceptUnverifiedSigners: Bool
    /// How far ahead of this server's clock a signer's `X-Goog-Date` may be (the URL is not valid before it).
    public var clockSkewSeconds: Int64 = 60
    /// The HMAC keys `GOOG4-HMAC-SHA256` signatures are checked with; nil refuses them.
    public var hmacKeys: (any HMACKeyring)?

    public static let defaultSignedURLHosts = ["storage.googleapis.com"]

    public init(
        accounts: ServiceAccounts, tokens: AccessTokens = AccessTokens(),
        signedURLHosts: [String] = ServiceAccountAuthority.defaultSignedURLHosts, acceptUnverifiedSigners: Bool = false
    ) {
        self.accounts = accounts
        self.tokens = tokens
        self.signedURLHosts = signedURLHosts
        self.acceptUnverifiedSigners = acceptUnverifiedSigners
    }

    /// No accounts: signed URLs are refused, or in emulator mode checked all but their signature.
    public static func none(emulator: Bool) -> ServiceAccountAuthority {
        // An empty registry cannot fail to build.
        ServiceAccountAuthority(accounts: try! ServiceAccounts([]), acceptUnverifiedSigners: emulator)
    }

    public var grant: TokenGrant { TokenGrant(accounts: accounts, tokens: tokens) }

    /// The caller an access token (`Authorization: Bearer silo1.…`) names.
    public func caller(accessToken: String, at now: Timestamp) throws(AuthError) -> ServiceAccountCaller {
        try tokens.verify(accessToken, accounts: accounts, at: now)
    }

    /// The audiences a self-signed JWT may name for Cloud Storage (AIP-4111: `https://SERVICE.googleapis.com/`).
    public static let storageAudiences: Set<String> = [
        "https://storage.googleapis.com/", "https://storage.googleapis.com",
    ]

    /// The caller a self-signed JWT used as a bearer token names (AIP-4111), or nil when it is not one signed for a
    /// registered account. Rust's object_store sends these with a service account key — RS256, `iss` and `sub` the
    /// account, `scope` `cloud-platform`, no `aud` — and google-auth with `always_use_jwt_access`. The JWT is
    /// checked as a token request's assertion is (``TokenGrant``); it must name a Cloud Storage scope, or the
    /// storage API as `aud` (which stands for every storage permission).
    public func caller(selfSignedJWT token: String, at now: Timestamp) throws(AuthError) -> ServiceAccountCaller? {
        guard let jwt = try? CompactJWT(parsing: token), let issuer = jwt.claims["iss"]?.stringValue,
            let account = accounts.account(issuer)
        else { return nil }
        try TokenGrant.check(jwt, signedBy: account, at: now, clockSkewSeconds: clockSkewSeconds)
        if let scopes = try TokenGrant.scopes(jwt) {
            return ServiceAccountCaller(email: account.email, scopes: scopes, credential: .selfSignedJWT)
        }
        guard let audience = jwt.claims["aud"]?.stringValue, Self.storageAudiences.contains(audience) else {
            throw AuthError(.invalidScope, "the JWT names neither a Cloud Storage scope nor the storage API ('aud')")
        }
        return ServiceAccountCaller(
            email: account.email, scopes: ["https://www.googleapis.com/auth/devstorage.full_control"],
            credential: .selfSignedJWT)
    }

    // MARK: Signed URLs

    /// The signer of a V4 or V2 signed URL: nil when unverified (see ``acceptUnverifiedSigners``). Throws the
    /// refusal GCS would answer with: `malformedToken` (a missing or malformed parameter), `unsupportedAlgorithm`,
    /// `expired`, `notYetValid`, `unknownKey` (a signer not registered) or `badSignature`.
    public func signer(of request: SignedRequest, at now: Timestamp) throws(AuthError) -> ServiceAccountCaller? {
        if let authorization = Self.hmacAuthorization(request) {
            return try headerSigner(of: request, authorization: authorization, at: now)
        }
        if request.query.contains(where: { $0.name == "GoogleAccessId" }) { return try v2Signer(of: request, at: now) }
        return try v4Signer(of: request, at: now)
    }

    private func v4Signer(of request: SignedRequest, at now: Timestamp) throws(AuthError) -> ServiceAccountCaller? {
        var parameters: [String: String] = [:]
        for item in request.query where item.name.lowercased().hasPrefix("x-goog-") {
            let name = item.name.lowercased()
            guard
                [
                    "x-goog-algorithm", "x-goog-credential", "x-goog-date", "x-goog-expires", "x-goog-signedheaders",
                    "x-goog-signature",
                ].contains(name)
            else { continue }
            guard parameters.updateValue(item.value, forKey: name) == nil else {
                throw Self.malformed(item.name, "\(item.name) is given more than once")
            }
        }
        func required(_ name: String) throws(AuthError) -> String {
            guard let value = parameters[name.lowercased()], !value.isEmpty else {
                throw Self.malformed(name, "the signed URL has no \(name)")
            }
            return value
        }
        let algorithm = try required("X-Goog-Algorithm")
        let hmac = algorithm == GoogleV4Signing.hmacAlgorithm
        guard hmac || algorithm == GoogleV4Signing.rsaAlgorithm else {
            throw AuthError(
                .unsupportedAlgorithm, "X-Goog-Algorithm must be GOOG4-RSA-SHA256 or GOOG4-HMAC-SHA256",
                parameter: "X-Goog-Algorithm")
        }
        let credential = try Credential(
            try required("X-Goog-Credential"), parameter: "X-Goog-Credential", accessID: hmac)
        let dateText = try required("X-Goog-Date")
        guard let date = GoogleV4Signing.parseDate(dateText) else {
            throw Self.malformed("X-Goog-Date", "X-Goog-Date must be YYYYMMDD'T'HHMMSS'Z'")
        }
        guard dateText.hasPrefix(credential.date) else {
            throw Self.malformed("X-Goog-Credential", "the date in X-Goog-Credential is not the date of X-Goog-Date")
        }
        let expiresText = try required("X-Goog-Expires")
        guard expiresText.utf8.count <= 7, expiresText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let expires = Int64(expiresText), (1...GoogleV4Signing.maxExpiresSeconds).contains(expires)
        else {
            throw Self.malformed(
                "X-Goog-Expires",
                "X-Goog-Expires must be a whole number of seconds from 1 to \(GoogleV4Signing.maxExpiresSeconds)")
        }
        let signedHeaders = try required("X-Goog-SignedHeaders").split(separator: ";", omittingEmptySubsequences: false)
            .map { $0.lowercased() }
        guard signedHeaders.allSatisfy({ !$0.isEmpty }), signedHeaders.contains("host") else {
            throw Self.malformed("X-Goog-SignedHeaders", "X-Goog-SignedHeaders must list 'host' and no empty name")
        }
        guard let signature = GoogleV4Signing.unhex(try required("X-Goog-Signature")) else {
            throw Self.malformed("X-Goog-Signature", "X-Goog-Signature is not hexadecimal")
        }
        try checkWindow(from: date, seconds: expires, at: now)
        return try verifyV4(
            request, algorithm: algorithm, credential: credential, date: dateText, signedHeaders: signedHeaders,
            signature: signature)
    }

    /// The canonical request's signature, for each host the request may have been signed for. Shared by signed URLs
    /// and the `Authorization: GOOG4-HMAC-SHA256` header.
    private func verifyV4(
        _ request: SignedRequest, algorithm: String, credential: Credential, date dateText: String,
        signedHeaders: [String], signature: [UInt8]
    ) throws(AuthError) -> ServiceAccountCaller? {
        let hmac = algorithm == GoogleV4Signing.hmacAlgorithm
        // Every signed header but host must come with the request: the signature covers its value.
        var values: [String: String] = [:]
        for name in signedHeaders where name != "host" {
            let found = request.headers.filter { $0.name.lowercased() == name }.map(\.value)
            guard !found.isEmpty else {
                throw AuthError(
                    .badSignature, "the header \(TokenVerifier.printable(name)) is signed but not in the request")
            }
            values[name] = found.joined(separator: ",")
        }
        guard let signer = try verifier(of: credential, hmac: hmac, signature: signature) else { return nil }
        let payload =
            signedHeaders.contains("x-goog-content-sha256")
            ? values["x-goog-content-sha256"] ?? GoogleV4Signing.unsignedPayload : GoogleV4Signing.unsignedPayload
        var first: (String, String)?
        for host in hostCandidates(request) {
            let headers = signedHeaders.map { (name: $0, value: $0 == "host" ? host : values[$0] ?? "") }
            let canonical = GoogleV4Signing.canonicalRequest(
                method: request.method, path: request.rawPath, query: request.query, headers: headers, payload: payload)
            let stringToSign = GoogleV4Signing.stringToSign(
                algorithm: algorithm, date: dateText, scope: credential.scope, canonicalRequest: canonical)
            if signer.verifies(Array(stringToSign.utf8)) {
                return ServiceAccountCaller(email: signer.email, scopes: [], credential: .signedURL)
            }
            if first == nil { first = (stringToSign, canonical) }
        }
        var error = AuthError(
            .badSignature,
            "the signature does not match this request signed by \(signer.email) for host "
                + hostCandidates(request).joined(separator: " or "))
        error.signedRequest = SignedRequestDiagnosis(stringToSign: first?.0, canonicalRequest: first?.1)
        throw error
    }

    // MARK: The Authorization header (HMAC keys)

    /// How far a header-signed request's `x-goog-date` may be from this server's clock, either way (GCS's 15 minutes).
    public static let headerSignatureWindowSeconds: Int64 = 900

    /// The value of an `Authorization: GOOG4-HMAC-SHA256 …` header, as S3-style clients in GCS's interoperability
    /// mode send it; nil for any other credential.
    public static func hmacAuthorization(_ request: SignedRequest) -> String? {
        let prefix = GoogleV4Signing.hmacAlgorithm + " "
        return request.headers.first { $0.name.lowercased() == "authorization" && $0.value.hasPrefix(prefix) }?.value
    }

    /// `Authorization: GOOG4-HMAC-SHA256 Credential=ACCESS_ID/DATE/REGION/storage/goog4_request,
    /// SignedHeaders=a;b, Signature=HEX` with the time in the `x-goog-date` header: checked as a signed URL is, the
    /// canonical query being the whole query.
    private func headerSigner(of request: SignedRequest, authorization: String, at now: Timestamp) throws(AuthError)
        -> ServiceAccountCaller?
    {
        guard authorization.utf8.count <= 4096 else {
            throw Self.malformed("Authorization", "the Authorization header is too long")
        }
        var fields: [String: String] = [:]
        let rest = authorization.dropFirst(GoogleV4Signing.hmacAlgorithm.utf8.count + 1)
        for part in rest.split(separator: ",") {
            let pair = part.filter { $0 != " " }.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2, ["Credential", "SignedHeaders", "Signature"].contains(pair[0]),
                fields.updateValue(pair[1], forKey: pair[0]) == nil
            else {
                throw Self.malformed(
                    "Authorization",
                    "the Authorization header must be GOOG4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…")
            }
        }
        guard let credentialText = fields["Credential"], let headerList = fields["SignedHeaders"],
            let signatureText = fields["Signature"]
        else {
            throw Self.malformed(
                "Authorization", "the Authorization header needs Credential, SignedHeaders and Signature")
        }
        let credential = try Credential(credentialText, parameter: "Credential", accessID: true)
        let dates = request.headers.filter { $0.name.lowercased() == "x-goog-date" }.map(\.value)
        guard dates.count == 1, let date = GoogleV4Signing.parseDate(dates[0]), dates[0].hasPrefix(credential.date)
        else {
            throw Self.malformed(
                "x-goog-date",
                "a signed request needs one x-goog-date header, YYYYMMDD'T'HHMMSS'Z' of the credential's date")
        }
        let signedHeaders = headerList.split(separator: ";", omittingEmptySubsequences: false).map { $0.lowercased() }
        guard signedHeaders.allSatisfy({ !$0.isEmpty }), signedHeaders.contains("host") else {
            throw Self.malformed("SignedHeaders", "SignedHeaders must list 'host' and no empty name")
        }
        guard let signature = GoogleV4Signing.unhex(signatureText) else {
            throw Self.malformed("Signature", "Signature is not hexadecimal")
        }
        let skew = abs(now.microseconds / 1_000_000 - date.microseconds / 1_000_000)
        guard skew <= Self.headerSignatureWindowSeconds else {
            throw AuthError(.expired, "the request's x-goog-date \(date.rfc3339) is more than 15 minutes from now")
        }
        return try verifyV4(
            request, algorithm: GoogleV4Signing.hmacAlgorithm, credential: credential, date: dates[0],
            signedHeaders: signedHeaders, signature: signature)
    }

    /// Who signed with `credential` and how to check their signature: a registered service account's RSA key, or
    /// for `GOOG4-HMAC-SHA256` an active HMAC key's derived signing key. Nil when the signer is unknown and
    /// ``acceptUnverifiedSigners`` lets it pass unverified.
    private func verifier(of credential: Credential, hmac: Bool, signature: [UInt8]) throws(AuthError) -> V4Verifier? {
        if hmac {
            guard let key = try hmacKeys?.hmacKey(accessID: credential.signer) else {
                if acceptUnverifiedSigners { return nil }
                throw AuthError(.unknownKey, "\(credential.signer) is not an active HMAC key of this server")
            }
            let signingKey = GoogleV4Signing.hmacSigningKey(secret: key.secret, scope: credential.scope)
            return V4Verifier(email: key.email) { message in
                ConstantTime.equals(HMACSHA256.authenticationCode(key: signingKey, message: message), signature)
            }
        }
        guard let account = accounts.account(credential.signer) else {
            if acceptUnverifiedSigners { return nil }
            throw AuthError(.unknownKey, "\(credential.signer) is not a service account registered with this server")
        }
        return V4Verifier(email: account.email) { account.publicKey.verifyRS256(signature: signature, message: $0) }
    }

    private struct V4Verifier {
        let email: String
        let verifies: ([UInt8]) -> Bool
    }

    /// V2: `GoogleAccessId`, `Expires` (seconds since the epoch) and a base64 RSA-SHA256 `Signature` of
    /// `METHOD\nContent-MD5\nContent-Type\nExpires\n` + the request's `x-goog-*` headers + the path.
    private func v2Signer(of request: SignedRequest, at now: Timestamp) throws(AuthError) -> ServiceAccountCaller? {
        func one(_ name: String) throws(AuthError) -> String {
            let found = request.query.filter { $0.name == name }
            guard found.count == 1, !found[0].value.isEmpty else {
                throw Self.malformed(name, "the signed URL needs exactly one \(name)")
            }
            return found[0].value
        }
        let email = try one("GoogleAccessId")
        let expiresText = try one("Expires")
        guard expiresText.utf8.count <= 12, let expires = Int64(expiresText), expires > 0 else {
            throw Self.malformed("Expires", "Expires must be seconds since the epoch")
        }
        guard let signature = Base64.decode(try one("Signature")) else {
            throw Self.malformed("Signature", "Signature is not base64")
        }
        guard now.microseconds / 1_000_000 < expires else {
            throw AuthError(
                .expired, "the signed URL expired at \(Timestamp(microseconds: expires * 1_000_000).rfc3339)")
        }
        guard let account = accounts.account(email) else {
            if acceptUnverifiedSigners { return nil }
            throw AuthError(.unknownKey, "\(email) is not a service account registered with this server")
        }
        func header(_ name: String) -> String {
            request.headers.filter { $0.name.lowercased() == name }.map(\.value).joined(separator: ",")
        }
        let extensions = Dictionary(
            request.headers.map { ($0.name.lowercased(), $0.value) }.filter {
                $0.0.hasPrefix("x-goog-") && !$0.0.hasPrefix("x-goog-encryption-key")
            }, uniquingKeysWith: { "\($0),\($1)" }
        ).sorted { $0.key < $1.key }.map { "\($0.key):\(GoogleV4Signing.canonicalHeaderValue($0.value))\n" }.joined()
        let stringToSign =
            "\(request.method)\n\(header("content-md5"))\n\(header("content-type"))\n\(expiresText)\n"
            + extensions + request.rawPath
        guard account.publicKey.verifyRS256(signature: signature, message: Array(stringToSign.utf8)) else {
            var error = AuthError(.badSignature, "the signature does not match this request signed by \(account.email)")
            error.signedRequest = SignedRequestDiagnosis(stringToSign: stringToSign)
            throw error
        }
        return ServiceAccountCaller(email: account.email, scopes: [], credential: .signedURL)
    }

    // MARK: POST policies

    /// The signer of a V4 POST policy form (`policy`, `x-goog-algorithm`, `x-goog-credential`, `x-goog-date`,
    /// `x-goog-signature`): the signature is over the base64 policy text itself. The policy's `expiration` and
    /// conditions are the caller's to check; this checks the signature and the credential.
    public func signer(ofPolicy policy: String, field: (String) -> String?, at now: Timestamp) throws(AuthError)
        -> ServiceAccountCaller?
    {
        func required(_ name: String) throws(AuthError) -> String {
            guard let value = field(name), !value.isEmpty else {
                throw Self.malformed(name, "the form has no \(name) field")
            }
            return value
        }
        let algorithm = try required("x-goog-algorithm")
        let hmac = algorithm == GoogleV4Signing.hmacAlgorithm
        guard hmac || algorithm == GoogleV4Signing.rsaAlgorithm else {
            throw AuthError(
                .unsupportedAlgorithm, "x-goog-algorithm must be GOOG4-RSA-SHA256 or GOOG4-HMAC-SHA256",
                parameter: "x-goog-algorithm")
        }
        let credential = try Credential(
            try required("x-goog-credential"), parameter: "x-goog-credential", accessID: hmac)
        let dateText = try required("x-goog-date")
        guard GoogleV4Signing.parseDate(dateText) != nil, dateText.hasPrefix(credential.date) else {
            throw Self.malformed("x-goog-date", "x-goog-date must be YYYYMMDD'T'HHMMSS'Z' of the credential's date")
        }
        guard let signature = GoogleV4Signing.unhex(try required("x-goog-signature")) else {
            throw Self.malformed("x-goog-signature", "x-goog-signature is not hexadecimal")
        }
        // The string to sign is the base64 policy itself, for an RSA key and an HMAC key's derived signing key alike.
        guard let verifier = try verifier(of: credential, hmac: hmac, signature: signature) else { return nil }
        guard verifier.verifies(Array(policy.utf8)) else {
            var error = AuthError(
                .badSignature, "the policy's signature does not verify with the key of \(verifier.email)")
            error.signedRequest = SignedRequestDiagnosis(stringToSign: policy)
            throw error
        }
        return ServiceAccountCaller(email: verifier.email, scopes: [], credential: .postPolicy)
    }

    // MARK: Shared checks

    /// `EMAIL/YYYYMMDD/REGION/storage/goog4_request` (an access id for `EMAIL` with HMAC keys).
    struct Credential {
        /// The service account's email, or for `GOOG4-HMAC-SHA256` an HMAC key's access id.
        let signer: String
        let date: String
        /// Everything after the email: the credential scope of the string to sign.
        let scope: String

        init(_ text: String, parameter: String, accessID: Bool = false) throws(AuthError) {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 5, accessID ? HMACSigningKey.isAccessID(parts[0]) : ServiceAccount.isEmail(parts[0]),
                parts[1].utf8.count == 8,
                parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }), !parts[2].isEmpty, parts[2].utf8.count <= 64,
                parts[3] == "storage", parts[4] == "goog4_request"
            else {
                throw ServiceAccountAuthority.malformed(
                    parameter,
                    "\(parameter) must be \(accessID ? "ACCESS_ID" : "EMAIL")/YYYYMMDD/REGION/storage/goog4_request")
            }
            signer = parts[0]
            date = parts[1]
            scope = parts[1...].joined(separator: "/")
        }
    }

    /// Valid from `date` (less the clock skew allowed) for `seconds`.
    private func checkWindow(from date: Timestamp, seconds: Int64, at now: Timestamp) throws(AuthError) {
        let start = date.microseconds / 1_000_000
        let current = now.microseconds / 1_000_000
        guard current + clockSkewSeconds >= start else {
            throw AuthError(.notYetValid, "the signed URL is not valid before \(date.rfc3339) (X-Goog-Date)")
        }
        guard current < start + seconds else {
            let end = Timestamp(microseconds: (start + seconds) * 1_000_000)
            throw AuthError(.expired, "the signed URL expired at \(end.rfc3339)")
        }
    }

    /// The hosts the server vouches for (``SignedRequest/hosts``), then the configured signing hosts. Never a host
    /// taken from the request's own headers: a URL signed for another deployment would verify here with that
    /// deployment's host in `Host` or `X-Forwarded-Host`.
    private func hostCandidates(_ request: SignedRequest) -> [String] {
        var hosts: [String] = []
        for host in request.hosts + signedURLHosts where !hosts.contains(host) { hosts.append(host) }
        return hosts
    }

    static func malformed(_ parameter: String, _ message: String) -> AuthError {
        AuthError(.malformedToken, message, parameter: parameter)
    }
}

extension AuthError {
    init(_ code: Code, _ message: String, parameter: String, file: String = #fileID, line: Int = #line) {
        self.init(code, message, file: file, line: line)
        signedRequest = SignedRequestDiagnosis(parameter: parameter)
    }
}
