internal import CVips
import Glibc
public import SiloCore

/// ``ImageTransformer`` on libvips: shrink-on-load thumbnails (`vips_thumbnail_source`), the header checked
/// against the pixel limit first, the evaluation stopped at the time limit. Thread-safe: every call makes its own
/// libvips objects and frees them before it returns.
public struct VipsThumbnailer: ImageTransformer {
    /// - Parameter threadsPerImage: libvips worker threads per transform (`vips_concurrency_set`, process-wide).
    ///   The server bounds concurrent transforms itself; 1 keeps each transform on the thread that asked.
    public init(threadsPerImage: Int = 1) throws {
        try VipsRuntime.start(threadsPerImage: threadsPerImage)
    }

    public func header(of source: ImageSource) throws -> ImageHeader {
        let handle = try VipsSourceHandle(source)
        let image = try Self.header(handle)
        return ImageHeader(width: image.width, height: image.height, decodeBytes: image.decodeMemory.bytes)
    }

    public func thumbnail(of source: ImageSource, _ spec: ThumbnailSpec, limits: ImageLimits) throws -> [UInt8] {
        let handle = try VipsSourceHandle(source)
        // The pixel count and the memory the header declares, before any pixel is decoded: a bomb is refused here.
        do {
            let header = try Self.header(handle)
            let pixels = header.width.multipliedReportingOverflow(by: header.height)
            guard !pixels.overflow, pixels.partialValue <= limits.maxInputPixels else {
                throw StorageError(
                    .invalidArgument,
                    "the image is \(header.width)x\(header.height); at most \(limits.maxInputPixels) pixels are transformed"
                )
            }
            let memory = header.decodeMemory
            guard memory.bytes <= limits.maxDecodeBytes else {
                throw StorageError(
                    .invalidArgument,
                    "the \(header.width)x\(header.height) image (\(memory.loader)) takes up to \(memory.bytes >> 20) MiB "
                        + "to transform; at most \(limits.maxDecodeBytes >> 20) MiB are allowed")
            }
        }
        let (crop, size) =
            switch spec.fit {
            case .cover: (VIPS_INTERESTING_CENTRE, VIPS_SIZE_BOTH)
            case .contain: (VIPS_INTERESTING_NONE, VIPS_SIZE_BOTH)
            case .fill: (VIPS_INTERESTING_NONE, VIPS_SIZE_FORCE)
            }
        guard
            let made = silo_vips_thumbnail(
                VipsRuntime.api, handle.pointer, Int32(spec.width), Int32(spec.height), Int32(crop.rawValue),
                Int32(size.rawValue))
        else {
            throw StorageError(.invalidArgument, "the image could not be decoded: \(VipsRuntime.takeError())")
        }
        let image = VipsImageHandle(made)
        // The deadline is read by libvips' eval callback while `image` is evaluated, which ends before this returns.
        let deadline = UnsafeMutablePointer<SiloVipsDeadline>.allocate(capacity: 1)
        defer { deadline.deallocate() }
        deadline.initialize(
            to: SiloVipsDeadline(
                deadline: g_get_monotonic_time() + gint64(limits.maxSeconds * 1_000_000), api: VipsRuntime.api))
        silo_vips_set_deadline(image.pointer, deadline)
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        let failed =
            Self.suffix(spec).withCString { silo_vips_save(VipsRuntime.api, image.pointer, $0, &buffer, &length) } != 0
        defer { g_free(buffer) }
        // libvips signals progress only now and then, so a short transform can finish past its deadline without
        // being killed: the deadline is checked again here, and such a result is not served either.
        let late = g_get_monotonic_time() > deadline.pointee.deadline
        if failed || buffer == nil || late {
            let message = VipsRuntime.takeError()
            if late || silo_vips_killed(VipsRuntime.api, image.pointer) != 0 {
                throw StorageError(
                    .unavailable, "the thumbnail took longer than \(limits.maxSeconds) s and was stopped")
            }
            throw StorageError(.invalidArgument, "the image could not be transformed: \(message)")
        }
        return Array(UnsafeRawBufferPointer(start: buffer, count: length))
    }

    private static func header(_ source: VipsSourceHandle) throws -> VipsImageHandle {
        guard let image = silo_vips_header(VipsRuntime.api, source.pointer) else {
            throw StorageError(
                .invalidArgument, "the object is not an image this server transforms: \(VipsRuntime.takeError())")
        }
        return VipsImageHandle(image)
    }

    /// The saver and its options, by file suffix. `strip` drops EXIF (a photo's location) and other metadata.
    static func suffix(_ spec: ThumbnailSpec) -> String {
        switch spec.format {
        case .webp: ".webp[Q=\(spec.quality),strip]"
        case .jpeg: ".jpg[Q=\(spec.quality),strip]"
        case .png: ".png[strip]"
        case .avif: ".avif[Q=\(spec.quality),strip]"
        }
    }
}
