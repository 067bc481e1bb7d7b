#include "CMD5.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

// MD5 (RFC 1321) written for the latency of its one dependency chain, which is what bounds a single stream: each
// step's sum is built from the terms known early, and the term that needs the newest word (b) is added last. On the
// chain from one word to the next are then only the round function's operations on b, one add, the rotate and the
// add of b: 5, 4, 4 and 5 operations in rounds F, G, H and I. (A compiler reassociates the adds back unless told not
// to; `EARLY` pins the early sum in a register.)

static inline uint32_t rotl32(uint32_t x, int s) { return (x << s) | (x >> (32 - s)); }

static inline uint32_t load_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define EARLY(x) __asm__("" : "+r"(x))

// F(b, c, d) = d ^ (b & (c ^ d)): c ^ d is early.
#define STEP_F(a, b, c, d, x, t, s)      \
    do {                                 \
        a += (x) + (t);                  \
        EARLY(a);                        \
        a += d ^ (b & (c ^ d));          \
        a = rotl32(a, s) + b;            \
    } while (0)
// G(b, c, d) = (b & d) | (c & ~d): the halves never share a bit, so it is their sum, and c & ~d joins the early part.
#define STEP_G(a, b, c, d, x, t, s)      \
    do {                                 \
        a += (x) + (t) + (c & ~d);       \
        EARLY(a);                        \
        a += b & d;                      \
        a = rotl32(a, s) + b;            \
    } while (0)
// H(b, c, d) = b ^ c ^ d: c ^ d is early.
#define STEP_H(a, b, c, d, x, t, s)      \
    do {                                 \
        a += (x) + (t);                  \
        EARLY(a);                        \
        a += b ^ (c ^ d);                \
        a = rotl32(a, s) + b;            \
    } while (0)
// I(b, c, d) = c ^ (b | ~d): ~d is early.
#define STEP_I(a, b, c, d, x, t, s)      \
    do {                                 \
        a += (x) + (t);                  \
        EARLY(a);                        \
        a += c ^ (b | ~d);               \
        a = rotl32(a, s) + b;            \
    } while (0)

