extension JSONValue {
    /// Compact UTF-8 serialisation; non-ASCII stays raw, control characters and `"` `\` are escaped.
    public func serialized() -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(256)
        write(to: &out)
        return out
    }

    public var serializedString: String { String(decoding: serialized(), as: UTF8.self) }

    func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        case .bool(let b): out.append(contentsOf: Array((b ? "true" : "false").utf8))
        case .number(let n): out.append(contentsOf: Array(n.utf8))
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (i, member) in object.members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(0x22)
        if s.utf8.withContiguousStorageIfAvailable({ writeEscaped($0, to: &out) }) == nil {
            Array(s.utf8).withUnsafeBufferPointer { writeEscaped($0, to: &out) }
        }
        out.append(0x22)
    }

    /// Copies runs of bytes that need no escape in one append each (most strings are one run).
    private static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        var runStart = 0
        for (i, b) in bytes.enumerated() where b < 0x20 || b == 0x22 || b == 0x5C {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
            runStart = i + 1
            out.append(0x5C)
            switch b {
            case 0x22: out.append(0x22)
            case 0x5C: out.append(0x5C)
            case 0x0A: out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "t"))
            default:
                out.append(UInt8(ascii: "u"))
                out.append(0x30)
                out.append(0x30)
                out.append(hexDigit(b >> 4))
                out.append(hexDigit(b & 0xF))
            }
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? 0x30 + value : 0x57 + value }
}
