#include "CMD5.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

// MD5 (RFC 1321) written for the latency of its one dependency chain, which is what bounds a single stream. Each
// step's sum is built from the terms known early, and the term that needs the newest word (b) is added last: on the
// chain from one word to the next are then only the round function's operations on b, one add, the rotate and the
// add of b. A compiler reassociates the adds back unless told not to; `EARLY` pins the early sum in a register.
//
// Three levels, chosen once per process from the CPU (`cmd5_init` records it in the context; tests lower it):
// 0. portable C: 5, 4, 4 and 5 operations on the chain in rounds F, G, H and I;
// 1. the same with CRC-32C folded into the pass by the crc32 instruction (x86-64 with SSE 4.2);
// 2. the words in vector registers, where AVX-512's three-input logic instruction computes any round function in one
//    operation: 4 on the chain in every round; CRC-32C as in 1.

enum { level_portable = 0, level_crc32 = 1, level_avx512 = 2 };

static inline uint32_t rotl32(uint32_t x, int s) { return (x << s) | (x >> (32 - s)); }

static inline uint32_t load_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define EARLY(x) __asm__("" : "+r"(x))

// One step: `early` holds the terms known before the newest word b, `late` the term that needs it.
#define STEP(a, b, x, t, s, early, late) \
    do {                                 \
        a += (x) + (t) + (early);        \
        EARLY(a);                        \
        a += (late);                     \
        a = rotl32(a, s) + b;            \
    } while (0)
// F(b, c, d) = d ^ (b & (c ^ d)): c ^ d is early.
#define STEP_F(a, b, c, d, x, t, s) STEP(a, b, x, t, s, 0, d ^ (b & (c ^ d)))
// G(b, c, d) = (b & d) | (c & ~d): the halves never share a bit, so it is their sum, and c & ~d joins the early part.
#define STEP_G(a, b, c, d, x, t, s) STEP(a, b, x, t, s, c & ~d, b & d)
// H(b, c, d) = b ^ c ^ d: c ^ d is early.
#define STEP_H(a, b, c, d, x, t, s) STEP(a, b, x, t, s, 0, b ^ (c ^ d))
// I(b, c, d) = c ^ (b | ~d): ~d is early.
#define STEP_I(a, b, c, d, x, t, s) STEP(a, b, x, t, s, 0, c ^ (b | ~d))

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

// Level 0 has no CRC-32C of its own: `cmd5_update_crc32c` refuses that level before it gets here.
static void portable_blocks(uint32_t state[4], const uint8_t *data, size_t blocks, uint32_t *crc) {
    (void)crc;
    for (; blocks > 0; blocks--, data += 64) md5_block(state, data);
}

#if defined(__x86_64__)

// Eight crc32 instructions per block, on a chain of their own beside MD5's: they fill execution slots MD5 leaves
// idle, so the checksum costs next to nothing and the bytes are read once.
#define CRC32C_BLOCK(running, block)                                       \
    do {                                                                   \
        for (int i = 0; i < 8; i++) {                                      \
            uint64_t word;                                                 \
            memcpy(&word, (block) + 8 * i, 8);                             \
            running = __builtin_ia32_crc32di(running, word);               \
        }                                                                  \
    } while (0)

__attribute__((target("sse4.2"))) static void crc32_blocks(
    uint32_t state[4], const uint8_t *data, size_t blocks, uint32_t *crc) {
    if (crc == NULL) {
        portable_blocks(state, data, blocks, NULL);
        return;
    }
    uint64_t running = *crc;
    for (; blocks > 0; blocks--, data += 64) {
        CRC32C_BLOCK(running, data);
        md5_block(state, data);
    }
    *crc = (uint32_t)running;
}

// Each word in the first lane of a vector register; the round function is one vpternlogd whose table is its truth
// table over (b, c, d) (bit 4b + 2c + d: F 0xca, G 0xe4, H 0x96, I 0x39), and the rotate is one vprold. K + M of each
// step (the same constants as md5_block's) is added early, like the scalar steps.
#define EARLY_VECTOR(x) __asm__("" : "+v"(x))
#define VECTOR_STEP(a, b, c, d, km, table, s)                              \
    do {                                                                   \
        a = _mm_add_epi32(a, _mm_cvtsi32_si128((int)(km)));                \
        EARLY_VECTOR(a);                                                   \
        a = _mm_add_epi32(a, _mm_ternarylogic_epi32(b, c, d, table));      \
        a = _mm_add_epi32(_mm_rol_epi32(a, s), b);                         \
    } while (0)

