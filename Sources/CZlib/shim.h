#include <zlib.h>
// inflateInit2 is a macro; give Swift a function.
static inline int silo_inflate_init2(z_stream *strm, int window_bits) {
    return inflateInit2(strm, window_bits);
}
static inline int silo_deflate_init2(z_stream *strm, int level, int window_bits) {
    return deflateInit2(strm, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
}
