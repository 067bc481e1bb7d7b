import SiloServerKit
import SiloWire

/// Builds one of the XML API's answers: GCS's prolog, then elements whose text and attribute values are escaped here,
/// so no route writes markup by hand.
package struct XMLWriter {
    package private(set) var text = "<?xml version='1.0' encoding='UTF-8'?>"

    package init() {

    }

    /// `<name attr="value"…>`, the body, `</name>`.
    package mutating func element(
        _ name: String, attributes: KeyValuePairs<String, String> = [:], _ body: (inout Self) -> Void
    ) {
        text += "<\(name)\(Self.attributes(attributes))>"
        body(&self)
        text += "</\(name)>"
    }

    /// `<name>text</name>`.
    package mutating func element(_ name: String, _ value: String) {
        text += "<\(name)>\(XMLText.escape(value))</\(name)>"
    }

    /// `<name attr="value"…/>`.
    package mutating func empty(_ name: String, attributes: KeyValuePairs<String, String> = [:]) {
        text += "<\(name)\(Self.attributes(attributes))/>"
    }

    private static func attributes(_ pairs: KeyValuePairs<String, String>) -> String {
        pairs.map { " \($0.key)=\"\(XMLText.escape($0.value))\"" }.joined()
    }
}
