#ifndef SILO_CMICROHTTPD_SHIM_H
#define SILO_CMICROHTTPD_SHIM_H

// Fixed-arity wrappers around the variadic parts of libmicrohttpd 0.9.75, which Swift cannot import
// (MHD_start_daemon, MHD_get_daemon_info). Only SiloMicroHTTPD imports this module.

#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>
#include "../CSocketAddress/socket_address.h"

/// The URI log callback's shape (MHD passes it through varargs, so the header has no typedef for it).
typedef void *_Nullable (*silo_mhd_uri_log_callback)(void *_Nullable cls, const char *_Nullable uri,
                                                      struct MHD_Connection *_Nullable connection);

/// Everything MHD_start_daemon needs from us. Zero means "MHD's default" for the numeric limits.
typedef struct silo_mhd_start_options {
    const char *_Nonnull host;        // numeric IPv4 or IPv6 address, e.g. "127.0.0.1", "::1", "0.0.0.0", "::"
    uint16_t port;                    // 0 = ephemeral
    unsigned int extra_flags;         // OR-ed into the daemon flags (e.g. MHD_USE_ERROR_LOG)
    MHD_AccessHandlerCallback _Nullable access_handler;
    void *_Nullable access_handler_cls;
    MHD_RequestCompletedCallback _Nullable completed;
    void *_Nullable completed_cls;
    silo_mhd_uri_log_callback _Nullable uri_log;
    void *_Nullable uri_log_cls;
    unsigned int thread_pool_size;
    size_t connection_memory_limit;
    unsigned int connection_limit;
    unsigned int connection_timeout_seconds;
    unsigned int listen_backlog;
    unsigned int per_ip_connection_limit;
} silo_mhd_start_options;

/// Why silo_mhd_start failed.
enum {
    SILO_MHD_START_OK = 0,
    SILO_MHD_START_BAD_ADDRESS = 1, // host is not a numeric IPv4/IPv6 address
    SILO_MHD_START_BIND = 2,        // a probe bind of the same address failed; errno_out holds its errno
    SILO_MHD_START_OTHER = 3,       // MHD refused for another reason (enable the error log to see it)
};

/// Leaves the URL exactly as sent: object names carry %2F, which must survive to the router.
static inline size_t silo_mhd_unescape_nothing(void *_Nullable cls, struct MHD_Connection *_Nullable c,
                                               char *_Nonnull s) {
    (void) cls;
    (void) c;
    return strlen(s);
}

/// Fills `storage` from a numeric host and port; returns the address family or 0 if host is not numeric.
static inline int silo_mhd_make_address(const char *_Nonnull host, uint16_t port,
                                        struct sockaddr_storage *_Nonnull storage, socklen_t *_Nonnull length) {
    memset(storage, 0, sizeof(*storage));
    struct sockaddr_in *v4 = (struct sockaddr_in *) storage;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        *length = sizeof(*v4);
        return AF_INET;
    }
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *) storage;
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        *length = sizeof(*v6);
        return AF_INET6;
    }
    return 0;
}

