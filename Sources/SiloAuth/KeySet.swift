internal import SiloCore
public import SiloHashing
import SiloWire
import Synchronization

/// The RSA public keys Firebase ID tokens are checked against, by key id, reloadable from the file they came from.
///
/// The file holds either format Google publishes:
/// - JWKS: `{"keys": [{"kty": "RSA", "kid": "…", "n": "…", "e": "AQAB", "alg": "RS256", "use": "sig"}, …]}`
///   (`https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com`);
/// - X.509 JSON: `{"<kid>": "-----BEGIN CERTIFICATE-----\n…", …}`
///   (`https://www.googleapis.com/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com`).
///
/// Fetching the keys is left to the operator (a cron job or sidecar): the server makes no outbound requests.
public final class KeySet: Sendable {
    /// The file the keys were loaded from; nil for keys given as text.
    public let path: String?
    /// Read on every verified request, event loops included: readers share the lock and never wait for each other;
    /// only a reload's swap of the dictionary excludes them, for that assignment.
    private let keys: ReadWriteLock<[String: RSAPublicKey]>

    /// Loads the keys in `path`.
    public init(contentsOfFile path: String) throws(AuthError) {
        self.path = path
        keys = ReadWriteLock(try Self.load(path))
    }

    /// Loads keys from JSON text in either format (for tests and embedding).
    public init(json: String) throws(AuthError) {
        path = nil
        keys = ReadWriteLock(try Self.parse(Array(json.utf8), source: "the key set"))
    }

    /// Re-reads the file and swaps the new keys in, returning how many there are. On any error the old keys stay
    /// in use and the error is thrown, so a half-written file never locks everyone out.
    @discardableResult
    public func reload() throws(AuthError) -> Int {
        guard let path else {
            throw AuthError(.invalidConfiguration, "this key set was not loaded from a file and cannot be reloaded")
        }
        let fresh = try Self.load(path)
        keys.withWriteLock { $0 = fresh }
        return fresh.count
    }

    /// The key ids currently loaded, sorted.
    public var keyIDs: [String] { keys.withReadLock { $0.keys.sorted() } }

    /// The key with id `kid`, if loaded.
    public func key(id kid: String) -> RSAPublicKey? { keys.withReadLock { $0[kid] } }

    private static func load(_ path: String) throws(AuthError) -> [String: RSAPublicKey] {
        try parse(
            ConfigurationFile.contents(of: path, what: "the auth key file"), source: "the auth key file '\(path)'")
    }

    static func parse(_ bytes: [UInt8], source: String) throws(AuthError) -> [String: RSAPublicKey] {
        let document: JSONValue
        do {
            document = try JSONValue.parse(bytes)
        } catch {
            throw AuthError(.invalidConfiguration, "\(source) is not valid JSON", cause: error as? JSONParseError)
        }
        guard let object = document.objectValue else {
            throw AuthError(.invalidConfiguration, "\(source) is not a JSON object")
        }
        var result: [String: RSAPublicKey] = [:]
        if let jwks = object["keys"] {
            guard let entries = jwks.arrayValue else {
                throw AuthError(.invalidConfiguration, "\(source): 'keys' is not an array")
            }
            for (index, entry) in entries.enumerated() {
                guard let jwk = entry.objectValue else {
                    throw AuthError(.invalidConfiguration, "\(source): key \(index) is not an object")
                }
                guard let (kid, key) = try parseJWK(jwk, where: "\(source): key \(index)") else { continue }
                try insert(kid, key, into: &result, source: source)
            }
        } else {
            for (kid, value) in object.members {
                guard let pem = value.stringValue else {
                    throw AuthError(.invalidConfiguration, "\(source): the value for '\(kid)' is not a PEM string")
                }
                let key: RSAPublicKey
                do {
                    key = try RSAPublicKey(pem: pem)
                } catch {
                    throw AuthError(
                        .invalidConfiguration, "\(source): the certificate '\(kid)' is unusable", cause: error)
                }
                try insert(kid, key, into: &result, source: source)
            }
        }
        guard !result.isEmpty else { throw AuthError(.invalidConfiguration, "\(source) holds no usable RSA keys") }
        return result
    }

    /// An RSA signing key from a JWK, or nil for keys of other kinds, which a JWKS may also list.
    private static func parseJWK(_ jwk: JSONObject, where place: String) throws(AuthError) -> (String, RSAPublicKey)? {
        guard jwk["kty"]?.stringValue == "RSA" else { return nil }
        if let use = jwk["use"], use.stringValue != "sig" { return nil }
        if let alg = jwk["alg"], alg.stringValue != "RS256" { return nil }
        guard let kid = jwk["kid"]?.stringValue, !kid.isEmpty else {
            throw AuthError(.invalidConfiguration, "\(place) has no 'kid'")
        }
        guard let n = jwk["n"]?.stringValue.flatMap({ Base64URL.decode(Array($0.utf8)) }),
            let e = jwk["e"]?.stringValue.flatMap({ Base64URL.decode(Array($0.utf8)) })
        else {
            throw AuthError(.invalidConfiguration, "\(place) ('\(kid)') needs base64url 'n' and 'e'")
        }
        do {
            return (kid, try RSAPublicKey(modulus: n, exponent: e))
        } catch {
            throw AuthError(.invalidConfiguration, "\(place) ('\(kid)') is unusable", cause: error)
        }
    }

    private static func insert(
        _ kid: String, _ key: RSAPublicKey, into keys: inout [String: RSAPublicKey], source: String
    ) throws(AuthError) {
        guard keys.updateValue(key, forKey: kid) == nil else {
            throw AuthError(.invalidConfiguration, "\(source) lists the key id '\(kid)' twice")
        }
    }
}
