/// The bytes a connection has queued to send: response heads and bodies held in memory. Raw memory with one owner
/// (noncopyable, freed with it): an append is a capacity check and a `memcpy`, where `[UInt8].append(contentsOf:)`
/// cost about a hundred instructions, a dozen times per response head (callgrind, `bench/instructions.sh get`).
struct OutputBytes: ~Copyable {
    private var base: UnsafeMutableRawPointer?
    private(set) var count = 0
    private(set) var capacity = 0

    init() {}

    deinit { base?.deallocate() }

    /// The queued bytes from `offset` on (valid until the next change).
    func bytes(from offset: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base.map { UnsafeRawPointer($0 + offset) }, count: count - offset)
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        let destination = reserve(bytes.count)
        destination.copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    mutating func append(_ literal: StaticString) {
        append(UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    mutating func append(utf8 text: String) {
        var text = text
        text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    mutating func append(byte: UInt8) {
        reserve(1).storeBytes(of: byte, as: UInt8.self)
        count += 1
    }

    /// Empties the buffer; memory past `keepingAtMost` bytes is given back.
    mutating func removeAll(keepingAtMost limit: Int) {
        count = 0
        if capacity > limit {
            base?.deallocate()
            base = nil
            capacity = 0
        }
    }

    /// Room for `extra` more bytes; returns where they go.
    private mutating func reserve(_ extra: Int) -> UnsafeMutableRawPointer {
        if count + extra > capacity {
            let grown = max(count + extra, capacity * 2, 4096)
            let bigger = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 16)
            if let base {
                bigger.copyMemory(from: base, byteCount: count)
                base.deallocate()
            }
            base = bigger
            capacity = grown
        }
        return base! + count
    }
}