#define AVX512 __attribute__((target("avx512f,avx512vl,sse4.2")))

AVX512 static inline __attribute__((always_inline)) void vector_block(
    __m128i *va, __m128i *vb, __m128i *vc, __m128i *vd, const uint8_t *block) {
    uint32_t m[16];
    for (int i = 0; i < 16; i++) m[i] = load_le32(block + 4 * i);
    __m128i a = *va, b = *vb, c = *vc, d = *vd;
    VECTOR_STEP(a, b, c, d, m[0] + 0xd76aa478u, 0xca, 7);
    VECTOR_STEP(d, a, b, c, m[1] + 0xe8c7b756u, 0xca, 12);
    VECTOR_STEP(c, d, a, b, m[2] + 0x242070dbu, 0xca, 17);
    VECTOR_STEP(b, c, d, a, m[3] + 0xc1bdceeeu, 0xca, 22);
    VECTOR_STEP(a, b, c, d, m[4] + 0xf57c0fafu, 0xca, 7);
    VECTOR_STEP(d, a, b, c, m[5] + 0x4787c62au, 0xca, 12);
    VECTOR_STEP(c, d, a, b, m[6] + 0xa8304613u, 0xca, 17);
    VECTOR_STEP(b, c, d, a, m[7] + 0xfd469501u, 0xca, 22);
    VECTOR_STEP(a, b, c, d, m[8] + 0x698098d8u, 0xca, 7);
    VECTOR_STEP(d, a, b, c, m[9] + 0x8b44f7afu, 0xca, 12);
    VECTOR_STEP(c, d, a, b, m[10] + 0xffff5bb1u, 0xca, 17);
    VECTOR_STEP(b, c, d, a, m[11] + 0x895cd7beu, 0xca, 22);
    VECTOR_STEP(a, b, c, d, m[12] + 0x6b901122u, 0xca, 7);
    VECTOR_STEP(d, a, b, c, m[13] + 0xfd987193u, 0xca, 12);
    VECTOR_STEP(c, d, a, b, m[14] + 0xa679438eu, 0xca, 17);
    VECTOR_STEP(b, c, d, a, m[15] + 0x49b40821u, 0xca, 22);
    VECTOR_STEP(a, b, c, d, m[1] + 0xf61e2562u, 0xe4, 5);
    VECTOR_STEP(d, a, b, c, m[6] + 0xc040b340u, 0xe4, 9);
    VECTOR_STEP(c, d, a, b, m[11] + 0x265e5a51u, 0xe4, 14);
    VECTOR_STEP(b, c, d, a, m[0] + 0xe9b6c7aau, 0xe4, 20);
    VECTOR_STEP(a, b, c, d, m[5] + 0xd62f105du, 0xe4, 5);
    VECTOR_STEP(d, a, b, c, m[10] + 0x02441453u, 0xe4, 9);
    VECTOR_STEP(c, d, a, b, m[15] + 0xd8a1e681u, 0xe4, 14);
    VECTOR_STEP(b, c, d, a, m[4] + 0xe7d3fbc8u, 0xe4, 20);
    VECTOR_STEP(a, b, c, d, m[9] + 0x21e1cde6u, 0xe4, 5);
    VECTOR_STEP(d, a, b, c, m[14] + 0xc33707d6u, 0xe4, 9);
    VECTOR_STEP(c, d, a, b, m[3] + 0xf4d50d87u, 0xe4, 14);
    VECTOR_STEP(b, c, d, a, m[8] + 0x455a14edu, 0xe4, 20);
    VECTOR_STEP(a, b, c, d, m[13] + 0xa9e3e905u, 0xe4, 5);
    VECTOR_STEP(d, a, b, c, m[2] + 0xfcefa3f8u, 0xe4, 9);
    VECTOR_STEP(c, d, a, b, m[7] + 0x676f02d9u, 0xe4, 14);
    VECTOR_STEP(b, c, d, a, m[12] + 0x8d2a4c8au, 0xe4, 20);
    VECTOR_STEP(a, b, c, d, m[5] + 0xfffa3942u, 0x96, 4);
    VECTOR_STEP(d, a, b, c, m[8] + 0x8771f681u, 0x96, 11);
    VECTOR_STEP(c, d, a, b, m[11] + 0x6d9d6122u, 0x96, 16);
    VECTOR_STEP(b, c, d, a, m[14] + 0xfde5380cu, 0x96, 23);
    VECTOR_STEP(a, b, c, d, m[1] + 0xa4beea44u, 0x96, 4);
    VECTOR_STEP(d, a, b, c, m[4] + 0x4bdecfa9u, 0x96, 11);
    VECTOR_STEP(c, d, a, b, m[7] + 0xf6bb4b60u, 0x96, 16);
    VECTOR_STEP(b, c, d, a, m[10] + 0xbebfbc70u, 0x96, 23);
    VECTOR_STEP(a, b, c, d, m[13] + 0x289b7ec6u, 0x96, 4);
    VECTOR_STEP(d, a, b, c, m[0] + 0xeaa127fau, 0x96, 11);
    VECTOR_STEP(c, d, a, b, m[3] + 0xd4ef3085u, 0x96, 16);
    VECTOR_STEP(b, c, d, a, m[6] + 0x04881d05u, 0x96, 23);
    VECTOR_STEP(a, b, c, d, m[9] + 0xd9d4d039u, 0x96, 4);
    VECTOR_STEP(d, a, b, c, m[12] + 0xe6db99e5u, 0x96, 11);
    VECTOR_STEP(c, d, a, b, m[15] + 0x1fa27cf8u, 0x96, 16);
    VECTOR_STEP(b, c, d, a, m[2] + 0xc4ac5665u, 0x96, 23);
    VECTOR_STEP(a, b, c, d, m[0] + 0xf4292244u, 0x39, 6);
    VECTOR_STEP(d, a, b, c, m[7] + 0x432aff97u, 0x39, 10);
    VECTOR_STEP(c, d, a, b, m[14] + 0xab9423a7u, 0x39, 15);
    VECTOR_STEP(b, c, d, a, m[5] + 0xfc93a039u, 0x39, 21);
    VECTOR_STEP(a, b, c, d, m[12] + 0x655b59c3u, 0x39, 6);
    VECTOR_STEP(d, a, b, c, m[3] + 0x8f0ccc92u, 0x39, 10);
    VECTOR_STEP(c, d, a, b, m[10] + 0xffeff47du, 0x39, 15);
    VECTOR_STEP(b, c, d, a, m[1] + 0x85845dd1u, 0x39, 21);
    VECTOR_STEP(a, b, c, d, m[8] + 0x6fa87e4fu, 0x39, 6);
    VECTOR_STEP(d, a, b, c, m[15] + 0xfe2ce6e0u, 0x39, 10);
    VECTOR_STEP(c, d, a, b, m[6] + 0xa3014314u, 0x39, 15);
    VECTOR_STEP(b, c, d, a, m[13] + 0x4e0811a1u, 0x39, 21);
    VECTOR_STEP(a, b, c, d, m[4] + 0xf7537e82u, 0x39, 6);
    VECTOR_STEP(d, a, b, c, m[11] + 0xbd3af235u, 0x39, 10);
    VECTOR_STEP(c, d, a, b, m[2] + 0x2ad7d2bbu, 0x39, 15);
    VECTOR_STEP(b, c, d, a, m[9] + 0xeb86d391u, 0x39, 21);
    *va = _mm_add_epi32(*va, a);
    *vb = _mm_add_epi32(*vb, b);
    *vc = _mm_add_epi32(*vc, c);
    *vd = _mm_add_epi32(*vd, d);
}

