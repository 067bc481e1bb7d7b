#include <stdint.h>

// sync_file_range(2) is declared by <fcntl.h> only under _GNU_SOURCE, which Swift's Glibc module is not built with;
// the symbol itself is in libc. The prototype matches glibc's (off64_t offsets).
int sync_file_range(int fd, int64_t offset, int64_t nbytes, unsigned int flags);

// SYNC_FILE_RANGE_WRITE: start writeback of the dirty pages in the range, do not wait for it.
static inline unsigned int silo_sync_file_range_write(void) { return 2; }
