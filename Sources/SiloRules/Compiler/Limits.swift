/// Every bound the engine enforces, in one place (Firebase's documented limits plus the ones that keep the
/// process safe).
public enum Limits {
    /// Ruleset source size.
    public static let maxSourceBytes = 256 * 1024
    /// Open brackets, blocks and nested expressions the parser will descend into before giving up; keeps the
    /// recursive-descent parser far from the end of any thread's stack.
    public static let maxParseNesting = 64
    /// Depth of one expression tree, including left-associative chains such as `a + a + …`.
    public static let maxExpressionDepth = 100
    /// User-function call depth.
    public static let maxCallDepth = 20
    /// Evaluator recursion across function calls: expression depth × call depth, capped.
    public static let maxEvaluationDepth = 400
    public static let maxParameters = 7
    public static let maxLets = 10
    /// Expressions evaluated per request; exceeding it denies the request.
    public static let maxExpressions = 1_000
    /// Distinct `firestore.get/exists` documents per request.
    public static let maxDocumentReads = 10
    /// Steps of bulk work (regex VM steps, element comparisons, bytes copied) per request, so that a single
    /// expression over large strings or lists cannot take unbounded time.
    public static let maxWork = 5_000_000
    /// Largest string (UTF-8 bytes) or bytes value, and longest list, an operator may build.
    public static let maxValueBytes = 1 << 20
    public static let maxCollectionCount = 100_000
    /// Match-tree steps per request, bounding backtracking over several recursive wildcards.
    public static let maxMatchSteps = 100_000
    /// Regex pattern length and compiled program size.
    public static let maxRegexPatternBytes = 4_096
    public static let maxRegexProgram = 10_000
    public static let maxRegexRepeat = 1_000
    /// Diagnostics reported per compile.
    public static let maxDiagnostics = 100
}
