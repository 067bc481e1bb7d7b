/// A bucket name, validated: 1–222 characters of `[A-Za-z0-9._-]`, starting and ending with a letter or digit.
///
/// GCS itself requires lowercase; Firebase projects are lowercase too, but emulator users sometimes use
/// mixed case, so Silo accepts it and keeps the name byte-exact.
public struct BucketName: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) throws {
        func isAlnum(_ b: UInt8) -> Bool {
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
        }
        let valid = rawValue.withUTF8Bytes { bytes in
            !bytes.isEmpty && bytes.count <= 222
                && bytes.allSatisfy({ isAlnum($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D })
                && isAlnum(bytes[0]) && isAlnum(bytes[bytes.count - 1])
        }
        guard valid else {
            throw StorageError(.invalidArgument, "invalid bucket name: \(rawValue.prefix(240))")
        }
        self.rawValue = rawValue
    }

    public var description: String { rawValue }
    public static func < (a: BucketName, b: BucketName) -> Bool {
        a.rawValue.utf8.lexicographicallyPrecedes(b.rawValue.utf8)
    }
}