AVX512 static void avx512_blocks(uint32_t state[4], const uint8_t *data, size_t blocks, uint32_t *crc) {
    __m128i a = _mm_cvtsi32_si128((int)state[0]), b = _mm_cvtsi32_si128((int)state[1]);
    __m128i c = _mm_cvtsi32_si128((int)state[2]), d = _mm_cvtsi32_si128((int)state[3]);
    if (crc != NULL) {
        uint64_t running = *crc;
        for (; blocks > 0; blocks--, data += 64) {
            CRC32C_BLOCK(running, data);
            vector_block(&a, &b, &c, &d, data);
        }
        *crc = (uint32_t)running;
    } else {
        for (; blocks > 0; blocks--, data += 64) vector_block(&a, &b, &c, &d, data);
    }
    state[0] = (uint32_t)_mm_cvtsi128_si32(a);
    state[1] = (uint32_t)_mm_cvtsi128_si32(b);
    state[2] = (uint32_t)_mm_cvtsi128_si32(c);
    state[3] = (uint32_t)_mm_cvtsi128_si32(d);
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_bytes(uint32_t crc, const uint8_t *data, size_t count) {
    for (size_t i = 0; i < count; i++) crc = __builtin_ia32_crc32qi(crc, data[i]);
    return crc;
}

static int detect_level(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_SSE4_2)) return level_portable;
    int osxsave = (ecx & bit_OSXSAVE) != 0;
    if (!osxsave || !__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return level_crc32;
    if (!(ebx & bit_AVX512F) || !(ebx & bit_AVX512VL)) return level_crc32;
    // The system must save the vector and mask registers across context switches (XCR0: SSE, AVX, opmask, the upper
    // halves of zmm0-15 and zmm16-31).
    uint32_t low, high;
    __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    return (low & 0xe6) == 0xe6 ? level_avx512 : level_crc32;
}

