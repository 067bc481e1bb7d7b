// libFuzzer harness for SiloWire's JSON parser and writer (JSONParser.swift, JSONWriter.swift). The input is a
// JSON text. Properties:
// - the parser accepts exactly what a reference RFC 8259 validator written here accepts (strict grammar, UTF-8,
//   surrogate pairs, no leading zeros, nesting at most JSONValue.maxDepth, numbers of at most
//   JSONValue.maxNumberLength characters, no key twice in one object);
// - parse → serialize → parse is the identity, and serialize is a fixed point byte for byte;
// - the serialization is valid UTF-8 with no raw control characters, and its nesting equals the value's;
// - a refused text names an offset inside it;
// - the stored-field decoders built on it (StoredFieldJSON) round-trip what they accept, its `["a","b"]` shortcut
//   agrees with the parser, and a MetadataChanges decoded from any object applies idempotently.
import SiloCore

@testable import SiloWire

// MARK: - Reference validator

private struct Validator {
    let b: [UInt8]
    var i = 0
    init(_ bytes: [UInt8]) { b = bytes }

    struct Invalid: Error {}

    mutating func ws() { while i < b.count, [0x20, 0x0A, 0x0D, 0x09].contains(b[i]) { i += 1 } }

    mutating func expect(_ byte: UInt8) throws(Invalid) {
        guard i < b.count, b[i] == byte else { throw Invalid() }
        i += 1
    }

    /// A value whose containers start at nesting `depth` (the top-level value is at depth 0).
    mutating func value(_ depth: Int) throws(Invalid) {
        guard depth < JSONValue.maxDepth, i < b.count else { throw Invalid() }
        switch b[i] {
        case 0x7B:
            i += 1
            ws()
            if i < b.count, b[i] == 0x7D {
                i += 1
                return
            }
            // Keys compare as Swift Strings (canonical equivalence), as SiloWire's parser compares them.
            var keys = Set<String>()
            while true {
                ws()
                guard keys.insert(try string()).inserted else { throw Invalid() }
                ws()
                try expect(0x3A)
                ws()
                try value(depth + 1)
                ws()
                guard i < b.count else { throw Invalid() }
                if b[i] == 0x2C {
                    i += 1
                    continue
                }
                try expect(0x7D)
                return
            }
        case 0x5B:
            i += 1
            ws()
            if i < b.count, b[i] == 0x5D {
                i += 1
                return
            }
            while true {
                ws()
                try value(depth + 1)
                ws()
                guard i < b.count else { throw Invalid() }
                if b[i] == 0x2C {
                    i += 1
                    continue
                }
                try expect(0x5D)
                return
            }
        case 0x22: _ = try string()
        case 0x74: try word("true")
        case 0x66: try word("false")
        case 0x6E: try word("null")
        default: try number()
        }
    }

    mutating func word(_ w: String) throws(Invalid) { for byte in w.utf8 { try expect(byte) } }

    func digit(_ at: Int) -> Bool { at < b.count && b[at] >= 0x30 && b[at] <= 0x39 }

    /// A number, at most JSONValue.maxNumberLength characters (SiloWire's bound on untrusted input).
    mutating func number() throws(Invalid) {
        let start = i
        try numberToken()
        guard i - start <= JSONValue.maxNumberLength else { throw Invalid() }
    }

    mutating func numberToken() throws(Invalid) {
        if i < b.count, b[i] == 0x2D { i += 1 }
        guard digit(i) else { throw Invalid() }
        if b[i] == 0x30 {
            i += 1
            if digit(i) { throw Invalid() }
        } else {
            while digit(i) { i += 1 }
        }
        if i < b.count, b[i] == 0x2E {
            i += 1
            guard digit(i) else { throw Invalid() }
            while digit(i) { i += 1 }
        }
        if i < b.count, b[i] == 0x65 || b[i] == 0x45 {
            i += 1
            if i < b.count, b[i] == 0x2B || b[i] == 0x2D { i += 1 }
            guard digit(i) else { throw Invalid() }
            while digit(i) { i += 1 }
        }
    }

