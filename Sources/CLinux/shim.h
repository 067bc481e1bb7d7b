// The Linux system calls SiloEpollHTTP needs that Swift's Glibc module does not export (epoll, eventfd,
// sendfile). Header-only: everything lives in libc, so nothing extra is linked.
#ifndef SILO_CLINUX_SHIM_H
#define SILO_CLINUX_SHIM_H

#ifdef __linux__
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "socket_address.h"

/// How many CPUs this thread may run on (its affinity mask: `taskset`, cpusets), at least 1. The raw system call,
/// because glibc's CPU_COUNT needs _GNU_SOURCE.
static inline int silo_available_cpus(void) {
    uint64_t mask[16];
    memset(mask, 0, sizeof(mask));
    long bytes = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
    if (bytes <= 0) return 1;
    int count = 0;
    for (long index = 0; index < bytes / 8; index++) count += __builtin_popcountll(mask[index]);
    return count > 0 ? count : 1;
}

/// Names the calling thread (at most 15 bytes are kept) for top -H, perf and /proc: Swift cannot call the variadic
/// prctl, and pthread_setname_np needs _GNU_SOURCE.
static inline void silo_name_this_thread(const char *_Nonnull name) {
    prctl(PR_SET_NAME, (unsigned long) name, 0UL, 0UL, 0UL);
}

/// Gives free heap memory back to the kernel, in every arena (glibc's malloc_trim, from <malloc.h>, which the Glibc
/// module does not include): free() returns a small block to its arena, and the arena keeps the pages.
extern int malloc_trim(size_t pad);
static inline void silo_release_free_heap(void) { (void) malloc_trim(0); }

// accept4 is declared only under _GNU_SOURCE, which the Glibc module is built without; it is in every glibc.
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);

/// accept4 that also writes the peer's address into `peer` as 16 bytes, IPv4 as an IPv4-mapped IPv6 address
/// (::ffff:a.b.c.d); all zero when the family is neither (per-client connection limits key on it).
static inline int silo_accept4_peer(int fd, int flags, uint8_t *_Nonnull peer) {
    struct sockaddr_storage storage;
    socklen_t length = sizeof(storage);
    int connection = accept4(fd, (struct sockaddr *) &storage, &length, flags);
    uint16_t port;
    memset(peer, 0, 16);
    if (connection >= 0) (void) silo_socket_address((const struct sockaddr *) &storage, peer, &port);
    return connection;
}

// epoll_event is packed on x86_64; these keep Swift away from its layout.
static inline int silo_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event;
    event.events = events;
    event.data.u64 = token;
    return epoll_ctl(epfd, op, fd, &event);
}

static inline uint32_t silo_epoll_event_events(const struct epoll_event *_Nonnull events, int index) {
    return events[index].events;
}

static inline uint64_t silo_epoll_event_token(const struct epoll_event *_Nonnull events, int index) {
    return events[index].data.u64;
}
#endif

#endif
