#if os(Linux)
internal import COpenSSL
import Glibc
internal import SiloHashing

/// A server `SSL_CTX` with one certificate chain and its key, set up with Silo's defaults (docs/tls.md):
/// TLS 1.2 and 1.3 only, forward-secret AEAD suites, ALPN `http/1.1`, no renegotiation, no compression, session
/// tickets on (stateless; no server-side session cache to bound or lock).
///
/// Immutable once built: a reload builds a new context (``TLSIdentity``), and connections keep the one they began
/// with. `@unchecked Sendable`: the handle is only read after `init` (`SSL_new` from any thread is safe on a
/// configured `SSL_CTX`; OpenSSL locks what it changes inside, such as reference counts and ticket keys).
public final class TLSContext: @unchecked Sendable {
    let handle: OpaquePointer
    /// The leaf certificate being served.
    public let certificate: TLSCertificateSummary

    /// TLS 1.2 suites: ECDHE key exchange (forward secrecy) with AEAD ciphers only. TLS 1.3's own suites are all
    /// AEAD; OpenSSL's default list for them is kept.
    static let tls12Ciphers =
        "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
        + "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
    static let groups = "X25519:P-256:P-384"

    /// Loads a PEM certificate chain (the leaf first, then intermediates) and a PEM private key (unencrypted).
    public convenience init(certificateChainFile: String, privateKeyFile: String) throws {
        let chain = try PEMFile(path: certificateChainFile, what: "certificate")
        let key = try PEMFile(path: privateKeyFile, what: "private key")
        try self.init(chain: chain, key: key)
    }

    private init(chain: PEMFile, key: PEMFile) throws {
        ERR_clear_error()
        guard let handle = SSL_CTX_new(TLS_server_method()) else {
            throw TLSError(.setupFailed, "cannot create a TLS context", cause: CryptoError.fromQueue("SSL_CTX_new"))
        }
        do {
            certificate = try Self.configure(handle, chain: chain, key: key)
        } catch {
            // deinit does not run for an object whose stored properties were not all set.
            SSL_CTX_free(handle)
            throw error
        }
        self.handle = handle
    }

    deinit { SSL_CTX_free(handle) }

    private static func configure(_ context: OpaquePointer, chain: PEMFile, key: PEMFile) throws
        -> TLSCertificateSummary
    {
        func setup(_ ok: Bool, _ call: String) throws {
            if !ok { throw TLSError(.setupFailed, "cannot configure TLS", cause: CryptoError.fromQueue(call)) }
        }
        silo_ssl_ctx_refuse_passphrases(context)
        try setup(
            silo_ssl_ctx_set_min_proto_version(context, silo_tls1_2_version()) == 1, "SSL_CTX_set_min_proto_version")
        _ = SSL_CTX_set_options(context, silo_ssl_server_options())
        _ = silo_ssl_ctx_set_mode(context, silo_ssl_server_modes())
        // One recv takes what the socket holds instead of a record header and then its body.
        _ = silo_ssl_ctx_set_read_ahead(context, 1)
        try setup(SSL_CTX_set_cipher_list(context, tls12Ciphers) == 1, "SSL_CTX_set_cipher_list")
        try setup(silo_ssl_ctx_set1_groups_list(context, groups) == 1, "SSL_CTX_set1_groups_list")
        // Resumption by tickets only: a session cache would be shared, locked state on every handshake.
        _ = silo_ssl_ctx_set_session_cache_mode(context, silo_ssl_sess_cache_off())
        let sessionContext = Array("silo".utf8)
        try setup(
            SSL_CTX_set_session_id_context(context, sessionContext, UInt32(sessionContext.count)) == 1,
            "SSL_CTX_set_session_id_context")
        silo_ssl_ctx_select_http11(context)

        let summary = try loadChain(chain, into: context)
        try loadKey(key, certificateFile: chain.path, into: context)
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw TLSError(
                .keyMismatch, "the private key in \(key.path) does not belong to the certificate in \(chain.path)",
                cause: CryptoError.fromQueue("SSL_CTX_check_private_key"))
        }
        ERR_clear_error()
        return summary
    }

    /// The leaf goes in with `SSL_CTX_use_certificate`, every further certificate into the chain sent after it.
    private static func loadChain(_ chain: PEMFile, into context: OpaquePointer) throws -> TLSCertificateSummary {
        try chain.withBIO { bio in
            guard let leaf = silo_pem_read_x509(bio) else {
                throw TLSError(
                    .invalidCertificate, "no PEM certificate in \(chain.path)",
                    cause: CryptoError.fromQueue("PEM_read_bio_X509"))
            }
            defer { X509_free(leaf) }
            let summary = TLSCertificateSummary(leaf)
            if let end = X509_get0_notAfter(leaf), X509_cmp_current_time(end) < 0 {
                throw TLSError(
                    .expiredCertificate, "the certificate in \(chain.path) (\(summary)) has expired")
            }
            guard SSL_CTX_use_certificate(context, leaf) == 1 else {
                throw TLSError(
                    .invalidCertificate, "OpenSSL refuses the certificate in \(chain.path)",
                    cause: CryptoError.fromQueue("SSL_CTX_use_certificate"))
            }
            while let next = silo_pem_read_x509(bio) {
                guard silo_ssl_ctx_add0_chain_cert(context, next) == 1 else {
                    X509_free(next)
                    throw TLSError(
                        .invalidCertificate, "OpenSSL refuses an intermediate certificate in \(chain.path)",
                        cause: CryptoError.fromQueue("SSL_CTX_add0_chain_cert"))
                }
            }
            // The loop ends on "no start line" (end of file), which is not an error; anything else in the file is.
            let reasons = CryptoError.fromQueue("PEM_read_bio_X509")
            if reasons.reasons.contains(where: { !$0.contains("no start line") }) {
                throw TLSError(.invalidCertificate, "a malformed certificate in \(chain.path)", cause: reasons)
            }
            return summary
        }
    }

    private static func loadKey(_ key: PEMFile, certificateFile: String, into context: OpaquePointer) throws {
        try key.withBIO { bio in
            guard let privateKey = silo_pem_read_private_key(bio) else {
                throw TLSError(
                    .invalidPrivateKey,
                    "no unencrypted PEM private key in \(key.path)",
                    cause: CryptoError.fromQueue("PEM_read_bio_PrivateKey"))
            }
            defer { EVP_PKEY_free(privateKey) }
            // Checked here, not left to SSL_CTX_use_PrivateKey, so the error says which files disagree.
            if let leaf = SSL_CTX_get0_certificate(context), X509_check_private_key(leaf, privateKey) != 1 {
                throw TLSError(
                    .keyMismatch,
                    "the private key in \(key.path) does not belong to the certificate in \(certificateFile)",
                    cause: CryptoError.fromQueue("X509_check_private_key"))
            }
            guard SSL_CTX_use_PrivateKey(context, privateKey) == 1 else {
                throw TLSError(
                    .invalidPrivateKey, "OpenSSL refuses the private key in \(key.path)",
                    cause: CryptoError.fromQueue("SSL_CTX_use_PrivateKey"))
            }
        }
    }
}
#endif
