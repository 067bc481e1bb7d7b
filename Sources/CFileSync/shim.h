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
