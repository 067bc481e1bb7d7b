internal import CVips
import SiloCore

/// libvips' process-wide state, set up once: the library opened (it is loaded at run time, not linked: a server
/// without thumbnails maps none of its hundred libraries), `vips_init`, the loaders allowed, and bounds on its own
/// threads and caches.
enum VipsRuntime {
    /// The library file, as Debian's `libvips42` installs it.
    static let libraryName = "libvips.so.42"

    /// The result of the one load and `vips_init`; later calls see the same outcome. (A `static let` is initialized
    /// once, thread-safely, by the runtime.)
    private static let started: Result<VipsLibrary, StorageError> = {
        let library: VipsLibrary
        do {
            library = try VipsLibrary(libraryName)
        } catch let error as StorageError {
            return .failure(error)
        } catch {
            return .failure(StorageError(.internalError, "\(error)"))
        }
        guard silo_vips_init(library.api, "silo") == 0 else {
            return .failure(StorageError(.internalError, "libvips did not start: \(takeError(library))"))
        }
        silo_vips_restrict_loaders(library.api)
        return .success(library)
    }()

    /// Starts libvips if it was not yet and sets its worker threads per image (at least 1).
    static func start(threadsPerImage: Int) throws {
        let library = try started.get()
        // No operation cache: every transform reads a source made for its request, so a cached operation could
        // never be hit again and would only keep that source (a descriptor or a copy of the bytes) alive. Repeated
        // requests are answered from the server's own disk cache of results.
        silo_vips_configure(library.api, Int32(max(1, min(threadsPerImage, 64))))
    }

    /// The functions, once ``start(threadsPerImage:)`` succeeded (every handle and transform comes after it).
    static var api: UnsafePointer<SiloVips> {
        guard case .success(let library) = started else { preconditionFailure("libvips used before it started") }
        return library.api
    }

    /// The messages libvips has gathered since the last call (its error buffer is global), cleared.
    static func takeError() -> String {
        guard case .success(let library) = started else { return "libvips is not loaded" }
        return takeError(library)
    }

    private static func takeError(_ library: VipsLibrary) -> String {
        guard let copy = silo_vips_error_copy(library.api) else { return "unknown libvips error" }
        defer { g_free(copy) }
        let text = String(cString: copy).trimmingCharacters(in: "\n")
        return text.isEmpty ? "unknown libvips error" : String(text.prefix(500))
    }
}

/// The opened library and its function table, closed on deinit (in practice never: the one instance lives in
/// ``VipsRuntime`` for the process).
///
/// `@unchecked Sendable`: the table is written once, in `init`, before the instance is shared, and only read after.
final class VipsLibrary: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer
    private let table: UnsafeMutablePointer<SiloVips>

    var api: UnsafePointer<SiloVips> { UnsafePointer(table) }

    init(_ name: String) throws {
        table = .allocate(capacity: 1)
        table.initialize(to: SiloVips())
        var reason = [CChar](repeating: 0, count: 512)
        guard let opened = silo_vips_open(name, table, &reason, reason.count) else {
            table.deallocate()
            let why = String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw StorageError(
                .unavailable, "thumbnails need libvips (\(name), Debian package libvips42), which did not load: \(why)")
        }
        handle = opened
    }

    deinit {
        silo_vips_close(handle)
        table.deallocate()
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
