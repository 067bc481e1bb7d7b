import Foundation

/// The config file: one `key = value` per line, where the key is an option's long name without dashes
/// (`endpoint = http://127.0.0.1:9199`, `port = 9200`). Blank lines and lines starting with `#` are ignored;
/// whitespace around keys and values is trimmed; a value may be wrapped in double quotes to keep outer spaces.
/// Flags take `true`/`false` (also `yes`/`no`, `1`/`0`). A repeated key keeps its last value, except for options
/// that repeat, which collect every value. Keys that a command does not know are ignored by that command, since
/// one file serves every command.
public struct ConfigFile: Sendable, Equatable {
    public var path: String
    public var entries: [(key: String, value: String)]

    public static func == (a: ConfigFile, b: ConfigFile) -> Bool {
        a.path == b.path && a.entries.elementsEqual(b.entries, by: { $0 == $1 })
    }

    public init(path: String, entries: [(key: String, value: String)]) {
        self.path = path
        self.entries = entries
    }

    /// Parses `text`; a malformed line is a usage error naming `path:line`.
    public init(path: String, text: String) throws {
        self.path = path
        entries = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw ValidationError("\(path):\(index + 1): expected 'key = value', found '\(line)'")
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            guard !key.isEmpty else { throw ValidationError("\(path):\(index + 1): missing key before '='") }
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            entries.append((key, value))
        }
    }

    /// Reads the file at `path`. With `required` false a missing file is an empty config.
    public static func load(path: String, required: Bool) throws -> ConfigFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            if required || FileManager.default.fileExists(atPath: path) {
                throw ValidationError("cannot read config file \(path)")
            }
            return ConfigFile(path: path, entries: [])
        }
        return try ConfigFile(path: path, text: String(decoding: data, as: UTF8.self))
    }

    /// `$XDG_CONFIG_HOME/silo/config`, else `$HOME/.config/silo/config`.
    public static func defaultPath(environment: [String: String]) -> String? {
        if let xdg = environment["XDG_CONFIG_HOME"], !xdg.isEmpty { return xdg + "/silo/config" }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.config/silo/config" }
        return nil
    }

    public func values(for key: String) -> [String] { entries.filter { $0.key == key }.map(\.value) }
}
