#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/hmac.h>
#include <openssl/err.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/rsa.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>

// EVP_PKEY_PUBLIC_KEY is a macro built from other macros, which Swift does not import.
static inline int silo_evp_pkey_public_key_selection(void) { return EVP_PKEY_PUBLIC_KEY; }

// MBSTRING_ASC is likewise a composite macro (used when naming a self-signed test certificate).
static inline int silo_mbstring_asc(void) { return MBSTRING_ASC; }

// Names with static storage. Some OpenSSL 3 calls keep the name pointer rather than copying it
// (OSSL_PARAM_BLD_push_* until OSSL_PARAM_BLD_to_param, EVP_PKEY_CTX_new_from_name for the context's lifetime),
// so a temporary C string bridged from a Swift String would dangle.
static inline const char *silo_name_rsa(void) { return "RSA"; }
static inline const char *silo_param_rsa_n(void) { return OSSL_PKEY_PARAM_RSA_N; }
static inline const char *silo_param_rsa_e(void) { return OSSL_PKEY_PARAM_RSA_E; }
