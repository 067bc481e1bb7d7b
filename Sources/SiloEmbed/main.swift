import Foundation

// silo-embed ENUM OUTPUT FILE...: writes OUTPUT, a Swift file declaring `enum ENUM` whose `files` holds the text of
// each FILE by its file name, byte for byte. The EmbedFiles build plugin (Plugins/EmbedFiles) runs it, so that
// `silo serve` carries the OpenAPI document and the console's files in its binary: SwiftPM resources would need a
// bundle beside the binary, and a committed Swift literal of them would be a copy to keep in step by hand.

/// A raw multi-line string literal that holds `text` byte for byte, its lines indented by `indent` spaces (which the
/// compiler strips again, with the closing delimiter's). Nothing in a raw literal is an escape unless followed by
/// its fence, so the fence takes more `#`s than any run that follows a quote or a backslash in the text.
func rawLiteral(_ text: String, indent: Int) -> String {
    var hashes = 1
    while text.contains("\"" + String(repeating: "#", count: hashes))
        || text.contains("\\" + String(repeating: "#", count: hashes))
    {
        hashes += 1
    }
    let fence = String(repeating: "#", count: hashes)
    let pad = String(repeating: " ", count: indent)
    let body = text.split(separator: "\n", omittingEmptySubsequences: false)
        .map { $0.isEmpty ? "" : pad + $0 }.joined(separator: "\n")
    return "\(fence)\"\"\"\n\(body)\n\(pad)\"\"\"\(fence)"
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("silo-embed: \(message)\n".utf8))
    exit(1)
}

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count >= 2, let name = arguments.first, name.allSatisfy({ $0.isLetter || $0.isNumber }) else {
    fail("usage: silo-embed ENUM OUTPUT FILE...")
}
let output = arguments.dropFirst().first!
var entries: [String] = []
for path in arguments.dropFirst(2).sorted() {
    let file = (path as NSString).lastPathComponent
    guard file.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
        fail("\(path): embedded file names are letters, digits, '-', '_' and '.' only")
    }
    guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
        fail("\(path): cannot be read as UTF-8")
    }
    // A multi-line literal turns CR LF and CR into LF: such a file would not come out byte for byte.
    guard !text.utf8.contains(0x0D) else { fail("\(path): carriage returns cannot be embedded byte for byte") }
    entries.append("        \"\(file)\": \(rawLiteral(text, indent: 8)),\n")
}
let swift = """
    // Generated at build time by Plugins/EmbedFiles (Sources/SiloEmbed) from \(arguments.dropFirst(2).count) files.

    /// The embedded files' text by file name.
    enum \(name) {
        static let files: [String: String] = [
    \(entries.joined())    ]
    }

    """
do {
    try Data(swift.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
} catch {
    fail("cannot write \(output): \(error)")
}
