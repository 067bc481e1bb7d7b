internal import SiloCore

/// The base64url encoding of RFC 4648 §5 without padding, as JWTs use it (RFC 7515 §2): ``Base64``'s URL-safe form,
/// decoded strictly (one accepted spelling per byte string; `Base64.decode` is deliberately lenient for GCS fields).
enum Base64URL {
    static func encode(_ bytes: some Collection<UInt8>) -> String { Base64.encodeURLSafe(bytes) }

    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? { Base64.decodeURLSafeStrictly(text) }
}