// One 64-byte block. The constants are floor(|sin(i + 1)| * 2^32), i = 0...63, as RFC 1321 defines them.
static inline __attribute__((always_inline)) void md5_block(uint32_t state[4], const uint8_t *block) {
    uint32_t m[16];
    for (int i = 0; i < 16; i++) m[i] = load_le32(block + 4 * i);
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    STEP_F(a, b, c, d, m[0], 0xd76aa478, 7);
    STEP_F(d, a, b, c, m[1], 0xe8c7b756, 12);
    STEP_F(c, d, a, b, m[2], 0x242070db, 17);
    STEP_F(b, c, d, a, m[3], 0xc1bdceee, 22);
    STEP_F(a, b, c, d, m[4], 0xf57c0faf, 7);
    STEP_F(d, a, b, c, m[5], 0x4787c62a, 12);
    STEP_F(c, d, a, b, m[6], 0xa8304613, 17);
    STEP_F(b, c, d, a, m[7], 0xfd469501, 22);
    STEP_F(a, b, c, d, m[8], 0x698098d8, 7);
    STEP_F(d, a, b, c, m[9], 0x8b44f7af, 12);
    STEP_F(c, d, a, b, m[10], 0xffff5bb1, 17);
    STEP_F(b, c, d, a, m[11], 0x895cd7be, 22);
    STEP_F(a, b, c, d, m[12], 0x6b901122, 7);
    STEP_F(d, a, b, c, m[13], 0xfd987193, 12);
    STEP_F(c, d, a, b, m[14], 0xa679438e, 17);
    STEP_F(b, c, d, a, m[15], 0x49b40821, 22);
    STEP_G(a, b, c, d, m[1], 0xf61e2562, 5);
    STEP_G(d, a, b, c, m[6], 0xc040b340, 9);
    STEP_G(c, d, a, b, m[11], 0x265e5a51, 14);
    STEP_G(b, c, d, a, m[0], 0xe9b6c7aa, 20);
    STEP_G(a, b, c, d, m[5], 0xd62f105d, 5);
    STEP_G(d, a, b, c, m[10], 0x02441453, 9);
    STEP_G(c, d, a, b, m[15], 0xd8a1e681, 14);
    STEP_G(b, c, d, a, m[4], 0xe7d3fbc8, 20);
    STEP_G(a, b, c, d, m[9], 0x21e1cde6, 5);
    STEP_G(d, a, b, c, m[14], 0xc33707d6, 9);
    STEP_G(c, d, a, b, m[3], 0xf4d50d87, 14);
    STEP_G(b, c, d, a, m[8], 0x455a14ed, 20);
    STEP_G(a, b, c, d, m[13], 0xa9e3e905, 5);
    STEP_G(d, a, b, c, m[2], 0xfcefa3f8, 9);
    STEP_G(c, d, a, b, m[7], 0x676f02d9, 14);
    STEP_G(b, c, d, a, m[12], 0x8d2a4c8a, 20);
    STEP_H(a, b, c, d, m[5], 0xfffa3942, 4);
    STEP_H(d, a, b, c, m[8], 0x8771f681, 11);
    STEP_H(c, d, a, b, m[11], 0x6d9d6122, 16);
    STEP_H(b, c, d, a, m[14], 0xfde5380c, 23);
    STEP_H(a, b, c, d, m[1], 0xa4beea44, 4);
    STEP_H(d, a, b, c, m[4], 0x4bdecfa9, 11);
    STEP_H(c, d, a, b, m[7], 0xf6bb4b60, 16);
    STEP_H(b, c, d, a, m[10], 0xbebfbc70, 23);
    STEP_H(a, b, c, d, m[13], 0x289b7ec6, 4);
    STEP_H(d, a, b, c, m[0], 0xeaa127fa, 11);
    STEP_H(c, d, a, b, m[3], 0xd4ef3085, 16);
    STEP_H(b, c, d, a, m[6], 0x04881d05, 23);
    STEP_H(a, b, c, d, m[9], 0xd9d4d039, 4);
    STEP_H(d, a, b, c, m[12], 0xe6db99e5, 11);
    STEP_H(c, d, a, b, m[15], 0x1fa27cf8, 16);
    STEP_H(b, c, d, a, m[2], 0xc4ac5665, 23);
    STEP_I(a, b, c, d, m[0], 0xf4292244, 6);
    STEP_I(d, a, b, c, m[7], 0x432aff97, 10);
    STEP_I(c, d, a, b, m[14], 0xab9423a7, 15);
    STEP_I(b, c, d, a, m[5], 0xfc93a039, 21);
    STEP_I(a, b, c, d, m[12], 0x655b59c3, 6);
    STEP_I(d, a, b, c, m[3], 0x8f0ccc92, 10);
    STEP_I(c, d, a, b, m[10], 0xffeff47d, 15);
    STEP_I(b, c, d, a, m[1], 0x85845dd1, 21);
    STEP_I(a, b, c, d, m[8], 0x6fa87e4f, 6);
    STEP_I(d, a, b, c, m[15], 0xfe2ce6e0, 10);
    STEP_I(c, d, a, b, m[6], 0xa3014314, 15);
    STEP_I(b, c, d, a, m[13], 0x4e0811a1, 21);
    STEP_I(a, b, c, d, m[4], 0xf7537e82, 6);
    STEP_I(d, a, b, c, m[11], 0xbd3af235, 10);
    STEP_I(c, d, a, b, m[2], 0x2ad7d2bb, 15);
    STEP_I(b, c, d, a, m[9], 0xeb86d391, 21);
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
}

static void md5_blocks(uint32_t state[4], const uint8_t *data, size_t blocks) {
    for (; blocks > 0; blocks--, data += 64) md5_block(state, data);
}

void cmd5_init(cmd5_context *context) {
    context->state[0] = 0x67452301;
    context->state[1] = 0xefcdab89;
    context->state[2] = 0x98badcfe;
    context->state[3] = 0x10325476;
    context->length = 0;
}

