import Foundation
import SiloCore
import SiloImages
import SiloServer
import SiloServerKit
import SiloTesting
import Testing

/// The transform memory budget (`maxDecodeBytes`): the header's estimate against what libvips really takes, and the
/// refusal of an image over the budget.
@Suite("Transform memory budget")
struct DecodeMemoryTests {
    /// One kind of original: how it is made from noise (which compresses badly, so no codec shortcut helps), and
    /// its size.
    struct Original: Sendable, CustomStringConvertible {
        let name: String
        let width: Int
        let height: Int
        /// The file name's suffix with libvips save options.
        let save: String
        var description: String { "\(name) \(width)x\(height)" }
    }

    static let originals = [
        Original(name: "jpeg", width: 3000, height: 2000, save: ".jpg"),
        Original(name: "progressive jpeg", width: 3000, height: 2000, save: ".jpg[interlace]"),
        Original(name: "png", width: 3000, height: 2000, save: ".png[compression=1]"),
        Original(name: "wide png", width: 12000, height: 500, save: ".png[compression=1]"),
        Original(name: "interlaced png", width: 3000, height: 2000, save: ".png[compression=1,interlace]"),
        Original(name: "webp", width: 3000, height: 2000, save: ".webp[Q=50]"),
        Original(name: "avif", width: 1500, height: 1000, save: ".avif[Q=40,effort=0]"),
        Original(name: "gif", width: 1500, height: 1000, save: ".gif"),
    ]

    /// `vipsthumbnail`'s peak resident memory for the original, less its peak for a 16×16 image of the same kind
    /// (the libraries it maps), must stay under the estimate the server checks the budget against.
    @Test(arguments: originals)
    func estimateBoundsWhatLibvipsTakes(_ original: Original) throws {
        let directory = try TemporaryDirectory()
        let path = try Self.make(original, in: directory)
        let small = try Self.make(
            Original(name: original.name, width: 16, height: 16, save: original.save), in: directory)
        let measured =
            try Self.peakKiB(thumbnailing: path, in: directory) - Self.peakKiB(thumbnailing: small, in: directory)
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        let estimate = try VipsThumbnailer().header(of: .fileDescriptor(fd)).decodeBytes
        #expect(
            Int64(measured) << 10 <= estimate,
            "\(original): measured \(measured >> 10) MiB, estimated \(estimate >> 20) MiB")
        // The estimate is a bound, not a refusal of ordinary photos: under the default budget at these sizes.
        #expect(estimate <= ImageLimits().maxDecodeBytes)
    }

    /// An interlaced PNG is decoded whole: over a 16 MiB budget it is refused with 400 and the estimate; under the
    /// default it is made.
    @Test func anImageOverTheBudgetIsRefusedBeforeDecoding() throws {
        let directory = try TemporaryDirectory()
        let path = try Self.make(
            Original(name: "interlaced png", width: 3000, height: 2000, save: ".png[compression=1,interlace]"),
            in: directory)
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let tight = try thumbnailServer(maxDecodeBytes: 16 << 20)
        #expect(try tight.client().upload("big.png", bytes, contentType: "image/png").status == 200)
        let refused = try tight.client().thumbnail("big.png", "width=64&height=64")
        #expect(refused.status == 400)
        let message = String(decoding: refused.body, as: UTF8.self)
        #expect(message.contains("MiB to transform") && message.contains("at most 16 MiB"), "\(message)")
        let roomy = try thumbnailServer()
        #expect(try roomy.client().upload("big.png", bytes, contentType: "image/png").status == 200)
        #expect(try roomy.client().thumbnail("big.png", "width=64&height=64").status == 200)
    }

    @Test func theSettingsFileSetsTheBudget() throws {
        let settings = try ImageSettings.parse(json: Array(#"{"maxDecodeBytes": 1048576}"#.utf8))
        #expect(settings.limits.maxDecodeBytes == 1 << 20)
        #expect(throws: StorageError.self) { try ImageSettings.parse(json: Array(#"{"maxDecodeBytes": 0}"#.utf8)) }
    }

    private static func make(_ original: Original, in directory: TemporaryDirectory) throws -> String {
        let d = directory.path
        let tag = "\(original.width)x\(original.height)-\(original.name.replacingOccurrences(of: " ", with: "-"))"
        let noise = "\(d)/noise-\(tag).v"
        try GoldenImages.vips("gaussnoise", noise, "\(original.width)", "\(original.height)")
        try GoldenImages.vips("cast", noise, "\(d)/grey-\(tag).v", "uchar")
        try GoldenImages.vips(
            "bandjoin", "\(d)/grey-\(tag).v \(d)/grey-\(tag).v \(d)/grey-\(tag).v", "\(d)/rgb-\(tag).v")
        try GoldenImages.vips("copy", "\(d)/rgb-\(tag).v", "\(d)/srgb-\(tag).v", "--interpretation", "srgb")
        let path = "\(d)/\(tag)" + original.save.prefix { $0 != "[" }
        try GoldenImages.vips("copy", "\(d)/srgb-\(tag).v", "\(d)/\(tag)" + original.save)
        return path
    }

    /// Peak resident KiB of `vipsthumbnail` making a 256×256 WebP with one libvips thread, as the server does.
    private static func peakKiB(thumbnailing path: String, in directory: TemporaryDirectory) throws -> Int {
        let report = "\(directory.path)/time.txt"
        try GoldenImages.run(
            "/usr/bin/time",
            [
                "-o", report, "-f", "%M", "/usr/bin/vipsthumbnail", path, "--size", "256x256", "-o",
                "\(directory.path)/out.webp", "--vips-concurrency=1",
            ])
        let text = try String(contentsOfFile: report, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let kib = Int(text) else { throw StorageError(.internalError, "/usr/bin/time wrote \(text)") }
        return kib
    }
}