/// MHD does not report why binding failed, so after a failed start we bind the same address ourselves
/// (with SO_REUSEADDR, as MHD does) to recover the errno. Returns 0 if the probe bind succeeds.
static inline int silo_mhd_probe_bind(const struct sockaddr_storage *_Nonnull address, socklen_t length) {
    int fd = socket(address->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    int on = 1;
    (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (address->ss_family == AF_INET6) (void) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
    int result = bind(fd, (const struct sockaddr *) address, length) == 0 ? 0 : errno;
    close(fd);
    return result;
}

/// Starts a daemon with an internal epoll thread pool, bound to host:port. Returns NULL on failure with
/// *failure set to one of SILO_MHD_START_* and *errno_out to the probe's errno where known.
static inline struct MHD_Daemon *_Nullable silo_mhd_start(const silo_mhd_start_options *_Nonnull o,
                                                          int *_Nonnull failure, int *_Nonnull errno_out) {
    struct sockaddr_storage address;
    socklen_t length = 0;
    *failure = SILO_MHD_START_OK;
    *errno_out = 0;
    int family = silo_mhd_make_address(o->host, o->port, &address, &length);
    if (family == 0) {
        *failure = SILO_MHD_START_BAD_ADDRESS;
        return NULL;
    }
    // ITC is required for MHD_quiesce_daemon with an internal polling thread.
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | o->extra_flags;
    if (family == AF_INET6) flags |= MHD_USE_IPv6;
    // MHD_OPTION_ARRAY ends at the first MHD_OPTION_END; optional limits are appended only when set (0 = default).
    struct MHD_OptionItem options[11];
    int n = 0;
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t) o->completed, o->completed_cls};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t) o->uri_log, o->uri_log_cls};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t) &silo_mhd_unescape_nothing, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &address};
    if (o->thread_pool_size > 1)
        options[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, o->thread_pool_size, NULL};
    if (o->connection_memory_limit > 0)
        options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                               (intptr_t) o->connection_memory_limit, NULL};
    if (o->connection_limit > 0)
        options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, o->connection_limit, NULL};
    if (o->connection_timeout_seconds > 0)
        options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, o->connection_timeout_seconds, NULL};
    if (o->listen_backlog > 0)
        options[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE, o->listen_backlog, NULL};
    if (o->per_ip_connection_limit > 0)
        options[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->per_ip_connection_limit, NULL};
    options[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

    struct MHD_Daemon *daemon = MHD_start_daemon(flags, o->port, NULL, NULL, o->access_handler,
                                                 o->access_handler_cls, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
    if (daemon == NULL) {
        int probe = silo_mhd_probe_bind(&address, length);
        *failure = probe != 0 ? SILO_MHD_START_BIND : SILO_MHD_START_OTHER;
        *errno_out = probe;
    }
    return daemon;
}

/// The client's address as 16 bytes (IPv4 as ::ffff:a.b.c.d); all zero when unknown.
static inline void silo_mhd_client_address(struct MHD_Connection *_Nonnull connection, uint8_t *_Nonnull peer) {
    uint16_t port;
    memset(peer, 0, 16);
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return;
    (void) silo_socket_address(info->client_addr, peer, &port);
}

/// The local end of the connection's socket, as ``silo_local_address`` gives it; -1 when it cannot be told.
static inline int silo_mhd_local_address(
    struct MHD_Connection *_Nonnull connection, uint8_t *_Nonnull address, uint16_t *_Nonnull port) {
    memset(address, 0, 16);
    *port = 0;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info == NULL) return -1;
    return silo_local_address(info->connect_fd, address, port);
}

/// The port the daemon's listen socket is bound to (useful after binding port 0); 0 if unknown.
static inline uint16_t silo_mhd_bound_port(struct MHD_Daemon *_Nonnull daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// Whether the client has closed its side with nothing left to read. libmicrohttpd 0.9.75 in edge-triggered
/// epoll mode misses a FIN that arrives together with the last body bytes (a short read clears its read-ready
/// flag and no new edge follows), so a client that disconnects mid-upload would only be noticed at the
/// connection timeout. Peeking after each body chunk closes that window: a FIN arriving later raises a new edge.
static inline int silo_mhd_peer_has_closed(struct MHD_Connection *_Nonnull connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info == NULL) return 0;
    char byte;
    ssize_t n;
    do {
        n = recv(info->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/// Resets the connection (a staged fault of `silo serve --test-faults`): connect() with AF_UNSPEC disconnects a TCP
/// socket, and Linux sends RST for an established one. SO_LINGER 0 alone is not enough here: libmicrohttpd shuts the
/// write side down (a FIN) before it closes. The caller then returns MHD_NO, and libmicrohttpd closes the socket.
static inline void silo_mhd_reset_connection(struct MHD_Connection *_Nonnull connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info == NULL) return;
    struct sockaddr unspecified;
    memset(&unspecified, 0, sizeof unspecified);
    unspecified.sa_family = AF_UNSPEC;
    (void)connect(info->connect_fd, &unspecified, sizeof unspecified);
}

/// Marks a response as HTTP/1.0's: no chunked framing, so a body of unknown length ends with the connection. For a
/// HEAD of unknown length: libmicrohttpd 0.9.75 sends a chunked answer's last chunk even to a HEAD, which the client
/// would read as the start of the next response.
static inline enum MHD_Result silo_mhd_http_1_0_response(struct MHD_Response *_Nonnull response) {
    return MHD_set_response_options(response, MHD_RF_HTTP_1_0_SERVER, MHD_RO_END);
}

#endif
