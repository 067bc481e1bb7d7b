/// Turns byte offsets into 1-based line and column numbers. Columns count Unicode scalars, so a message about
/// a line containing `é` still points at the right character in an editor.
struct SourceMap: Sendable {
    let bytes: [UInt8]
    private let lineStarts: [Int]

    init(bytes: [UInt8]) {
        self.bytes = bytes
        var starts = [0]
        for (i, b) in bytes.enumerated() where b == 0x0A { starts.append(i + 1) }
        lineStarts = starts
    }

    func location(of offset: Int) -> (line: Int, column: Int) {
        let clamped = max(0, min(offset, bytes.count))
        var lo = 0
        var hi = lineStarts.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if lineStarts[mid] <= clamped { lo = mid } else { hi = mid - 1 }
        }
        let start = lineStarts[lo]
        // Count scalar starts (bytes that are not UTF-8 continuation bytes).
        var column = 1
        for b in bytes[start..<clamped] where b & 0xC0 != 0x80 { column += 1 }
        return (lo + 1, column)
    }
}
