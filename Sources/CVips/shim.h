#include <dlfcn.h>
#include <stdio.h>
#include <vips/vips.h>

// libvips is opened at run time (dlopen), not linked: it brings about a hundred libraries of its own (OpenEXR, HDF5,
// librsvg, poppler's dependencies, ...), and a server without `--images` should neither map them nor need them
// installed. Its headers give the types; `SiloVips` holds the functions, found once by `silo_vips_open`, and every
// wrapper below takes it. glib and GObject (small, and the headers' own) stay linked.
//
// Fixed-arity wrappers: libvips' optional arguments are C varargs (and G_CALLBACK, g_signal_connect are macros),
// none of which Swift imports.

typedef struct {
    int (*init)(const char *argv0);
    void (*block_untrusted_set)(gboolean state);
    void (*operation_block_set)(const char *name, gboolean state);
    VipsImage *(*image_new_from_source)(VipsSource *source, const char *option_string, ...);
    int (*thumbnail_source)(VipsSource *source, VipsImage **out, int width, ...);
    int (*image_write_to_buffer)(VipsImage *in, const char *suffix, void **buf, size_t *size, ...);
    void (*image_set_progress)(VipsImage *image, gboolean progress);
    void (*image_set_kill)(VipsImage *image, gboolean kill);
    gboolean (*image_iskilled)(VipsImage *image);
    char *(*error_buffer_copy)(void);
    void (*concurrency_set)(int concurrency);
    void (*cache_set_max)(int max);
    void (*cache_set_max_mem)(size_t max_mem);
    void (*cache_set_max_files)(int max_files);
    VipsSource *(*source_new_from_descriptor)(int descriptor);
    VipsSource *(*source_new_from_blob)(VipsBlob *blob);
    VipsBlob *(*blob_copy)(const void *data, size_t length);
    void (*area_unref)(VipsArea *area);
    int (*image_get_width)(const VipsImage *image);
    int (*image_get_height)(const VipsImage *image);
    int (*image_get_bands)(const VipsImage *image);
    VipsBandFormat (*image_get_format)(const VipsImage *image);
    guint64 (*format_sizeof)(VipsBandFormat format);
    int (*image_get_string)(const VipsImage *image, const char *name, const char **out);
    int (*image_get_int)(const VipsImage *image, const char *name, int *out);
    GType (*image_get_typeof)(const VipsImage *image, const char *name);
} SiloVips;

/// Opens `library` and fills `api`. Returns the dlopen handle, or NULL with the reason in `error` (NUL-terminated).
static inline void *silo_vips_open(const char *library, SiloVips *api, char *error, size_t error_size) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(error, error_size, "%s", dlerror());
        return NULL;
    }
#define SILO_VIPS_FIND(field, symbol)                                                                                \
    if (!(*(void **)&api->field = dlsym(handle, symbol))) {                                                           \
        snprintf(error, error_size, "%s has no %s", library, symbol);                                                \
        dlclose(handle);                                                                                             \
        return NULL;                                                                                                 \
    }
    SILO_VIPS_FIND(init, "vips_init")
    SILO_VIPS_FIND(block_untrusted_set, "vips_block_untrusted_set")
    SILO_VIPS_FIND(operation_block_set, "vips_operation_block_set")
    SILO_VIPS_FIND(image_new_from_source, "vips_image_new_from_source")
    SILO_VIPS_FIND(thumbnail_source, "vips_thumbnail_source")
    SILO_VIPS_FIND(image_write_to_buffer, "vips_image_write_to_buffer")
    SILO_VIPS_FIND(image_set_progress, "vips_image_set_progress")
    SILO_VIPS_FIND(image_set_kill, "vips_image_set_kill")
    SILO_VIPS_FIND(image_iskilled, "vips_image_iskilled")
    SILO_VIPS_FIND(error_buffer_copy, "vips_error_buffer_copy")
    SILO_VIPS_FIND(concurrency_set, "vips_concurrency_set")
    SILO_VIPS_FIND(cache_set_max, "vips_cache_set_max")
    SILO_VIPS_FIND(cache_set_max_mem, "vips_cache_set_max_mem")
    SILO_VIPS_FIND(cache_set_max_files, "vips_cache_set_max_files")
    SILO_VIPS_FIND(source_new_from_descriptor, "vips_source_new_from_descriptor")
    SILO_VIPS_FIND(source_new_from_blob, "vips_source_new_from_blob")
    SILO_VIPS_FIND(blob_copy, "vips_blob_copy")
    SILO_VIPS_FIND(area_unref, "vips_area_unref")
    SILO_VIPS_FIND(image_get_width, "vips_image_get_width")
    SILO_VIPS_FIND(image_get_height, "vips_image_get_height")
    SILO_VIPS_FIND(image_get_bands, "vips_image_get_bands")
    SILO_VIPS_FIND(image_get_format, "vips_image_get_format")
    SILO_VIPS_FIND(format_sizeof, "vips_format_sizeof")
    SILO_VIPS_FIND(image_get_string, "vips_image_get_string")
    SILO_VIPS_FIND(image_get_int, "vips_image_get_int")
    SILO_VIPS_FIND(image_get_typeof, "vips_image_get_typeof")
#undef SILO_VIPS_FIND
    return handle;
}

static inline void silo_vips_close(void *handle) { dlclose(handle); }

static inline int silo_vips_init(const SiloVips *api, const char *argv0) { return api->init(argv0); }