// Feeds bytes through the partial block in `context` and `blocks` for whole blocks.
static inline __attribute__((always_inline)) void md5_update(
    cmd5_context *context, const uint8_t *data, size_t count,
    void (*blocks)(uint32_t state[4], const uint8_t *data, size_t blocks, uint32_t *crc), uint32_t *crc) {
    size_t held = (size_t)(context->length % 64);
    context->length += count;
    if (held > 0) {
        size_t take = 64 - held < count ? 64 - held : count;
        memcpy(context->tail + held, data, take);
        data += take;
        count -= take;
        if (held + take < 64) return;
        md5_blocks(context->state, context->tail, 1);
    }
    if (count >= 64) {
        blocks(context->state, data, count / 64, crc);
        data += count / 64 * 64;
        count %= 64;
    }
    memcpy(context->tail, data, count);
}

static void plain_blocks(uint32_t state[4], const uint8_t *data, size_t blocks, uint32_t *crc) {
    (void)crc;
    md5_blocks(state, data, blocks);
}

void cmd5_update(cmd5_context *context, const void *data, size_t count) {
    md5_update(context, data, count, plain_blocks, NULL);
}

void cmd5_final(cmd5_context *context, uint8_t digest[16]) {
    uint64_t bits = context->length * 8;
    uint8_t padding[72] = {0x80};
    size_t held = (size_t)(context->length % 64);
    size_t pad = (held < 56 ? 56 : 120) - held;
    for (int i = 0; i < 8; i++) padding[pad + i] = (uint8_t)(bits >> (8 * i));
    cmd5_update(context, padding, pad + 8);
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++) digest[4 * i + j] = (uint8_t)(context->state[i] >> (8 * j));
    }
}

#if defined(__x86_64__)

// The CRC-32C of a block takes eight crc32 instructions on one chain; issued beside MD5's chain, they fill execution
// slots MD5 leaves idle, so the checksum costs next to nothing and the bytes are read once.
__attribute__((target("sse4.2"))) static void fused_blocks(
    uint32_t state[4], const uint8_t *data, size_t blocks, uint32_t *crc) {
    uint64_t running = *crc;
    for (; blocks > 0; blocks--, data += 64) {
        for (int i = 0; i < 8; i++) {
            uint64_t word;
            memcpy(&word, data + 8 * i, 8);
            running = __builtin_ia32_crc32di(running, word);
        }
        md5_block(state, data);
    }
    *crc = (uint32_t)running;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_bytes(uint32_t crc, const uint8_t *data, size_t count) {
    for (size_t i = 0; i < count; i++) crc = __builtin_ia32_crc32qi(crc, data[i]);
    return crc;
}

__attribute__((target("sse4.2"))) static void fused_update(
    cmd5_context *context, const uint8_t *data, size_t count, uint32_t *crc) {
    // The bytes outside whole blocks of `data` (those completing the held block, and the new tail) byte by byte.
    size_t held = (size_t)(context->length % 64);
    size_t head = held > 0 ? (64 - held < count ? 64 - held : count) : 0;
    size_t whole = (count - head) / 64 * 64;
    *crc = crc32c_bytes(*crc, data, head);
    md5_update(context, data, count, fused_blocks, crc);
    *crc = crc32c_bytes(*crc, data + head + whole, count - head - whole);
}

static int has_sse42(void) {
    unsigned int eax, ebx, ecx, edx;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_SSE4_2);
}

bool cmd5_update_crc32c(cmd5_context *context, const void *data, size_t count, uint32_t *crc) {
    // cpuid is slow (a VM exit under a hypervisor): asked once. Threads that race here store the same answer.
    static atomic_int supported = -1;
    int known = atomic_load_explicit(&supported, memory_order_relaxed);
    if (known < 0) {
        known = has_sse42();
        atomic_store_explicit(&supported, known, memory_order_relaxed);
    }
    if (!known) return false;
    fused_update(context, data, count, crc);
    return true;
}

#else

bool cmd5_update_crc32c(cmd5_context *context, const void *data, size_t count, uint32_t *crc) {
    (void)context, (void)data, (void)count, (void)crc;
    return false;
}

#endif
