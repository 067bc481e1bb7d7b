extension StringProtocol {
    /// Calls `body` with the text's UTF-8 bytes: in place where they are contiguous (native strings, small strings and
    /// their substrings: every string Silo makes), else from a copy. Every request checks and scans names, paths and
    /// header values; stepping a `UTF8View` byte by byte cost several times the instructions of a loop over a
    /// buffer (callgrind, `bench/instructions.sh get`).
    @inlinable
    public func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        return try Array(utf8).withUnsafeBufferPointer(body)
    }
}

extension String {
    /// Whether both texts are the same UTF-8 bytes. Not `==`: `String`'s own `==` treats canonically equivalent
    /// text as one ("é" and "e\u{301}"), but object names, rule paths and the keys of caches over them that differ
    /// in bytes are different things to GCS, to every store and to the rules.
    @inlinable
    public func hasSameUTF8Bytes(as other: String) -> Bool {
        utf8.count == other.utf8.count && withUTF8Bytes { a in other.withUTF8Bytes { a.hasSameBytes(as: $0) } }
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// Whether both hold the same bytes, compared eight at a time. Inlinable, so every caller compares in place:
    /// a call into another module (for `memcmp`, which an inlinable function cannot name here) cost 100–200
    /// instructions per GET across the comparisons a GET makes (`bench/instructions.sh get`).
    @inlinable
    public func hasSameBytes(as other: UnsafeBufferPointer<UInt8>) -> Bool {
        guard count == other.count else { return false }
        guard let a = baseAddress.map(UnsafeRawPointer.init), let b = other.baseAddress.map(UnsafeRawPointer.init)
        else { return true }  // both empty
        var offset = 0
        while offset + 8 <= count {
            guard
                a.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    == b.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            else { return false }
            offset += 8
        }
        while offset < count {
            guard a.load(fromByteOffset: offset, as: UInt8.self) == b.load(fromByteOffset: offset, as: UInt8.self)
            else { return false }
            offset += 1
        }
        return true
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// Eight bytes at a time, multiplied and folded: spreads keys over the slots of a direct-mapped memo, nothing
    /// more. A client that aims its keys at one slot gains nothing: a direct-mapped table only misses more.
    @inlinable
    public func spreadHash() -> UInt64 {
        var h: UInt64 = 0x243F_6A88_85A3_08D3 ^ UInt64(count)
        guard let base = baseAddress else { return h }
        let raw = UnsafeRawPointer(base)
        var offset = 0
        while offset + 8 <= count {
            h = (h ^ raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0x9E37_79B9_7F4A_7C15
            h ^= h >> 29
            offset += 8
        }
        var tail: UInt64 = 0
        if offset < count && count >= 8 {
            // The last eight bytes, overlapping what was hashed: one load instead of a loop over up to seven.
            tail = raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        } else {
            var shift: UInt64 = 0
            while offset < count {
                tail |= UInt64(raw.load(fromByteOffset: offset, as: UInt8.self)) << shift
                shift += 8
                offset += 1
            }
        }
        h = (h ^ tail) &* 0x9E37_79B9_7F4A_7C15
        return h ^ (h >> 32)
    }
}
