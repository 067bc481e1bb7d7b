// libFuzzer harness for token handling in SiloAuth: the Authorization header split, base64url, the compact JWT
// decoder, TokenVerifier (RS256 Firebase ID tokens, HS256 self-issued tokens, emulator mode) and the key-file
// parser. Properties:
// - base64url is canonical: whatever decodes re-encodes to the same text, and encode → decode is the identity;
// - an accepted JWT is three segments whose signing input and signature are exactly what the text says, with
//   unique member names; a header's scheme is canonical and its credential trimmed;
// - nothing is accepted as verified without a correct signature: an accepted HS256 token carries the HMAC of its
//   signing input, an accepted RS256 token the (deterministic) RSA signature; tokens the harness signs itself from
//   the input (header and payload JSON taken from it) are never refused for their signature, are refused with
//   badSignature once one signature byte changes, and are accepted exactly when a reference reading of the claim
//   rules accepts them, with `sub` as the uid;
// - in emulator mode nothing traps or throws for a merely malformed credential, and the principal's claims JSON
//   parses; only the literal `owner` is an unverified admin;
// - KeySet's JWKS / X.509 JSON parser never traps on a hostile key file and returns at least one key or throws.
import SiloCore
@_spi(Testing) import SiloHashing
import SiloWire

@testable import SiloAuth

private let project = "demo-project"
private let secret = Array("fuzz-secret-of-at-least-thirty-two-bytes".utf8)
private let now = Timestamp(microseconds: 1_700_000_000_000_000)
private let nowSeconds = 1_700_000_000.0
private let skew = 60.0
private let rsa = try! RSAPrivateKey(bits: 2048)
private let kid = "k1"

private let keys: KeySet = {
    let (n, e) = try! rsa.publicComponents()
    let jwks =
        #"{"keys":[{"kty":"RSA","kid":"\#(kid)","alg":"RS256","use":"sig","n":"\#(Base64URL.encode(n))","e":"\#(Base64URL.encode(e))"}]}"#
    return try! KeySet(json: jwks)
}()

private func verifier(emulator: Bool) -> TokenVerifier {
    var configuration = TokenVerifier.Configuration()
    configuration.firebase = FirebaseIDTokens(projectID: project, keys: keys)
    configuration.selfIssued = try! SelfIssuedTokens(secret: secret, audience: project)
    configuration.adminKeys = try! AdminKeys(keys: ["admin-key-0123456789abcdef"])
    configuration.emulator = emulator
    configuration.clockSkewSeconds = Int64(skew)
    return TokenVerifier(configuration)
}

private let strict = verifier(emulator: false)
private let emulatorWithKeys = verifier(emulator: true)
private let plainEmulator: TokenVerifier = {
    var configuration = TokenVerifier.Configuration()
    configuration.emulator = true
    return TokenVerifier(configuration)
}()

/// The claim rules as documented (RFC 7519 4.1 and Firebase's): the uid, or nil when the claims must be refused.
private func referenceClaims(_ claims: JSONObject, issuer: String, requiresAuthTime: Bool) -> String? {
    enum Time {
        case absent
        case bad
        case value(Double)
    }
    func time(_ name: String) -> Time {
        guard let value = claims[name] else { return .absent }
        guard case .number(let literal) = value, let number = Double(literal), number.isFinite else { return .bad }
        return .value(number)
    }
    guard case .value(let exp) = time("exp"), nowSeconds < exp + skew else { return nil }
    guard case .value(let iat) = time("iat"), iat <= nowSeconds + skew else { return nil }
    switch time("nbf") {
    case .bad: return nil
    case .value(let nbf) where nbf > nowSeconds + skew: return nil
    default: break
    }
    switch time("auth_time") {
    case .bad: return nil
    case .absent where requiresAuthTime: return nil
    case .value(let authTime) where authTime > nowSeconds + skew: return nil
    default: break
    }
    guard claims["aud"]?.stringValue == project, claims["iss"]?.stringValue == issuer else { return nil }
    guard let sub = claims["sub"]?.stringValue, !sub.isEmpty, sub.utf16.count <= 128 else { return nil }
    return sub
}

