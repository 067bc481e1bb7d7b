#ifndef CMD5_H
#define CMD5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/// A running MD5: the chaining state, the bytes fed so far, the partial block, and the implementation `cmd5_init`
/// chose for this CPU (0 portable C; 1 also CRC-32C by instruction; 2 also MD5 on AVX-512). A lower level may be set
/// after `cmd5_init` (tests compare the levels); never a higher one.
typedef struct {
    uint32_t state[4];
    uint64_t length;
    uint8_t tail[64];
    int level;
} cmd5_context;

void cmd5_init(cmd5_context *context);
void cmd5_update(cmd5_context *context, const void *data, size_t count);
/// Writes the 16-byte digest; the context must be initialized again before further use.
void cmd5_final(cmd5_context *context, uint8_t digest[16]);

/// `cmd5_update`, and the CRC-32C of the same bytes folded into `*crc` in the same pass (no pre- or post-inversion,
/// as ISA-L's `crc32_iscsi` takes it). Returns false, having done nothing, where the CPU has no CRC-32C instruction.
bool cmd5_update_crc32c(cmd5_context *context, const void *data, size_t count, uint32_t *crc);

#endif