    mutating func hex4() throws(Invalid) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard i < b.count else { throw Invalid() }
            let c = b[i]
            let d: UInt32
            if c >= 0x30 && c <= 0x39 {
                d = UInt32(c - 0x30)
            } else if c >= 0x41 && c <= 0x46 {
                d = UInt32(c - 0x37)
            } else if c >= 0x61 && c <= 0x66 {
                d = UInt32(c - 0x57)
            } else {
                throw Invalid()
            }
            v = v * 16 + d
            i += 1
        }
        return v
    }

    /// A string: escapes as RFC 8259 7, raw bytes must form valid UTF-8 (checked by scalar).
    /// A string; returns its decoded text (object keys are compared).
    mutating func string() throws(Invalid) -> String {
        try expect(0x22)
        var text = String.UnicodeScalarView()
        func append(_ scalar: UInt32) { text.append(Unicode.Scalar(scalar)!) }
        while true {
            guard i < b.count else { throw Invalid() }
            let c = b[i]
            if c == 0x22 {
                i += 1
                return String(text)
            }
            if c < 0x20 { throw Invalid() }
            if c == 0x5C {
                i += 1
                guard i < b.count else { throw Invalid() }
                let e = b[i]
                i += 1
                let simple: [UInt8: UInt32] = [
                    0x22: 0x22, 0x5C: 0x5C, 0x2F: 0x2F, 0x62: 8, 0x66: 12, 0x6E: 10, 0x72: 13, 0x74: 9,
                ]
                if let escaped = simple[e] {
                    append(escaped)
                    continue
                }
                guard e == 0x75 else { throw Invalid() }
                let unit = try hex4()
                if unit >= 0xD800 && unit <= 0xDBFF {
                    try expect(0x5C)
                    try expect(0x75)
                    let low = try hex4()
                    guard low >= 0xDC00 && low <= 0xDFFF else { throw Invalid() }
                    append(0x10000 + (unit - 0xD800) << 10 + (low - 0xDC00))
                } else if unit >= 0xDC00 && unit <= 0xDFFF {
                    throw Invalid()
                } else {
                    append(unit)
                }
                continue
            }
            if c < 0x80 {
                append(UInt32(c))
                i += 1
                continue
            }
            // One UTF-8 sequence (RFC 3629: no overlongs, no surrogates, at most U+10FFFF).
            let length: Int
            let minimum: UInt32
            var scalar: UInt32
            switch c {
            case 0xC2...0xDF: (length, minimum, scalar) = (2, 0x80, UInt32(c & 0x1F))
            case 0xE0...0xEF: (length, minimum, scalar) = (3, 0x800, UInt32(c & 0x0F))
            case 0xF0...0xF4: (length, minimum, scalar) = (4, 0x10000, UInt32(c & 0x07))
            default: throw Invalid()
            }
            for k in 1..<length {
                guard i + k < b.count, b[i + k] & 0xC0 == 0x80 else { throw Invalid() }
                scalar = scalar << 6 | UInt32(b[i + k] & 0x3F)
            }
            guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else { throw Invalid() }
            append(scalar)
            i += length
        }
    }

    static func accepts(_ bytes: [UInt8]) -> Bool {
        var v = Validator(bytes)
        do {
            v.ws()
            try v.value(0)
            v.ws()
            return v.i == bytes.count
        } catch {
            return false
        }
    }
}

// MARK: - Structure

/// Containers nested, counting the outermost (a scalar is 0).
private func nesting(_ value: JSONValue) -> Int {
    switch value {
    case .array(let items): 1 + (items.map(nesting).max() ?? 0)
    case .object(let object): 1 + (object.members.map { nesting($0.value) }.max() ?? 0)
    default: 0
    }
}

private func nesting(of text: [UInt8]) -> Int {
    var depth = 0
    var deepest = 0
    var inString = false
    var escaped = false
    for byte in text {
        if inString {
            if escaped {
                escaped = false
            } else if byte == 0x5C {
                escaped = true
            } else if byte == 0x22 {
                inString = false
            }
            continue
        }
        switch byte {
        case 0x22: inString = true
        case 0x5B, 0x7B:
            depth += 1
            deepest = max(deepest, depth)
        case 0x5D, 0x7D: depth -= 1
        default: break
        }
    }
    return deepest
}

@_cdecl("LLVMFuzzerTestOneInput")
public func jsonFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let expected = Validator.accepts(input)
    // The shortcut for the common stored shape `["a","b"]` must agree with the parser.
    if let plain = StoredFieldJSON.plainStringList(input) {
        require(
            (try? JSONValue.parse(input)) == .array(plain.map(JSONValue.string)),
            "plainStringList \(plain) disagrees with the parser on \(hex(input))")
    }
    let value: JSONValue
    do {
        value = try JSONValue.parse(input)
    } catch let error as JSONParseError {
        require(!expected, "refused (\(error)) what the reference accepts: \(hex(input))")
        require(error.offset >= 0 && error.offset <= input.count, "error offset \(error.offset) of \(input.count)")
        return 0
    } catch {
        fail("parse threw \(type(of: error))")
    }
    require(expected, "accepted what the reference refuses: \(hex(input))")

    let text = value.serialized()
    require(String(validating: text, as: UTF8.self) != nil, "serialization is not UTF-8: \(hex(text))")
    require(!text.contains { $0 < 0x20 }, "raw control character in \(hex(text))")
    require(nesting(of: text) == nesting(value), "serialized nesting \(nesting(of: text)) vs \(nesting(value))")
    require(nesting(value) <= JSONValue.maxDepth, "nesting \(nesting(value)) accepted")
    guard let again = try? JSONValue.parse(text) else { fail("serialization does not parse: \(hex(text))") }
    require(again == value, "parse(serialize(v)) != v for \(hex(input))")
    require(again.serialized() == text, "serialize is not a fixed point: \(hex(text)) vs \(hex(again.serialized()))")
    require(Validator.accepts(text), "the reference refuses the serialization \(hex(text))")

    // Stored fields (object rows in SQLite/PostgreSQL hold these).
    if let map = try? StoredFieldJSON.stringMap(input, column: "fuzz") {
        let back = try? StoredFieldJSON.stringMap(Array(StoredFieldJSON.encode(map).utf8), column: "fuzz")
        require(back == map, "string map does not round-trip: \(map)")
    }
    if let list = try? StoredFieldJSON.stringList(input, column: "fuzz") {
        let back = try? StoredFieldJSON.stringList(Array(StoredFieldJSON.encode(list).utf8), column: "fuzz")
        require(back == list, "string list does not round-trip: \(list)")
    }
    if let changes = try? MetadataChanges(json: value) {
        var fields = ObjectFields(contentType: "a/b", customMetadata: ["k": "v"])
        let before = fields
        if (try? changes.apply(to: &fields)) != nil {
            // Applying it again is accepted too (the result was checked) and changes nothing.
            var twice = fields
            require((try? changes.apply(to: &twice)) != nil, "a change accepted once is refused the second time")
            require(twice == fields, "applying the same metadata change twice differs: \(hex(input))")
        } else {
            require(fields == before, "a refused metadata change altered the fields: \(hex(input))")
        }
    }
    return 0
}
