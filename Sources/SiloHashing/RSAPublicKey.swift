internal import CCrypto

/// An RSA public key that checks RS256 signatures (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 §3.3).
///
/// Loaded from a PEM certificate or public key, or from a JWK's modulus and exponent. Keys under 2048 bits are
/// refused (RFC 7518 §3.3 requires at least that), as is any key that is not plain RSA.
public final class RSAPublicKey: @unchecked Sendable {
    // @unchecked Sendable: the EVP_PKEY is never modified after init, and OpenSSL 3 allows one key to be used
    // by any number of threads at once for read-only operations such as verification (openssl-threads(7)); each
    // verification uses its own EVP_MD_CTX.
    let pkey: OpaquePointer

    /// The smallest modulus accepted, in bits.
    public static let minimumBits = 2048

    /// Takes ownership of `pkey` (freed if the checks fail).
    init(owning pkey: OpaquePointer, source: String) throws(CryptoError) {
        self.pkey = pkey
        guard EVP_PKEY_is_a(pkey, "RSA") == 1 else {
            throw CryptoError(call: source, reasons: ["the key is not an RSA key"])
        }
        let bits = Int(EVP_PKEY_get_bits(pkey))
        guard bits >= Self.minimumBits else {
            throw CryptoError(call: source, reasons: ["the RSA key has \(bits) bits; at least 2048 are required"])
        }
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Reads `-----BEGIN CERTIFICATE-----` (the key of an X.509 certificate, as Google publishes Firebase's keys)
    /// or `-----BEGIN PUBLIC KEY-----` (SubjectPublicKeyInfo). The certificate's validity dates are not checked:
    /// Google rotates the published set itself, and verifiers such as the Admin SDK use only the key.
    public convenience init(pem: String) throws(CryptoError) {
        let bytes = Array(pem.utf8)
        let isCertificate = pem.contains("-----BEGIN CERTIFICATE-----")
        let call = isCertificate ? "PEM_read_bio_X509" : "PEM_read_bio_PUBKEY"
        let loaded: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            if isCertificate {
                guard let certificate = PEM_read_bio_X509(bio, nil, nil, nil) else { return nil }
                defer { X509_free(certificate) }
                // X509_get_pubkey returns a new reference, which the key object then owns.
                return X509_get_pubkey(certificate)
            }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let loaded else { throw CryptoError.fromQueue(call) }
        try self.init(owning: loaded, source: call)
    }

    /// Builds the key from big-endian unsigned modulus and exponent bytes (a JWK's decoded `n` and `e`).
    public convenience init(modulus: [UInt8], exponent: [UInt8]) throws(CryptoError) {
        guard !modulus.isEmpty, !exponent.isEmpty, exponent.count <= 8 else {
            throw CryptoError(call: "RSAPublicKey(modulus:exponent:)", reasons: ["empty modulus or bad exponent"])
        }
        guard let built = Self.fromData(modulus: modulus, exponent: exponent) else {
            throw CryptoError.fromQueue("EVP_PKEY_fromdata")
        }
        try self.init(owning: built, source: "EVP_PKEY_fromdata")
    }

    /// The public half of an unencrypted PKCS#8 RSA private key (`-----BEGIN PRIVATE KEY-----`, as a service
    /// account's JSON key carries it). The private key is parsed, its public part copied out, and the private key
    /// freed at once (OpenSSL clears private numbers when it frees them); only the public key is kept.
    public convenience init(publicPartOfPrivateKeyPEM pem: [UInt8]) throws(CryptoError) {
        let call = "PEM_read_bio_PrivateKey"
        // An encrypted key would make OpenSSL ask for a passphrase on the terminal; refuse it first.
        guard !pem.starts(with: Array("-----BEGIN ENCRYPTED PRIVATE KEY-----".utf8)) else {
            throw CryptoError(call: call, reasons: ["the private key is encrypted"])
        }
        let publicKey: OpaquePointer? = pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            // A callback that supplies no passphrase, so nothing ever reads the terminal.
            guard let privateKey = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil) else { return nil }
            defer { EVP_PKEY_free(privateKey) }
            // The SubjectPublicKeyInfo DER of the key, read back as a key that holds only the public numbers.
            let length = i2d_PUBKEY(privateKey, nil)
            guard length > 0 else { return nil }
            var der = [UInt8](repeating: 0, count: Int(length))
            let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
                var cursor = buffer.baseAddress
                return i2d_PUBKEY(privateKey, &cursor)
            }
            guard written == length else { return nil }
            return der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
                var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                return d2i_PUBKEY(nil, &cursor, Int(length))
            }
        }
        guard let publicKey else { throw CryptoError.fromQueue(call) }
        try self.init(owning: publicKey, source: call)
    }

    /// OpenSSL 3's provider route: big numbers into an OSSL_PARAM list, then `EVP_PKEY_fromdata`.
    private static func fromData(modulus: [UInt8], exponent: [UInt8]) -> OpaquePointer? {
        let n = BN_bin2bn(modulus, Int32(modulus.count), nil)
        let e = BN_bin2bn(exponent, Int32(exponent.count), nil)
        defer {
            BN_free(n)
            BN_free(e)
        }
        guard let n, let e, let builder = OSSL_PARAM_BLD_new() else { return nil }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard OSSL_PARAM_BLD_push_BN(builder, silo_param_rsa_n(), n) == 1,
            OSSL_PARAM_BLD_push_BN(builder, silo_param_rsa_e(), e) == 1,
            let params = OSSL_PARAM_BLD_to_param(builder)
        else { return nil }
        defer { OSSL_PARAM_free(params) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, silo_name_rsa(), nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_fromdata_init(context) == 1 else { return nil }
        var result: OpaquePointer?
        guard EVP_PKEY_fromdata(context, &result, silo_evp_pkey_public_key_selection(), params) == 1 else {
            return nil
        }
        return result
    }

    /// The modulus size in bits.
    public var bits: Int { Int(EVP_PKEY_get_bits(pkey)) }

    /// Whether `signature` is a valid RS256 signature of `message` under this key.
    public func verifyRS256(signature: [UInt8], message: [UInt8]) -> Bool {
        // A signature is exactly as long as the modulus; anything else cannot be valid, so skip the work.
        guard signature.count == (bits + 7) / 8 else { return false }
        let context = DigestContext()
        let valid =
            EVP_DigestVerifyInit(context.pointer, nil, EVP_sha256(), nil, pkey) == 1
            && signature.withUnsafeBytes { sig in
                message.withUnsafeBytes { msg in
                    EVP_DigestVerify(
                        context.pointer, sig.baseAddress?.assumingMemoryBound(to: UInt8.self), sig.count,
                        msg.baseAddress?.assumingMemoryBound(to: UInt8.self), msg.count) == 1
                }
            }
        // A bad signature queues reasons; clear them so they are not blamed on a later call on this thread.
        if !valid { _ = drainErrorQueue() }
        return valid
    }
}

/// Owns one `EVP_MD_CTX` for the length of a sign or verify operation.
final class DigestContext {
    let pointer: OpaquePointer

    init() {
        guard let pointer = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
        self.pointer = pointer
    }

    deinit { EVP_MD_CTX_free(pointer) }
}