private func uniqueObject(_ bytes: [UInt8]) -> JSONObject? {
    guard let object = (try? JSONValue.parse(bytes))?.objectValue, Set(object.keys).count == object.members.count
    else { return nil }
    return object
}

private func checkBase64(_ input: [UInt8]) {
    if let decoded = Base64URL.decode(input) {
        require(Array(Base64URL.encode(decoded).utf8) == input, "base64url \(hex(input)) is not canonical")
    }
    let encoded = Array(Base64URL.encode(input).utf8)
    require(Base64URL.decode(encoded) == input, "base64url round trip of \(hex(input))")
    require(!encoded.contains(0x3D), "padding in \(hex(encoded))")
}

private func checkHeader(_ text: String) {
    if case .present(let header) = AuthorizationHeader.parse(text) {
        require(header.scheme == "Firebase" || header.scheme == "Bearer", "scheme \(header.scheme)")
        let c = Array(header.credential.utf8)
        require(
            c.first.map { $0 != 0x20 && $0 != 0x09 } ?? true && c.last.map { $0 != 0x20 && $0 != 0x09 } ?? true,
            "credential not trimmed: \(hex(c))")
    }
}

private func checkCompact(_ text: String) {
    guard let jwt = try? CompactJWT(parsing: text) else { return }
    let bytes = Array(text.utf8)
    let segments = bytes.split(separator: 0x2E, omittingEmptySubsequences: false).map { Array($0) }
    require(segments.count == 3, "accepted \(segments.count) segments")
    require(jwt.signingInput == segments[0] + [0x2E] + segments[1], "signing input of \(hex(bytes))")
    require(jwt.signature == Base64URL.decode(segments[2]), "signature of \(hex(bytes))")
    require(Set(jwt.header.keys).count == jwt.header.members.count, "duplicate header names accepted")
    require(Set(jwt.claims.keys).count == jwt.claims.members.count, "duplicate claim names accepted")
    require(jwt.header["alg"]?.stringValue == jwt.algorithm, "alg")
    require(jwt.header["crit"] == nil, "crit accepted")
}

/// Any token the strict verifier accepts carries a correct signature and claims the reference accepts.
private func checkStrict(_ token: String) {
    guard let verified = try? strict.verify(token: token, at: now) else { return }
    guard let jwt = try? CompactJWT(parsing: token) else { fail("verified a token CompactJWT refuses") }
    require(verified.verified, "strict verifier returned an unverified token")
    switch verified.algorithm {
    case "HS256":
        require(
            jwt.signature == HMACSHA256.authenticationCode(key: secret, message: jwt.signingInput),
            "HS256 token accepted without its HMAC: \(token)")
        require(
            referenceClaims(jwt.claims, issuer: "silo", requiresAuthTime: false) == verified.uid,
            "HS256 claims accepted that the reference refuses: \(token)")
    case "RS256":
        require(jwt.keyID == kid, "RS256 without the key id")
        require(jwt.signature == (try? rsa.signRS256(jwt.signingInput)), "RS256 token accepted without its signature")
        require(
            referenceClaims(jwt.claims, issuer: "https://securetoken.google.com/\(project)", requiresAuthTime: true)
                == verified.uid,
            "RS256 claims accepted that the reference refuses: \(token)")
    default:
        fail("strict verifier accepted alg \(verified.algorithm)")
    }
}

