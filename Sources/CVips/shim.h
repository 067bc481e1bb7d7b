#include <vips/vips.h>

// Fixed-arity wrappers: libvips' optional arguments are C varargs (and VIPS_INIT, G_CALLBACK, g_signal_connect are
// macros), none of which Swift imports.

static inline int silo_vips_init(const char *argv0) { return VIPS_INIT(argv0); }

/// Loaders outside this list are refused before they see a byte: the formats a photo arrives in, none of the
/// document, scientific or scripting formats (SVG, PDF, FITS, MAT, CSV, ...) that widen the attack surface.
static inline void silo_vips_restrict_loaders(void) {
    vips_block_untrusted_set(TRUE);
    vips_operation_block_set("VipsForeignLoad", TRUE);
    vips_operation_block_set("VipsForeignLoadJpeg", FALSE);
    vips_operation_block_set("VipsForeignLoadPng", FALSE);
    vips_operation_block_set("VipsForeignLoadWebp", FALSE);
    vips_operation_block_set("VipsForeignLoadHeif", FALSE);
    vips_operation_block_set("VipsForeignLoadNsgif", FALSE);
}

/// The header only (libvips decodes lazily): dimensions are known before any pixel is decoded.
static inline VipsImage *silo_vips_header(VipsSource *source) {
    return vips_image_new_from_source(
        source, "", "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_ERROR, NULL);
}

/// `crop`: a VipsInteresting (NONE: fit inside); `size`: a VipsSize (FORCE: both dimensions exactly).
static inline VipsImage *silo_vips_thumbnail(VipsSource *source, int width, int height, int crop, int size) {
    VipsImage *out = NULL;
    if (vips_thumbnail_source(
            source, &out, width, "height", height, "crop", crop, "size", size, "fail_on", VIPS_FAIL_ON_ERROR, NULL))
        return NULL;
    return out;
}

/// Encodes to the format `suffix` names (".webp[Q=80,strip]"); the buffer is g_free'd by the caller.
static inline int silo_vips_save(VipsImage *image, const char *suffix, void **buffer, size_t *length) {
    return vips_image_write_to_buffer(image, suffix, buffer, length, NULL);
}

static inline void silo_vips_eval_deadline(VipsImage *image, VipsProgress *progress, void *deadline) {
    (void)progress;
    if (g_get_monotonic_time() > *(gint64 *)deadline) vips_image_set_kill(image, TRUE);
}

/// Kills the evaluation of `image` once the monotonic clock passes `*deadline` (microseconds). `deadline` must
/// outlive the evaluation.
static inline void silo_vips_set_deadline(VipsImage *image, gint64 *deadline) {
    vips_image_set_progress(image, TRUE);
    g_signal_connect(image, "eval", G_CALLBACK(silo_vips_eval_deadline), deadline);
}

static inline int silo_vips_killed(VipsImage *image) { return vips_image_iskilled(image); }

static inline void silo_vips_unref(void *object) { g_object_unref(object); }
