import SiloCore

/// `Content-Range: bytes first-last/total`, `bytes first-last/*`, `bytes */total`, `bytes */*`.
package struct ContentRange: Equatable {
    package var first: Int64?
    package var last: Int64?
    package var total: Int64?

    /// The largest position or total accepted, 4 EiB: far past any object, and small enough that the chunk handler's
    /// sums (`first` plus a body length of up to 18 digits, `last + 1`) cannot overflow.
    static let maxValue: Int64 = 1 << 62 - 1

    init(first: Int64?, last: Int64?, total: Int64?) {
        self.first = first
        self.last = last
        self.total = total
    }

    package init(_ header: String) throws {
        let invalid = StorageError(.invalidArgument, "invalid Content-Range \(header.prefix(80))")
        let text = header.trimmingCharacters(in: " ")
        guard text.lowercased().hasPrefix("bytes "), let slash = text.lastIndex(of: "/") else { throw invalid }
        let span = text[text.index(text.startIndex, offsetBy: 6)..<slash].trimmingCharacters(in: " ")
        let totalText = text[text.index(after: slash)...].trimmingCharacters(in: " ")
        var total: Int64?
        if totalText != "*" {
            guard let value = Self.number(totalText) else { throw invalid }
            total = value
        }
        if span == "*" {
            self.init(first: nil, last: nil, total: total)
            return
        }
        let bounds = span.split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Self.number(bounds[0]) else { throw invalid }
        // Node sends `bytes 0-*/N` for a stream of unknown chunk end: the body says how much.
        if bounds[1] == "*" {
            self.init(first: first, last: nil, total: total)
            return
        }
        guard let last = Self.number(bounds[1]), last >= first else { throw invalid }
        self.init(first: first, last: last, total: total)
    }

    /// A position or total from 0 to ``maxValue``, in plain decimal digits (RFC 9110 `1*DIGIT`; `Int64.init`
    /// alone would also take a sign).
    private static func number(_ text: some StringProtocol) -> Int64? {
        guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int64(text), value <= maxValue else {
            return nil
        }
        return value
    }
}
