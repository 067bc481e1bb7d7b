import SiloCore

/// An ordered list of header fields with case-insensitive lookup.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)] {
        didSet { wireFormat = nil }
    }
    /// The fields as `Name: value\r\n` lines, set by ``preformatted()`` for headers sent many times unchanged (a
    /// version's download headers); any change drops it. Only set when no field is one the transport writes itself
    /// (``isTransportField(_:)``) or `Date`, so a transport may copy it as it is.
    public private(set) var wireFormat: [UInt8]?

    public init() { fields = [] }
    /// Room for `minimumCapacity` fields without growing (responses whose header count is known).
    public init(minimumCapacity: Int) {
        fields = []
        fields.reserveCapacity(minimumCapacity)
    }
    public init(dictionaryLiteral elements: (String, String)...) { fields = elements.map { ($0.0, $0.1) } }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    /// The first value of `name`, compared case-insensitively.
    public subscript(name: String) -> String? {
        // By index into the buffer: iterating `fields` copied each (name, value) pair, two retains and releases per
        // field, for lookups that mostly find nothing.
        let count = name.utf8.count
        return fields.withUnsafeBufferPointer { buffer in
            for index in buffer.indices
            where buffer[index].name.utf8.count == count && equalsIgnoringCase(buffer[index].name, name) {
                return buffer[index].value
            }
            return nil
        }
    }

    public func values(_ name: String) -> [String] {
        fields.filter { equalsIgnoringCase($0.name, name) }.map(\.value)
    }

    public mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }

    /// Room for `count` fields without regrowing (a transport knows the count from the head's lines).
    public mutating func reserveCapacity(_ count: Int) { fields.reserveCapacity(count) }

    /// Replaces every value of `name` with one.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name, value))
    }

    public mutating func remove(_ name: String) { fields.removeAll { equalsIgnoringCase($0.name, name) } }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    /// These headers with their ``wireFormat`` computed (unchanged when a field is one the transport owns, or one
    /// a transport must refuse to send).
    public func preformatted() -> HTTPHeaders {
        guard wireFormat == nil,
            !fields.contains(where: {
                Self.isTransportField($0.name) || equalsIgnoringCase($0.name, "Date") || !Self.isSendable($0)
            })
        else {
            return self
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 })
        for field in fields {
            bytes.append(contentsOf: field.name.utf8)
            bytes.append(contentsOf: ": ".utf8)
            bytes.append(contentsOf: field.value.utf8)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        var copy = self
        copy.wireFormat = bytes
        return copy
    }

    /// Whether a field may go on the wire: a token for a name and a value without CR, LF, NUL or other controls
    /// (RFC 9110 §5). Values are checked where they enter; this is the transports' second wall, so no
    /// stored value can ever split a response.
    public static func isSendable(_ field: (name: String, value: String)) -> Bool {
        !field.name.isEmpty && field.name.withUTF8Bytes { $0.allSatisfy(isTokenByte) } && FieldText.isValid(field.value)
    }

    /// RFC 9110 tchar.
    public static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: true
        default: false
        }
    }

    /// Framing and connection fields (`Connection`, `Content-Length`, `Transfer-Encoding`): the transport writes
    /// them to match what it sends, and drops a handler's values for them.
    public static func isTransportField(_ name: String) -> Bool {
        switch name.utf8.count {
        case 10: equalsIgnoringCase(name, "Connection")
        case 14: equalsIgnoringCase(name, "Content-Length")
        case 17: equalsIgnoringCase(name, "Transfer-Encoding")
        default: false
        }
    }
}

/// ASCII case-insensitive comparison (header names and tokens are ASCII).
public func equalsIgnoringCase(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
    guard a.utf8.count == b.utf8.count else { return false }
    // Over the bytes, not two UTF8Views in `zip`: header lookups run this several times per request, and the views
    // cost ten times as many instructions.
    return a.withUTF8Bytes { x in
        b.withUTF8Bytes { y in
            for index in 0..<x.count where !sameIgnoringCase(x[index], y[index]) { return false }
            return true
        }
    }
}

@inline(__always)
private func sameIgnoringCase(_ x: UInt8, _ y: UInt8) -> Bool {
    if x == y { return true }
    let lx = (x >= 0x41 && x <= 0x5A) ? x + 32 : x
    let ly = (y >= 0x41 && y <= 0x5A) ? y + 32 : y
    return lx == ly
}
