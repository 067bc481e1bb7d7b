internal import CVips
import Glibc
import SiloCore

/// One `VipsSource` (a reference-counted GObject), unreferenced on deinit. Confined to the thread that made it.
final class VipsSourceHandle {
    let pointer: UnsafeMutablePointer<VipsSource>

    /// A descriptor source reads `fd` in place; libvips duplicates the descriptor, so the caller keeps its own.
    init(_ source: ImageSource) throws {
        // libvips (8.14) cannot map a source of no bytes and then aborts the whole process on an assertion instead
        // of failing: an empty object is refused here, before libvips sees it.
        guard !Self.isEmpty(source) else {
            throw StorageError(.invalidArgument, "the object is empty, not an image this server transforms")
        }
        let made: UnsafeMutablePointer<VipsSource>?
        switch source {
        case .fileDescriptor(let fd):
            made = silo_vips_source_from_descriptor(VipsRuntime.api, fd)
        case .bytes(let bytes):
            // Copied into a blob libvips owns, so no pointer into a Swift array outlives this call.
            made = bytes.withUnsafeBytes { raw in
                silo_vips_source_from_copy(VipsRuntime.api, raw.baseAddress, raw.count)
            }
        }
        guard let made else {
            throw StorageError(.internalError, "libvips could not open the image source: \(VipsRuntime.takeError())")
        }
        pointer = made
    }

    deinit { silo_vips_unref(pointer) }

    private static func isEmpty(_ source: ImageSource) -> Bool {
        switch source {
        case .bytes(let bytes): return bytes.isEmpty
        case .fileDescriptor(let fd):
            var info = stat()
            // A descriptor that cannot be examined is left to libvips, which reports it as an error.
            return fstat(fd, &info) == 0 && info.st_size == 0
        }
    }
}

@available(*, unavailable)
extension VipsSourceHandle: Sendable {}

/// One `VipsImage`, unreferenced on deinit. Confined to the thread that made it.
final class VipsImageHandle {
    let pointer: UnsafeMutablePointer<VipsImage>

    init(_ pointer: UnsafeMutablePointer<VipsImage>) { self.pointer = pointer }

    deinit { silo_vips_unref(pointer) }

    var width: Int { Int(silo_vips_width(VipsRuntime.api, pointer)) }
    var height: Int { Int(silo_vips_height(VipsRuntime.api, pointer)) }

    /// What decoding this header's image for a thumbnail takes at most.
    var decodeMemory: DecodeMemory {
        let api = VipsRuntime.api
        return DecodeMemory(
            width: width, height: height, bands: Int(silo_vips_bands(api, pointer)),
            bytesPerBand: Int(silo_vips_bytes_per_band(api, pointer)),
            loader: silo_vips_loader(api, pointer).map { String(cString: $0) } ?? "",
            interlaced: silo_vips_interlaced(api, pointer) != 0)
    }
}

@available(*, unavailable)
extension VipsImageHandle: Sendable {}
