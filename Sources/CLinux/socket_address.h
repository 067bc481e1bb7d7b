// Socket addresses as the transport keys and compares them: 16 bytes, IPv4 as an IPv4-mapped IPv6 address
// (::ffff:a.b.c.d), and a port (included by shim.h).
#ifndef SILO_SOCKET_ADDRESS_H
#define SILO_SOCKET_ADDRESS_H

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

/// `address` into `bytes` (16) and `port`; -1, with both zero, for a family other than IPv4 and IPv6.
static inline int silo_socket_address(
    const struct sockaddr *_Nonnull address, uint8_t *_Nonnull bytes, uint16_t *_Nonnull port) {
    memset(bytes, 0, 16);
    *port = 0;
    if (address->sa_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *) address;
        bytes[10] = 0xff;
        bytes[11] = 0xff;
        memcpy(bytes + 12, &v4->sin_addr, 4);
        *port = ntohs(v4->sin_port);
        return 0;
    }
    if (address->sa_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *) address;
        memcpy(bytes, &v6->sin6_addr, 16);
        *port = ntohs(v6->sin6_port);
        return 0;
    }
    return -1;
}

/// The local end of the socket `fd` (getsockname), as ``silo_socket_address`` gives it; -1 when it cannot be told.
static inline int silo_local_address(int fd, uint8_t *_Nonnull bytes, uint16_t *_Nonnull port) {
    struct sockaddr_storage storage;
    socklen_t length = sizeof(storage);
    memset(bytes, 0, 16);
    *port = 0;
    if (getsockname(fd, (struct sockaddr *) &storage, &length) != 0) return -1;
    return silo_socket_address((const struct sockaddr *) &storage, bytes, port);
}

#endif
