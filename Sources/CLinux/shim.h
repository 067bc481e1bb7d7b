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

// accept4 is declared only under _GNU_SOURCE, which the Glibc module is built without; it is in every glibc.
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);

/// accept4 without the peer address (the server does not use it).
static inline int silo_accept4(int fd, int flags) { return accept4(fd, NULL, NULL, flags); }

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
