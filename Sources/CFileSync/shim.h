#include <stdint.h>

// sync_file_range(2) is declared by <fcntl.h> only under _GNU_SOURCE, which Swift's Glibc module is not built with;
// the symbol itself is in libc. The prototype matches glibc's (off64_t offsets).
int sync_file_range(int fd, int64_t offset, int64_t nbytes, unsigned int flags);

// SYNC_FILE_RANGE_WRITE: start writeback of the dirty pages in the range, do not wait for it.
static inline unsigned int silo_sync_file_range_write(void) { return 2; }

// copy_file_range(2), likewise declared only under _GNU_SOURCE (glibc 2.27+; off64_t offsets). ssize_t and size_t
// are spelled as the LP64 types they are, so this header needs no system header whose types would then be seen
// through this module.
long copy_file_range(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out, unsigned long len, unsigned int flags);

// O_DIRECT, likewise hidden behind _GNU_SOURCE. Its value differs by architecture; 0 where it is not known here,
// which the caller treats as "no direct I/O".
static inline int silo_o_direct(void) {
#if defined(__x86_64__) || defined(__i386__)
    return 040000;
#elif defined(__aarch64__) || defined(__arm__)
    return 0200000;
#else
    return 0;
#endif
}
