/// The server-made identifier of a stored byte sequence: 32 lowercase hex digits from a CSPRNG, or, for bytes the
/// metadata store keeps inline (``isInline``), `i` and 31 of them. Where the bytes live is part of the name, so a
/// reader finds them without asking two stores. Blob stores name files and keys by this, never by object names.
///
/// An inline id begins with its creation time (``inline(at:)``), so the metadata store's indexes of inline ids grow
/// at their right edge: an upload touches the same few recent pages, not a random page of an index larger than
/// memory (docs/scaling.md). A blob store's id stays random throughout: its first digits spread files over the
/// disk store's fan-out directories.
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

    /// The last half of the digits: they are random in both kinds of id, so 64 bits tell ids apart as well as 128
    /// for a hash table, for half the hashing (small downloads look their bytes up by blob id).
    public func hash(into hasher: inout Hasher) {
        rawValue.withUTF8Bytes {
            hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: $0.suffix(16))))
        }
    }

    /// A new id for bytes a blob store keeps: 32 random digits.
    public static func random() -> BlobID {
        var digits = [UInt8]()
        digits.reserveCapacity(32)
        appendRandomDigits(32, to: &digits)
        return BlobID(rawValue: String(decoding: digits, as: UTF8.self))!
    }

    /// A new id for bytes the metadata store keeps inline, made at `time`: `i`, the microseconds since 1970 in 14
    /// digits (they sort as the times do, until the year 4253), then 17 random digits (68 bits, so ids made in the
    /// same microsecond differ).
    public static func inline(at time: Timestamp) -> BlobID {
        var digits = [inlineMark]
        digits.reserveCapacity(32)
        let microseconds = UInt64(clamping: max(time.microseconds, 0))
        for shift in stride(from: 52, through: 0, by: -4) {
            digits.append(hexDigits[Int((microseconds >> UInt64(shift)) & 0xF)])
        }
        appendRandomDigits(17, to: &digits)
        return BlobID(rawValue: String(decoding: digits, as: UTF8.self))!
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func appendRandomDigits(_ count: Int, to digits: inout [UInt8]) {
        var generator = SystemRandomNumberGenerator()
        var word: UInt64 = 0
        for index in 0..<count {
            if index % 16 == 0 { word = generator.next() }
            digits.append(hexDigits[Int(word & 0xF)])
            word >>= 4
        }
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