#else

static int detect_level(void) { return level_portable; }

#endif

// MD5 of whole blocks, and their CRC-32C folded into `*crc`; MD5 alone when `crc` is NULL (a block completed from
// held bytes, whose CRC-32C was taken when they arrived).
typedef void (*blocks_function)(uint32_t state[4], const uint8_t *data, size_t blocks, uint32_t *crc);
// CRC-32C of bytes outside whole blocks.
typedef uint32_t (*bytes_function)(uint32_t crc, const uint8_t *data, size_t count);

static blocks_function blocks_at(int level) {
#if defined(__x86_64__)
    if (level >= level_avx512) return avx512_blocks;
    if (level >= level_crc32) return crc32_blocks;
#endif
    (void)level;
    return portable_blocks;
}

void cmd5_init(cmd5_context *context) {
    // cpuid is slow (a VM exit under a hypervisor): asked once. Threads that race here store the same answer.
    static atomic_int detected = -1;
    int level = atomic_load_explicit(&detected, memory_order_relaxed);
    if (level < 0) {
        level = detect_level();
        atomic_store_explicit(&detected, level, memory_order_relaxed);
    }
    context->state[0] = 0x67452301;
    context->state[1] = 0xefcdab89;
    context->state[2] = 0x98badcfe;
    context->state[3] = 0x10325476;
    context->length = 0;
    context->level = level;
}

// Feeds bytes through the partial block in `context`, and whole blocks of `data` to `blocks`. With `crc`, every
// byte is folded into it in order, as it arrives: whole blocks by `blocks`, the rest by `bytes` (the checksum can
// be read mid-stream, so held bytes cannot wait for their block).
static void md5_update(
    cmd5_context *context, const uint8_t *data, size_t count, blocks_function blocks, bytes_function bytes,
    uint32_t *crc) {
    size_t held = (size_t)(context->length % 64);
    context->length += count;
    if (held > 0) {
        size_t take = 64 - held < count ? 64 - held : count;
        if (crc != NULL) *crc = bytes(*crc, data, take);
        memcpy(context->tail + held, data, take);
        data += take;
        count -= take;
        if (held + take < 64) return;
        blocks(context->state, context->tail, 1, NULL);
    }
    if (count >= 64) {
        blocks(context->state, data, count / 64, crc);
        data += count / 64 * 64;
        count %= 64;
    }
    if (crc != NULL) *crc = bytes(*crc, data, count);
    memcpy(context->tail, data, count);
}

void cmd5_update(cmd5_context *context, const void *data, size_t count) {
    md5_update(context, data, count, blocks_at(context->level), NULL, NULL);
}

bool cmd5_update_crc32c(cmd5_context *context, const void *data, size_t count, uint32_t *crc) {
#if defined(__x86_64__)
    if (context->level < level_crc32) return false;
    md5_update(context, data, count, blocks_at(context->level), crc32c_bytes, crc);
    return true;
#else
    (void)context, (void)data, (void)count, (void)crc;
    return false;
#endif
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