private func checkEmulator(_ text: String) {
    for verifier in [plainEmulator, emulatorWithKeys] {
        for header in ["Firebase " + text, "Bearer " + text, text] {
            let principal: Principal?
            do {
                principal = try verifier.principal(authorizationHeader: header, at: now)
            } catch {
                // Only a token whose algorithm has a key configured is checked (and refused) in emulator mode.
                require(
                    [
                        .badSignature, .unknownKey, .expired, .notYetValid, .wrongAudience, .wrongIssuer,
                        .invalidSubject,
                        .invalidClaims,
                    ].contains(error.code) && verifier.configuration.firebase != nil,
                    "emulator refused \(header.debugDescription): \(error)")
                continue
            }
            guard let principal else { continue }
            require((try? JSONValue.parse(principal.claimsJSON))?.objectValue != nil, "claims JSON does not parse")
            if principal.isAdmin && !principal.verified {
                require(principal.credential == "owner", "unverified admin for \(header.debugDescription)")
            }
        }
    }
}

/// Tokens signed here from the input: `header JSON \n payload JSON`.
private func checkSigned(_ input: [UInt8]) {
    let newline = input.firstIndex(of: 0x0A) ?? input.count
    let header = Array(input[..<newline])
    let payload = newline < input.count ? Array(input[(newline + 1)...]) : []
    let signingInput = Array((Base64URL.encode(header) + "." + Base64URL.encode(payload)).utf8)
    guard let headerObject = uniqueObject(header) else { return }
    let alg = headerObject["alg"]?.stringValue
    let signature: [UInt8]
    switch alg {
    case "HS256": signature = HMACSHA256.authenticationCode(key: secret, message: signingInput)
    case "RS256": signature = (try? rsa.signRS256(signingInput)) ?? []
    default: return
    }
    let token = String(decoding: signingInput, as: UTF8.self) + "." + Base64URL.encode(signature)
    let wellFormed =
        uniqueObject(payload) != nil && headerObject["crit"] == nil
        && (headerObject["kid"] == nil || headerObject["kid"]?.stringValue != nil)
    do {
        let verified = try strict.verify(token: token, at: now)
        require(wellFormed, "accepted a malformed token \(token)")
        let claims = uniqueObject(payload)!
        let expected =
            alg == "HS256"
            ? referenceClaims(claims, issuer: "silo", requiresAuthTime: false)
            : referenceClaims(claims, issuer: "https://securetoken.google.com/\(project)", requiresAuthTime: true)
        require(
            expected == verified.uid,
            "accepted \(token) with uid \(verified.uid ?? "nil"), reference \(expected ?? "refuses")")
    } catch {
        require(error.code != .badSignature, "a correctly signed token refused for its signature: \(token)")
        if wellFormed && (alg == "HS256" || headerObject["kid"]?.stringValue == kid) {
            let claims = uniqueObject(payload)!
            let expected =
                alg == "HS256"
                ? referenceClaims(claims, issuer: "silo", requiresAuthTime: false)
                : referenceClaims(claims, issuer: "https://securetoken.google.com/\(project)", requiresAuthTime: true)
            require(expected == nil, "refused \(token) (\(error)) that the reference accepts as \(expected!)")
        }
    }
    // One signature byte changed: refused for its signature.
    if wellFormed, !signature.isEmpty, alg == "HS256" || headerObject["kid"]?.stringValue == kid {
        var tampered = signature
        tampered[Int(signingInput.count % signature.count)] ^= 0x01
        let bad = String(decoding: signingInput, as: UTF8.self) + "." + Base64URL.encode(tampered)
        do {
            _ = try strict.verify(token: bad, at: now)
            fail("accepted a token with a changed signature: \(bad)")
        } catch {
            require(error.code == .badSignature, "a changed signature gave \(error) for \(bad)")
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func jwtFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: input, as: UTF8.self)
    checkBase64(input)
    checkHeader(text)
    checkCompact(text)
    checkStrict(text)
    checkEmulator(text)
    checkSigned(input)
    if let keySet = try? KeySet(json: text) { require(!keySet.keyIDs.isEmpty, "an empty key set was accepted") }
    return 0
}
