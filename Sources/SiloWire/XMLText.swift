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
