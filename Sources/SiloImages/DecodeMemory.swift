import SiloCore

/// How much memory a thumbnail of an image takes at most, from its header alone: the transform's memory budget
/// (``ImageLimits/maxDecodeBytes``) is checked against this before any pixel is decoded.
///
/// The model follows how libvips 8.14 decodes for `vips_thumbnail` (docs/images.md, "Memory"), with margins over
/// what `vipsthumbnail` peaked at in resident memory on 12-megapixel and wide or tall images
/// (`Tests/SiloImagesTests/DecodeMemoryTests.swift` checks it against such measurements):
/// - JPEG, PNG and WebP that are not interlaced stream: a band of lines as wide as the image is in memory at a time
///   (at most about 1,100 lines measured, at any height), never the whole frame. A JPEG is often smaller still
///   (shrink-on-load), which the model does not count on.
/// - An interlaced PNG (Adam7) or a progressive JPEG is decoded whole: the frame, or the JPEG's coefficients
///   (measured 1.06–1.17 frames).
/// - HEIF and AVIF are decoded whole by libheif, in planes of its own besides libvips' copy (measured 2.5–3.2
///   frames).
/// - GIF keeps whole RGBA frames for its animation state (measured 2.3 frames and 16 MiB more).
struct DecodeMemory {
    var width: Int
    var height: Int
    var bands: Int
    var bytesPerBand: Int
    /// libvips' loader name ("jpegload", "heifload_source", ...).
    var loader: String
    var interlaced: Bool

    /// Lines a streaming decode keeps, as the bound of its band (twice the measured most).
    static let streamedLines = 2048
    /// Codec state, the encoder and the result, whatever the image's size.
    static let fixedBytes: Int64 = 8 << 20
    /// What the GIF decoder holds whatever the size (measured 16 MiB over 1.5–12 MP).
    static let gifBytes: Int64 = 16 << 20

    /// The estimate in bytes; at most `Int64.max` (a header may declare anything, so the sums are in floating point).
    var bytes: Int64 {
        let line = Double(max(0, width)) * Double(max(1, bands)) * Double(max(1, bytesPerBand))
        let frame = line * Double(max(0, height))
        let held: Double
        if loader.hasPrefix("heifload") {
            held = frame * 3.5
        } else if loader.hasPrefix("gifload") {
            held = frame * 3 + Double(Self.gifBytes)
        } else if interlaced {
            held = frame * 1.25
        } else {
            held = min(frame, line * Double(Self.streamedLines)) * 1.25
        }
        let total = held + Double(Self.fixedBytes)
        return total < 0x1p62 ? Int64(total) : .max
    }
}
