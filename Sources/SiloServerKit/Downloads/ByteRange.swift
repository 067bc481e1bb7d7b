/// A single `Range: bytes=…` request, resolved against an object size (RFC 9110 §14).
enum ByteRange: Equatable {
    /// Serve the whole object (no header, a malformed one, several ranges, or an empty object).
    case whole
    /// Serve `start...end` (inclusive) with 206.
    case partial(start: Int64, end: Int64)
    /// 416 with `Content-Range: bytes */size`.
    case unsatisfiable

    static func resolve(_ header: String?, size: Int64) -> ByteRange {
        guard let header else { return .whole }
        let trimmed = header.trimmingCharacters(in: " ")
        guard trimmed.lowercased().hasPrefix("bytes=") else { return .whole }
        let spec = trimmed.dropFirst(6)
        guard !spec.contains(",") else { return .whole }
        guard let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash].trimmingCharacters(in: " ")
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: " ")
        // A zero-length object has no satisfiable range; answering 200 with an empty body is what clients expect
        // (JS getBytes(max) on an empty file).
        if size == 0 { return .whole }
        if first.isEmpty {
            // `bytes=-0` selects nothing (416); a malformed suffix is ignored like any malformed range.
            guard let suffix = position(last) else { return .whole }
            guard suffix > 0 else { return .unsatisfiable }
            return .partial(start: max(0, size - suffix), end: size - 1)
        }
        guard let start = position(first) else { return .whole }
        guard start < size else { return .unsatisfiable }
        if last.isEmpty { return .partial(start: start, end: size - 1) }
        guard let end = position(last), end >= start else { return .whole }
        return .partial(start: start, end: min(end, size - 1))
    }

    /// A byte position: 1*DIGIT (RFC 9110 §14.1.1), saturating at Int64.max, since any position that large is past
    /// the end of every object (`bytes=99999999999999999999-` is unsatisfiable, `bytes=0-99999999999999999999` is
    /// the whole object, as for any other number past the end). Nil unless all digits.
    static func position(_ text: String) -> Int64? {
        guard !text.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in text.utf8 {
            // Every byte is checked, also after saturating: `99999999999999999999)` is malformed, not large.
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int64(byte - 0x30))
            value = o1 || o2 ? .max : sum
        }
        return value
    }
}
