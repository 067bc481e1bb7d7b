/// An object name: 1–1024 bytes of valid UTF-8 without NUL, CR or LF, and none of the names GCS refuses: `.`,
/// `..`, or one starting `.well-known/acme-challenge/` (cloud.google.com/storage/docs/objects, "Naming
/// requirements"). `.` and `..` also mean something else in every URL a browser or an HTTP library normalises.
///
/// Names are kept byte-exact (`a//b` and `a/b` are different objects) and are never used as filesystem paths.
/// Names order by their UTF-8 bytes, which is GCS listing order.
public struct ObjectName: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let maxBytes = 1024
    /// GCS refuses names under this prefix (it is where ACME HTTP-01 challenges are answered).
    public static let reservedPrefix = ".well-known/acme-challenge/"
    public let rawValue: String

    /// A name as it enters: from a request's path, query, body or header. Every rule is checked.
    public init(_ rawValue: String) throws {
        try self.init(stored: rawValue)
        // Every reserved name starts with a dot: other names (nearly all) cost one comparison.
        guard rawValue.utf8.first == UInt8(ascii: ".") else { return }
        if rawValue == "." || rawValue == ".." {
            throw StorageError(.invalidArgument, "object name cannot be '\(rawValue)'")
        }
        if rawValue.utf8.starts(with: Self.reservedPrefix.utf8) {
            throw StorageError(.invalidArgument, "object name cannot start with '\(Self.reservedPrefix)'")
        }
    }

    /// A name read back from a store or a stored record: its form is checked (length, UTF-8, no NUL, CR or LF),
    /// but not the reserved names, so that an object stored under one before they were refused stays listable.
    public init(stored rawValue: String) throws {
        let count = rawValue.utf8.count
        guard count > 0 else { throw StorageError(.invalidArgument, "object name is empty") }
        guard count <= Self.maxBytes else {
            throw StorageError(.invalidArgument, "object name is \(count) bytes; the limit is \(Self.maxBytes)")
        }
        guard !rawValue.withUTF8Bytes({ $0.contains { $0 == 0 || $0 == 0x0A || $0 == 0x0D } }) else {
            throw StorageError(.invalidArgument, "object name contains NUL, CR or LF: \(rawValue.debugDescription)")
        }
        self.rawValue = rawValue
    }

    /// Decodes a name from raw bytes as it enters, rejecting invalid UTF-8.
    public init(utf8 bytes: some Collection<UInt8>) throws {
        try self.init(Self.decode(bytes))
    }

    /// ``init(stored:)`` from raw bytes.
    public init(storedUTF8 bytes: some Collection<UInt8>) throws {
        try self.init(stored: Self.decode(bytes))
    }

    private static func decode(_ bytes: some Collection<UInt8>) throws -> String {
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw StorageError(.invalidArgument, "object name is not valid UTF-8")
        }
        return string
    }

    public var description: String { rawValue }
    /// The last `/`-separated component (what Firebase calls the reference's `name`): what follows the last `/`
    /// byte. (Not the last "/" Character: a combining mark after the slash makes it part of a longer Character.)
    public var lastComponent: Substring {
        let utf8 = rawValue.utf8
        if let slash = utf8.lastIndex(of: UInt8(ascii: "/")) { return rawValue[utf8.index(after: slash)...] }
        return rawValue[...]
    }

    /// A key that sorts (by bytes) after every name starting with `prefix` and before every other name after it:
    /// the prefix plus 0xFF, a byte that never occurs in UTF-8. Listings use it as a range bound and to skip a whole
    /// common prefix in one step.
    public static func keyAfterAllNames(startingWith prefix: some Collection<UInt8>) -> [UInt8] {
        Array(prefix) + [0xFF]
    }

    public static func < (a: ObjectName, b: ObjectName) -> Bool {
        a.rawValue.utf8.lexicographicallyPrecedes(b.rawValue.utf8)
    }

    /// Byte equality, like the order: `String`'s own `==` and hash treat canonically equivalent text as one ("é" and
    /// "e\u{301}"), but to GCS and to every store those are two objects, and caches keyed by name must agree.
    public static func == (a: ObjectName, b: ObjectName) -> Bool { a.rawValue.hasSameUTF8Bytes(as: b.rawValue) }

    public func hash(into hasher: inout Hasher) {
        let utf8 = rawValue.utf8
        if utf8.withContiguousStorageIfAvailable({ hasher.combine(bytes: UnsafeRawBufferPointer($0)) }) == nil {
            for byte in utf8 { hasher.combine(byte) }
        }
        hasher.combine(0xFF as UInt8)  // never in UTF-8: ends the name, as String's own hash does
    }
}
