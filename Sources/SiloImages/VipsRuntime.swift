internal import CVips
import SiloCore

/// libvips' process-wide state, set up once: `vips_init`, the loaders allowed, and bounds on its own threads and
/// caches.
enum VipsRuntime {
    /// The result of the one `vips_init`; later calls see the same outcome. (A `static let` is initialized once,
    /// thread-safely, by the runtime.)
    private static let started: Result<Void, StorageError> = {
        guard silo_vips_init("silo") == 0 else {
            return .failure(StorageError(.internalError, "libvips did not start: \(VipsRuntime.takeError())"))
        }
        silo_vips_restrict_loaders()
        // No operation cache: every transform reads a source made for its request, so a cached operation could
        // never be hit again and would only keep that source (a descriptor or a copy of the bytes) alive. Repeated
        // requests are answered from the server's own disk cache of results.
        vips_cache_set_max(0)
        vips_cache_set_max_mem(0)
        vips_cache_set_max_files(0)
        return .success(())
    }()

    /// Starts libvips if it was not yet and sets its worker threads per image (at least 1).
    static func start(threadsPerImage: Int) throws {
        try started.get()
        vips_concurrency_set(Int32(max(1, min(threadsPerImage, 64))))
    }

    /// The messages libvips has gathered since the last call (its error buffer is global), cleared.
    static func takeError() -> String {
        guard let copy = vips_error_buffer_copy() else { return "unknown libvips error" }
        defer { g_free(copy) }
        let text = String(cString: copy).trimmingCharacters(in: "\n")
        return text.isEmpty ? "unknown libvips error" : String(text.prefix(500))
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> Substring {
        var slice = self[...]
        while slice.last == set { slice = slice.dropLast() }
        while slice.first == set { slice = slice.dropFirst() }
        return slice
    }
}
