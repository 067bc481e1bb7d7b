import Foundation
import SiloCore
import SiloTesting
import Testing

/// Images made at test time with libvips' own command-line tools (no committed binaries), and the comparisons the
/// golden tests make: `vipsthumbnail`'s result for the same parameters, and the mean absolute difference per
/// pixel and band (0–255) between two images of the same size.
enum GoldenImages {
    /// A 1200×900 JPEG with structure in every direction (a horizontal ramp, a vertical ramp, a zone plate), so a
    /// wrong crop, scale or orientation shows in the difference.
    static let source: Result<Workspace, any Error> = Result { try Workspace() }

    final class Workspace: Sendable {
        let directory: TemporaryDirectory
        let jpegPath: String
        let jpeg: [UInt8]

        init() throws {
            directory = try TemporaryDirectory()
            let d = directory.path
            try vips("grey", "\(d)/h.v", "1200", "900")
            try vips("linear", "\(d)/h.v", "\(d)/r.v", "255", "0", "--uchar")
            try vips("grey", "\(d)/gv.v", "900", "1200")
            try vips("rot", "\(d)/gv.v", "\(d)/gvr.v", "d90")
            try vips("linear", "\(d)/gvr.v", "\(d)/g.v", "255", "0", "--uchar")
            try vips("zone", "\(d)/z.v", "1200", "900")
            try vips("linear", "\(d)/z.v", "\(d)/b.v", "127.5", "127.5", "--uchar")
            try vips("bandjoin", "\(d)/r.v \(d)/g.v \(d)/b.v", "\(d)/rgb.v")
            try vips("copy", "\(d)/rgb.v", "\(d)/rgb2.v", "--interpretation", "srgb")
            jpegPath = "\(d)/source.jpg"
            try vips("copy", "\(d)/rgb2.v", jpegPath + "[Q=92]")
            jpeg = Array(try Data(contentsOf: URL(fileURLWithPath: jpegPath)))
        }
    }

    static func workspace() throws -> Workspace { try source.get() }

    /// `vipsthumbnail`'s answer to `spec`, encoded as the server encodes it.
    static func reference(_ spec: ThumbnailSpec, in workspace: Workspace) throws -> String {
        let size =
            switch spec.fit {
            case .cover, .contain: "\(spec.width)x\(spec.height)"
            case .fill: "\(spec.width)x\(spec.height)!"
            }
        let options =
            switch spec.format {
            case .png: "[strip]"
            default: "[Q=\(spec.quality),strip]"
            }
        let output = "\(workspace.directory.path)/ref-\(spec).\(spec.format.fileExtension)"
        var arguments = [workspace.jpegPath, "--size", size, "-o", output + options]
        if spec.fit == .cover { arguments += ["--smartcrop", "centre"] }
        try run("/usr/bin/vipsthumbnail", arguments)
        return output
    }

    /// Width and height as `vipsheader` reads them.
    static func dimensions(_ path: String) throws -> (width: Int, height: Int) {
        let width = try run("/usr/bin/vipsheader", ["-f", "width", path])
        let height = try run("/usr/bin/vipsheader", ["-f", "height", path])
        guard let w = Int(width), let h = Int(height) else {
            throw StorageError(.internalError, "vipsheader printed \(width) x \(height)")
        }
        return (w, h)
    }

    /// Mean absolute difference of two images of one size, over every pixel and band.
    static func meanDifference(_ a: String, _ b: String, in workspace: Workspace) throws -> Double {
        let d = workspace.directory.path
        let tag = UUID().uuidString
        try vips("subtract", a, b, "\(d)/diff-\(tag).v")
        try vips("abs", "\(d)/diff-\(tag).v", "\(d)/abs-\(tag).v")
        let text = try run("/usr/bin/vips", ["avg", "\(d)/abs-\(tag).v"])
        guard let value = Double(text) else { throw StorageError(.internalError, "vips avg printed \(text)") }
        return value
    }

    static func write(_ bytes: [UInt8], _ name: String, in workspace: Workspace) throws -> String {
        let path = "\(workspace.directory.path)/\(name)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Whether `bytes` start as files of `format` do.
    static func hasMagic(_ bytes: [UInt8], of format: ThumbnailSpec.Format) -> Bool {
        switch format {
        case .jpeg: bytes.starts(with: [0xFF, 0xD8, 0xFF])
        case .png: bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        case .webp:
            bytes.count > 12 && bytes[0..<4] == Array("RIFF".utf8)[...] && bytes[8..<12] == Array("WEBP".utf8)[...]
        case .avif:
            bytes.count > 12 && bytes[4..<8] == Array("ftyp".utf8)[...] && bytes[8..<11] == Array("avi".utf8)[...]
        }
    }

    /// A valid PNG signature and header declaring `width` × `height` pixels, with one empty data chunk: a few
    /// dozen bytes that would decode to gigabytes.
    static func bombPNG(width: UInt32, height: UInt32) -> [UInt8] {
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let body = Array(type.utf8) + data
            return bigEndian(UInt32(data.count)) + body + bigEndian(crc32(body))
        }
        let header = bigEndian(width) + bigEndian(height) + [8, 2, 0, 0, 0]  // 8-bit RGB, no interlace
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header)
            + chunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]) + chunk("IEND", [])
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    /// PNG's CRC (ISO 3309), bit by bit: a test's few bytes need no table.
    private static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    @discardableResult
    static func vips(_ arguments: String...) throws -> String { try run("/usr/bin/vips", arguments) }

    /// Runs a tool and returns its standard output, trimmed; throws on a non-zero exit.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> String {
        let result = try ChildProcess.run(tool, arguments)
        guard result.status == 0 else {
            throw StorageError(
                .internalError, "\(tool) \(arguments.joined(separator: " ")) failed: \(result.errorText)")
        }
        return result.outputText.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
