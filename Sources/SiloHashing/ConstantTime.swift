internal import CCrypto

/// Comparisons whose running time does not depend on where two secrets first differ.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes.
    ///
    /// The time depends on the length only. Lengths are not secret where this is used (MACs and digests have a
    /// fixed size; admin keys are compared as SHA-256 digests), so a length mismatch returns at once.
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, x.count) == 0 }
        }
    }
}
