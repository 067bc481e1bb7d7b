/// Just enough XML for S3 replies and the GCS XML API, which are flat, attribute-free and machine-written: the text of named
/// elements, found by their literal `<Name>`…`</Name>` tags, with the five predefined entities and numeric character
/// references decoded. Not a general XML parser (no CDATA, comments or namespaces prefixes are expected).
public enum XMLText {
    /// The raw inner text of every `<name>…</name>` element, in document order.
    public static func elements(_ name: String, in xml: Substring) -> [Substring] {
        let open = "<\(name)>"
        let close = "</\(name)>"
        var found: [Substring] = []
        var rest = xml[...]
        while let start = rest.firstRange(of: open) {
            guard let end = rest[start.upperBound...].firstRange(of: close) else { break }
            found.append(rest[start.upperBound..<end.lowerBound])
            rest = rest[end.upperBound...]
        }
        return found
    }

    /// One element found by ``elementsWithAttributes(_:in:)``: its attributes (values decoded) and raw inner text.
    public struct Element: Sendable {
        public var attributes: [String: String]
        public var content: Substring
    }

    /// Every `<name …>…</name>` or `<name …/>` element in document order, for the few documents whose elements carry
    /// attributes (GCS's ACLs: `<Scope type="AllUsers"/>`). Attribute values are quoted with `"` or `'`; an element
    /// of the same name nested inside another is not expected.
    public static func elementsWithAttributes(_ name: String, in xml: Substring) -> [Element] {
        var found: [Element] = []
        var rest = xml[...]
        while let start = rest.firstRange(of: "<\(name)") {
            var cursor = start.upperBound
            // `<ScopeX>` is another element.
            guard cursor < rest.endIndex, [" ", "\t", "\n", "\r", ">", "/"].contains(rest[cursor]) else {
                rest = rest[cursor...]
                continue
            }
            var attributes: [String: String] = [:]
            var selfClosing = false
            while cursor < rest.endIndex, rest[cursor] != ">" {
                let c = rest[cursor]
                if c.isWhitespace || c == "/" {
                    selfClosing = c == "/"
                    cursor = rest.index(after: cursor)
                    continue
                }
                // name="value" (or 'value'); anything else ends the search: the document is not what we read.
                guard let eq = rest[cursor...].firstIndex(where: { $0 == "=" || $0 == ">" || $0 == "/" }),
                    rest[eq] == "="
                else { return found }
                var key = rest[cursor..<eq]
                while key.last?.isWhitespace == true { key = key.dropLast() }
                var open = rest.index(after: eq)
                while open < rest.endIndex, rest[open].isWhitespace { open = rest.index(after: open) }
                guard open < rest.endIndex, rest[open] == "\"" || rest[open] == "'",
                    let close = rest[rest.index(after: open)...].firstIndex(of: rest[open])
                else { return found }
                attributes[String(key)] = decode(rest[rest.index(after: open)..<close])
                cursor = rest.index(after: close)
                selfClosing = false
            }
            guard cursor < rest.endIndex else { break }
            let afterTag = rest.index(after: cursor)
            if selfClosing {
                found.append(Element(attributes: attributes, content: rest[afterTag..<afterTag]))
                rest = rest[afterTag...]
                continue
            }
            guard let end = rest[afterTag...].firstRange(of: "</\(name)>") else { break }
            found.append(Element(attributes: attributes, content: rest[afterTag..<end.lowerBound]))
            rest = rest[end.upperBound...]
        }
        return found
    }

    /// The decoded text of the first `<name>` element.
    public static func value(_ name: String, in xml: Substring) -> String? {
        elements(name, in: xml).first.map { decode($0) }
    }

    /// Replaces entity and character references by their characters.
    public static func decode(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        var out = ""
        var rest = text[...]
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semicolon = rest[amp...].firstIndex(of: ";") else { break }
            let entity = rest[rest.index(after: amp)..<semicolon]
            switch entity {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                if entity.hasPrefix("#x"),
                    let scalar = UInt32(entity.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                {
                    out.unicodeScalars.append(scalar)
                } else if entity.hasPrefix("#"), let scalar = UInt32(entity.dropFirst()).flatMap(Unicode.Scalar.init) {
                    out.unicodeScalars.append(scalar)
                } else {
                    out += rest[amp...semicolon]
                }
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return out + rest
    }

    /// Escapes text for an element's content; control characters other than tab, LF and CR become character
    /// references.
    public static func escape(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out.append(contentsOf: "&amp;".unicodeScalars)
            case "<": out.append(contentsOf: "&lt;".unicodeScalars)
            case ">": out.append(contentsOf: "&gt;".unicodeScalars)
            case "\"": out.append(contentsOf: "&quot;".unicodeScalars)
            case "'": out.append(contentsOf: "&apos;".unicodeScalars)
            // A control character (object names may hold them) as a character reference: raw, it would make the
            // document unreadable to every parser.
            case _ where scalar.value < 0x20 && scalar != "\t" && scalar != "\n" && scalar != "\r":
                out.append(contentsOf: "&#x\(String(scalar.value, radix: 16));".unicodeScalars)
            default: out.append(scalar)
            }
        }
        return String(out)
    }
}
