#ifndef SILO_CCURL_SHIM_H
#define SILO_CCURL_SHIM_H

// Typed, fixed-arity wrappers around libcurl's variadic curl_easy_setopt and curl_easy_getinfo, which Swift cannot
// import. One wrapper per argument type, so clang checks each call's argument against the option's C type.
// Only SiloCurl imports this module.

#include <stdint.h>
#include <stddef.h>
#include <curl/curl.h>

static inline CURLcode silo_curl_setopt_long(CURL *_Nonnull handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode silo_curl_setopt_off(CURL *_Nonnull handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode silo_curl_setopt_string(CURL *_Nonnull handle, CURLoption option, const char *_Nullable value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode silo_curl_setopt_pointer(CURL *_Nonnull handle, CURLoption option, void *_Nullable value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode silo_curl_setopt_slist(CURL *_Nonnull handle, CURLoption option,
                                              struct curl_slist *_Nullable value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode silo_curl_setopt_write_callback(CURL *_Nonnull handle, CURLoption option,
                                                       curl_write_callback _Nullable value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode silo_curl_setopt_read_callback(CURL *_Nonnull handle, curl_read_callback _Nullable value) {
    return curl_easy_setopt(handle, CURLOPT_READFUNCTION, value);
}

static inline CURLcode silo_curl_setopt_xferinfo_callback(CURL *_Nonnull handle,
                                                          curl_xferinfo_callback _Nullable value) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}

static inline CURLcode silo_curl_getinfo_long(CURL *_Nonnull handle, CURLINFO info, long *_Nonnull value) {
    return curl_easy_getinfo(handle, info, value);
}

/// curl_read_callback's "abort the transfer" return value (a macro, so not imported).
static inline size_t silo_curl_readfunc_abort(void) { return CURL_READFUNC_ABORT; }

#endif
