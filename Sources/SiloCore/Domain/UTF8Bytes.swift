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