/// Loaders outside this list are refused before they see a byte: the formats a photo arrives in, none of the
/// document, scientific or scripting formats (SVG, PDF, FITS, MAT, CSV, ...) that widen the attack surface.
static inline void silo_vips_restrict_loaders(const SiloVips *api) {
    api->block_untrusted_set(TRUE);
    api->operation_block_set("VipsForeignLoad", TRUE);
    api->operation_block_set("VipsForeignLoadJpeg", FALSE);
    api->operation_block_set("VipsForeignLoadPng", FALSE);
    api->operation_block_set("VipsForeignLoadWebp", FALSE);
    api->operation_block_set("VipsForeignLoadHeif", FALSE);
    api->operation_block_set("VipsForeignLoadNsgif", FALSE);
}

/// No operation cache (see VipsRuntime), and at least one worker thread per image.
static inline void silo_vips_configure(const SiloVips *api, int threads_per_image) {
    api->cache_set_max(0);
    api->cache_set_max_mem(0);
    api->cache_set_max_files(0);
    api->concurrency_set(threads_per_image);
}

/// The messages libvips has gathered since the last call (its error buffer is global), cleared; g_free'd by the
/// caller.
static inline char *silo_vips_error_copy(const SiloVips *api) { return api->error_buffer_copy(); }

static inline VipsSource *silo_vips_source_from_descriptor(const SiloVips *api, int fd) {
    return api->source_new_from_descriptor(fd);
}

/// A source over a copy of `length` bytes at `data` (libvips owns the copy).
static inline VipsSource *silo_vips_source_from_copy(const SiloVips *api, const void *data, size_t length) {
    VipsBlob *blob = api->blob_copy(data, length);
    if (!blob) return NULL;
    VipsSource *source = api->source_new_from_blob(blob);
    api->area_unref((VipsArea *)blob);
    return source;
}

/// The header only (libvips decodes lazily): dimensions are known before any pixel is decoded.
static inline VipsImage *silo_vips_header(const SiloVips *api, VipsSource *source) {
    return api->image_new_from_source(
        source, "", "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_ERROR, NULL);
}

static inline int silo_vips_width(const SiloVips *api, VipsImage *image) { return api->image_get_width(image); }
static inline int silo_vips_height(const SiloVips *api, VipsImage *image) { return api->image_get_height(image); }
static inline int silo_vips_bands(const SiloVips *api, VipsImage *image) { return api->image_get_bands(image); }

/// Bytes per band of a pixel (1 for 8-bit images, 2 for 16-bit PNGs, ...).
static inline int silo_vips_bytes_per_band(const SiloVips *api, VipsImage *image) {
    return (int)api->format_sizeof(api->image_get_format(image));
}

/// The loader that read the header ("jpegload_source", "heifload_source", ...), NULL if none is recorded.
static inline const char *silo_vips_loader(const SiloVips *api, VipsImage *image) {
    const char *loader = NULL;
    if (!api->image_get_typeof(image, "vips-loader")) return NULL;
    return api->image_get_string(image, "vips-loader", &loader) == 0 ? loader : NULL;
}

/// Whether the loader recorded the image as interlaced (Adam7 PNG, progressive JPEG): decoded whole, not by lines.
static inline int silo_vips_interlaced(const SiloVips *api, VipsImage *image) {
    int interlaced = 0;
    // Asked only when present: a missing field would leave a message in libvips' global error buffer.
    if (!api->image_get_typeof(image, "interlaced")) return 0;
    return api->image_get_int(image, "interlaced", &interlaced) == 0 && interlaced;
}

/// `crop`: a VipsInteresting (NONE: fit inside); `size`: a VipsSize (FORCE: both dimensions exactly).
static inline VipsImage *silo_vips_thumbnail(
    const SiloVips *api, VipsSource *source, int width, int height, int crop, int size) {
    VipsImage *out = NULL;
    if (api->thumbnail_source(
            source, &out, width, "height", height, "crop", crop, "size", size, "fail_on", VIPS_FAIL_ON_ERROR, NULL))
        return NULL;
    return out;
}

/// Encodes to the format `suffix` names (".webp[Q=80,strip]"); the buffer is g_free'd by the caller.
static inline int silo_vips_save(
    const SiloVips *api, VipsImage *image, const char *suffix, void **buffer, size_t *length) {
    return api->image_write_to_buffer(image, suffix, buffer, length, NULL);
}

/// What the eval callback reads: when to stop, and the library to stop it with.
typedef struct {
    gint64 deadline;
    const SiloVips *api;
} SiloVipsDeadline;

static inline void silo_vips_eval_deadline(VipsImage *image, VipsProgress *progress, void *data) {
    (void)progress;
    const SiloVipsDeadline *deadline = (const SiloVipsDeadline *)data;
    if (g_get_monotonic_time() > deadline->deadline) deadline->api->image_set_kill(image, TRUE);
}

/// Kills the evaluation of `image` once the monotonic clock passes `deadline->deadline` (microseconds). `deadline`
/// must outlive the evaluation.
static inline void silo_vips_set_deadline(VipsImage *image, SiloVipsDeadline *deadline) {
    deadline->api->image_set_progress(image, TRUE);
    g_signal_connect(image, "eval", G_CALLBACK(silo_vips_eval_deadline), deadline);
}

static inline int silo_vips_killed(const SiloVips *api, VipsImage *image) { return api->image_iskilled(image); }

static inline void silo_vips_unref(void *object) { g_object_unref(object); }
