/// The server-made identifier of a stored byte sequence: 32 lowercase hex digits from a CSPRNG, or, for bytes the
/// metadata store keeps inline (``isInline``), `i` and 31 of them. Where the bytes live is part of the name, so a
/// reader finds them without asking two stores. Blob stores name files and keys by this, never by object names.
public struct BlobID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init?(rawValue: String) {
        guard rawValue.utf8.count == 32,
            rawValue.withUTF8Bytes({ bytes in
                bytes.indices.allSatisfy { i in
                    let c = bytes[i]
                    return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (i == 0 && c == Self.inlineMark)
                }
            })
        else { return nil }
        self.rawValue = rawValue
    }

    /// `i`: the first character of an inline blob's id.
    private static let inlineMark = UInt8(ascii: "i")

    /// Whether the metadata store holds the bytes, written in the transaction of the version that holds them
    /// (``MetadataStore/inlineBlob(_:)``), rather than the blob store.
    public var isInline: Bool { rawValue.utf8.first == Self.inlineMark }

    /// Half the digits: they are random, so 64 bits tell ids apart as well as 128 for a hash table, for half the
    /// hashing (small downloads look their bytes up by blob id).
    public func hash(into hasher: inout Hasher) {
        rawValue.withUTF8Bytes {
            hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: $0.prefix(16))))
        }
    }

    public static func random() -> BlobID { random(inline: false) }

    /// A new id for bytes the metadata store keeps inline.
    public static func randomInline() -> BlobID { random(inline: true) }

    private static func random(inline: Bool) -> BlobID {
        var generator = SystemRandomNumberGenerator()
        let hex = Array("0123456789abcdef".utf8)
        var bytes = [UInt8]()
        bytes.reserveCapacity(32)
        for _ in 0..<2 {
            var word = generator.next() as UInt64
            for _ in 0..<16 {
                bytes.append(hex[Int(word & 0xF)])
                word >>= 4
            }
        }
        if inline { bytes[0] = inlineMark }
        return BlobID(rawValue: String(decoding: bytes, as: UTF8.self))!
    }

    public var description: String { rawValue }
}

/// Random identifiers for download tokens and upload sessions.
public enum RandomID {
    /// A version-4 UUID in lowercase, the shape Firebase uses for download tokens.
    public static func uuid() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = bytes.map { byte -> String in
            let s = String(byte, radix: 16)
            return s.count == 1 ? "0" + s : s
        }.joined()
        let c = Array(hex)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20]) + "-"
            + String(c[20..<32])
    }

    /// A short id (64 bits, hex) that ties a failed request's answer to its log line.
    public static func requestID() -> String {
        let value = UInt64.random(in: 0...UInt64.max)
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// An unguessable URL-safe session id (160 bits).
    public static func sessionID() -> String {
        BlobID.random().rawValue + String(BlobID.random().rawValue.prefix(8))
    }
}
