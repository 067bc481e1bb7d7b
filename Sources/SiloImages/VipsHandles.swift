internal import CVips
import SiloCore

/// One `VipsSource` (a reference-counted GObject), unreferenced on deinit. Confined to the thread that made it.
final class VipsSourceHandle {
    let pointer: UnsafeMutablePointer<VipsSource>

    /// A descriptor source reads `fd` in place; libvips duplicates the descriptor, so the caller keeps its own.
    init(_ source: ImageSource) throws {
        let made: UnsafeMutablePointer<VipsSource>?
        switch source {
        case .fileDescriptor(let fd):
            made = vips_source_new_from_descriptor(fd)
        case .bytes(let bytes):
            // Copied into a blob libvips owns, so no pointer into a Swift array outlives this call.
            made = bytes.withUnsafeBytes { raw -> UnsafeMutablePointer<VipsSource>? in
                guard let blob = vips_blob_copy(raw.baseAddress, raw.count) else { return nil }
                defer { vips_area_unref(UnsafeMutableRawPointer(blob).assumingMemoryBound(to: VipsArea.self)) }
                return vips_source_new_from_blob(blob)
            }
        }
        guard let made else {
            throw StorageError(.internalError, "libvips could not open the image source: \(VipsRuntime.takeError())")
        }
        pointer = made
    }

    deinit { silo_vips_unref(pointer) }
}

@available(*, unavailable)
extension VipsSourceHandle: Sendable {}

/// One `VipsImage`, unreferenced on deinit. Confined to the thread that made it.
final class VipsImageHandle {
    let pointer: UnsafeMutablePointer<VipsImage>

    init(_ pointer: UnsafeMutablePointer<VipsImage>) { self.pointer = pointer }

    deinit { silo_vips_unref(pointer) }

    var width: Int { Int(vips_image_get_width(pointer)) }
    var height: Int { Int(vips_image_get_height(pointer)) }
}

@available(*, unavailable)
extension VipsImageHandle: Sendable {}
