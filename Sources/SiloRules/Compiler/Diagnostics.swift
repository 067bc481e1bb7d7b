/// One compile problem, positioned for `FILE:LINE:COL: message` output.
public struct RulesDiagnostic: Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var message: String

    public init(line: Int, column: Int, message: String) {
        self.line = line
        self.column = column
        self.message = message
    }

    /// `FILE:LINE:COL: message`, the format of `silo rules check`.
    public func formatted(fileName: String) -> String { "\(fileName):\(line):\(column): \(message)" }
    public var description: String { "\(line):\(column): \(message)" }
}

/// A ruleset that cannot be loaded, with every diagnostic found (parsing stops at the first syntax error; the
/// static checks report all they find).
public struct RulesCompileError: Error, Sendable, CustomStringConvertible {
    public var fileName: String
    public var diagnostics: [RulesDiagnostic]

    public init(fileName: String, diagnostics: [RulesDiagnostic]) {
        self.fileName = fileName
        self.diagnostics = diagnostics
    }

    /// One `FILE:LINE:COL: message` line per diagnostic, in source order.
    public var formatted: String { diagnostics.map { $0.formatted(fileName: fileName) }.joined(separator: "\n") }
    public var description: String { formatted }
}
