package import SiloCore
package import SiloHTTP
import SiloHashing

/// Customer-supplied encryption keys, as GCS checks them: a write names its key in three headers (the algorithm,
/// `AES256`; the key, base64 of 32 bytes; its base64 SHA-256), the object keeps the key's SHA-256
/// (`customerEncryption.keySha256`), and its bytes are served only to a request that supplies the same key. Silo
/// checks the key but does not encrypt with it: the bytes are stored as they were sent.
package enum CustomerEncryption {
    /// The base64 SHA-256 of the key the request supplies, nil when it supplies none. An incomplete or inconsistent
    /// set of headers is a 400 where it enters.
    package static func keySHA256(_ headers: HTTPHeaders) throws -> String? {
        let algorithm = headers["x-goog-encryption-algorithm"]
        let key = headers["x-goog-encryption-key"]
        let hash = headers["x-goog-encryption-key-sha256"]
        if algorithm == nil && key == nil && hash == nil { return nil }
        guard let algorithm, equalsIgnoringCase(algorithm, "AES256") else {
            throw StorageError(.invalidArgument, "x-goog-encryption-algorithm must be AES256")
        }
        guard let key, let raw = Base64.decode(key), raw.count == 32 else {
            throw StorageError(.invalidArgument, "x-goog-encryption-key must be a base64-encoded 256-bit key")
        }
        let digest = Base64.encode(SHA256.digest(raw))
        if let hash, hash != digest {
            throw StorageError(
                .invalidArgument,
                "The provided encryption key's SHA-256 hash does not match x-goog-encryption-key-sha256")
        }
        return digest
    }

    /// Throws 400 unless the request may read the bytes of `record`: the key it was written with, if any.
    package static func checkRead(_ record: ObjectRecord, _ headers: HTTPHeaders) throws {
        guard let stored = record.fields.extras.customerKeySHA256 else { return }
        guard let given = try keySHA256(headers) else {
            throw StorageError(
                .invalidArgument,
                "The target object \(record.bucket)/\(record.name) is encrypted by a customer-supplied encryption key.")
        }
        guard given == stored else {
            throw StorageError(
                .invalidArgument, "The provided encryption key is incorrect for \(record.bucket)/\(record.name).")
        }
    }
}
