// libssl for SiloTLS (the epoll transport's TLS): the server side of TLS 1.2/1.3 on non-blocking sockets.
// SiloHashing wraps libcrypto through CCrypto; this module is imported only by SiloTLS.
#ifndef SILO_COPENSSL_SHIM_H
#define SILO_COPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>

// Macros over SSL_CTX_ctrl / SSL_ctrl, which Swift does not import.
static inline int silo_ssl_ctx_set_min_proto_version(SSL_CTX *_Nonnull ctx, int version) {
    return (int) SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long silo_ssl_ctx_set_mode(SSL_CTX *_Nonnull ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long silo_ssl_ctx_set_read_ahead(SSL_CTX *_Nonnull ctx, int on) {
    return SSL_CTX_set_read_ahead(ctx, on);
}
static inline long silo_ssl_ctx_set_session_cache_mode(SSL_CTX *_Nonnull ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
static inline int silo_ssl_ctx_set1_groups_list(SSL_CTX *_Nonnull ctx, const char *_Nonnull list) {
    return (int) SSL_CTX_set1_groups_list(ctx, list);
}
/// Adds an intermediate certificate to the chain sent after the leaf; the context takes ownership on success.
static inline int silo_ssl_ctx_add0_chain_cert(SSL_CTX *_Nonnull ctx, X509 *_Nonnull cert) {
    return (int) SSL_CTX_add0_chain_cert(ctx, cert);
}

// Option and mode bits are macros of a width Swift would have to guess; these fix them.
static inline uint64_t silo_ssl_server_options(void) {
    return SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION
        | SSL_OP_IGNORE_UNEXPECTED_EOF;
}
static inline long silo_ssl_server_modes(void) {
    return SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS;
}
static inline int silo_tls1_2_version(void) { return TLS1_2_VERSION; }
static inline long silo_ssl_sess_cache_off(void) { return SSL_SESS_CACHE_OFF; }
static inline int silo_ssl_filetype_pem(void) { return SSL_FILETYPE_PEM; }

/// A passphrase callback that supplies none: an encrypted key fails to load instead of OpenSSL prompting on the
/// terminal (which would block the server's start, or a reload, waiting for input).
static int silo_no_passphrase(char *buf, int size, int rwflag, void *userdata) {
    (void) buf; (void) size; (void) rwflag; (void) userdata;
    return -1;
}
static inline void silo_ssl_ctx_refuse_passphrases(SSL_CTX *_Nonnull ctx) {
    SSL_CTX_set_default_passwd_cb(ctx, silo_no_passphrase);
}
static inline EVP_PKEY *_Nullable silo_pem_read_private_key(BIO *_Nonnull bio) {
    return PEM_read_bio_PrivateKey(bio, NULL, silo_no_passphrase, NULL);
}
static inline X509 *_Nullable silo_pem_read_x509(BIO *_Nonnull bio) {
    return PEM_read_bio_X509(bio, NULL, silo_no_passphrase, NULL);
}

/// ALPN: the server speaks only HTTP/1.1. A client that offers it gets it; one that offers only other protocols
/// (h2 alone) gets no ALPN answer and may still speak HTTP/1.1, or give up, rather than a fatal alert.
static const unsigned char silo_alpn_http11[] = { 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
static int silo_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                            unsigned int inlen, void *arg) {
    (void) ssl; (void) arg;
    unsigned char *selected = NULL;
    if (SSL_select_next_proto(&selected, outlen, silo_alpn_http11, sizeof(silo_alpn_http11), in, inlen)
            == OPENSSL_NPN_NEGOTIATED) {
        *out = selected;
        return SSL_TLSEXT_ERR_OK;
    }
    return SSL_TLSEXT_ERR_NOACK;
}
static inline void silo_ssl_ctx_select_http11(SSL_CTX *_Nonnull ctx) {
    SSL_CTX_set_alpn_select_cb(ctx, silo_alpn_select, NULL);
}

// SSL_get_error's results (macros).
static inline int silo_ssl_error_want_read(void) { return SSL_ERROR_WANT_READ; }
static inline int silo_ssl_error_want_write(void) { return SSL_ERROR_WANT_WRITE; }
static inline int silo_ssl_error_zero_return(void) { return SSL_ERROR_ZERO_RETURN; }
static inline int silo_ssl_error_syscall(void) { return SSL_ERROR_SYSCALL; }

#endif
