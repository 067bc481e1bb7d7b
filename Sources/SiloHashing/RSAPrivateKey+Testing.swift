internal import CCrypto

/// An RSA key pair that signs RS256, for tests that need real Firebase-shaped tokens.
///
/// Test-only (SPI): the server never signs with RSA, and these keys never leave memory except as public material.
@_spi(Testing)
public final class RSAPrivateKey: @unchecked Sendable {
    // @unchecked Sendable: as for RSAPublicKey, the EVP_PKEY is never modified after init, and OpenSSL 3 allows
    // concurrent read-only use of one key (signing, exporting) from many threads, each with its own context.
    private let pkey: OpaquePointer

    /// Generates a fresh key pair (65537 exponent) of `bits` bits.
    public init(bits: Int = 2048) throws(CryptoError) {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, silo_name_rsa(), nil) else {
            throw CryptoError.fromQueue("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var generated: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1,
            EVP_PKEY_generate(context, &generated) == 1, let generated
        else { throw CryptoError.fromQueue("EVP_PKEY_generate") }
        pkey = generated
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Loads an unencrypted PEM private key (a service account's `private_key`), to sign as that account would.
    public init(pem: String) throws(CryptoError) {
        let bytes = Array(pem.utf8)
        let loaded: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let loaded else { throw CryptoError.fromQueue("PEM_read_bio_PrivateKey") }
        pkey = loaded
    }

    /// The key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), as a service account key file holds it.
    public func privateKeyPEM() throws(CryptoError) -> String {
        try withMemoryBIO("PEM_write_bio_PrivateKey") { PEM_write_bio_PrivateKey($0, pkey, nil, nil, 0, nil, nil) == 1 }
    }

    /// The RS256 signature of `message`.
    public func signRS256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let context = DigestContext()
        guard EVP_DigestSignInit(context.pointer, nil, EVP_sha256(), nil, pkey) == 1 else {
            throw CryptoError.fromQueue("EVP_DigestSignInit")
        }
        var length = 0
        guard EVP_DigestSign(context.pointer, nil, &length, message, message.count) == 1 else {
            throw CryptoError.fromQueue("EVP_DigestSign")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context.pointer, &signature, &length, message, message.count) == 1 else {
            throw CryptoError.fromQueue("EVP_DigestSign")
        }
        return Array(signature.prefix(length))
    }

    /// The public modulus and exponent as big-endian bytes (a JWK's `n` and `e` before base64url).
    public func publicComponents() throws(CryptoError) -> (modulus: [UInt8], exponent: [UInt8]) {
        (try bigNumber(silo_param_rsa_n()), try bigNumber(silo_param_rsa_e()))
    }

    private func bigNumber(_ name: UnsafePointer<CChar>) throws(CryptoError) -> [UInt8] {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pkey, name, &number) == 1, let number else {
            throw CryptoError.fromQueue("EVP_PKEY_get_bn_param")
        }
        defer { BN_free(number) }
        var bytes = [UInt8](repeating: 0, count: (Int(BN_num_bits(number)) + 7) / 8)
        _ = BN_bn2bin(number, &bytes)
        return bytes
    }

    /// The public key as `-----BEGIN PUBLIC KEY-----` PEM.
    public func publicKeyPEM() throws(CryptoError) -> String {
        try withMemoryBIO("PEM_write_bio_PUBKEY") { PEM_write_bio_PUBKEY($0, pkey) == 1 }
    }

    /// A self-signed X.509 certificate for the public key, valid from now for `days`, as PEM.
    public func selfSignedCertificatePEM(commonName: String = "silo-test", days: Int = 1) throws(CryptoError)
        -> String
    {
        guard let certificate = X509_new() else { throw CryptoError.fromQueue("X509_new") }
        defer { X509_free(certificate) }
        let name = X509_get_subject_name(certificate)
        guard X509_set_version(certificate, 2) == 1,
            ASN1_INTEGER_set(X509_get_serialNumber(certificate), 1) == 1,
            X509_gmtime_adj(X509_getm_notBefore(certificate), 0) != nil,
            X509_gmtime_adj(X509_getm_notAfter(certificate), days * 86_400) != nil,
            X509_set_pubkey(certificate, pkey) == 1,
            X509_NAME_add_entry_by_txt(name, "CN", silo_mbstring_asc(), commonName, -1, -1, 0) == 1,
            X509_set_issuer_name(certificate, name) == 1,
            X509_sign(certificate, pkey, EVP_sha256()) > 0
        else { throw CryptoError.fromQueue("X509_sign") }
        return try withMemoryBIO("PEM_write_bio_X509") { PEM_write_bio_X509($0, certificate) == 1 }
    }

    /// Runs `write` against a memory BIO and returns what it wrote.
    private func withMemoryBIO(_ call: String, _ write: (OpaquePointer) -> Bool) throws(CryptoError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.fromQueue("BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) else { throw CryptoError.fromQueue(call) }
        var text: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = BIO_read(bio, &buffer, Int32(buffer.count))
            if n <= 0 { break }
            text += buffer.prefix(Int(n))
        }
        return String(decoding: text, as: UTF8.self)
    }
}
