import SiloCore
import SiloRules
import Testing

/// Hostile rulesets and inputs: the process must neither crash nor hang, and a limit hit must deny.
@Suite struct LimitsTests {
    static func rules(_ condition: String, functions: String = "") -> String {
        "rules_version = '2';\nservice firebase.storage {\n\(functions)\nmatch /b/{bucket}/o/{x} { allow read: if \(condition); } }"
    }

    static func compileError(_ source: String) -> String? {
        do {
            _ = try RulesProgram.compile(source: source, fileName: "t")
            return nil
        } catch {
            return error.diagnostics.first?.message
        }
    }

    @Test func deepParenthesesAreACompileError() {
        let deep = String(repeating: "(", count: 10_000) + "true" + String(repeating: ")", count: 10_000)
        #expect(Self.compileError(Self.rules(deep))?.contains("nested too deeply") == true)
    }

    @Test func deepBracketsBracesAndPrefixOperators() throws {
        let lists = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + " == []"
        #expect(Self.compileError(Self.rules(lists))?.contains("nested too deeply") == true)
        let maps = String(repeating: "{'a':", count: 10_000) + "1" + String(repeating: "}", count: 10_000) + " == {}"
        #expect(Self.compileError(Self.rules(maps))?.contains("nested too deeply") == true)
        #expect(Self.compileError(Self.rules(String(repeating: "!", count: 10_000) + "true")) != nil)
        #expect(Self.compileError(Self.rules(String(repeating: "-", count: 10_000) + "1 == 1")) != nil)
        let ternary =
            String(repeating: "true ? ", count: 10_000) + "true" + String(repeating: " : false", count: 10_000)
        #expect(Self.compileError(Self.rules(ternary)) != nil)
        let members = "request" + String(repeating: ".a", count: 10_000) + " == 1"
        #expect(Self.compileError(Self.rules(members))?.contains("nested too deeply") == true)
        let matches =
            "service firebase.storage {" + String(repeating: " match /a {", count: 10_000)
            + String(repeating: "}", count: 10_001)
        #expect(Self.compileError(matches)?.contains("nested too deeply") == true)
        let regexDepth =
            "'a'.matches('" + String(repeating: "(", count: 10_000) + "a" + String(repeating: ")", count: 10_000) + "')"
        #expect(try !Fixture.holds(regexDepth))
    }

    @Test func longLeftAssociativeChainsAreACompileError() {
        let sum = Array(repeating: "1", count: 10_000).joined(separator: " + ") + " > 0"
        #expect(Self.compileError(Self.rules(sum))?.contains("nested too deeply") == true)
        let comparisons = Array(repeating: "1", count: 10_000).joined(separator: " < ")
        #expect(Self.compileError(Self.rules(comparisons))?.contains("nested too deeply") == true)
    }

    @Test func longLogicalChainsCompileAndStayWithinTheBudget() throws {
        // `||` chains are flattened, so 10k terms parse; evaluating them all exceeds 1000 expressions → deny.
        let manyFalse = Array(repeating: "false", count: 10_000).joined(separator: " || ") + " || true"
        #expect(try !Fixture.holds(manyFalse))
        let decision = try Fixture.compile(Self.rules(manyFalse)).evaluate(Fixture.request(.get, "x"))
        #expect(decision.reason == "denied: more than 1000 expressions evaluated")
        let short = Array(repeating: "false", count: 500).joined(separator: " || ") + " || true"
        #expect(try Fixture.holds(short))
        let ands = Array(repeating: "a", count: 10_000).joined(separator: " && ")
        #expect(Self.compileError(Self.rules(ands))?.contains("unknown identifier 'a'") == true)
    }

    @Test func callDepthLimit() throws {
        func chain(_ n: Int) -> String {
            (1..<n).map { "function f\($0)() { return f\($0 + 1)(); }" }.joined(separator: "\n")
                + "\nfunction f\(n)() { return true; }"
        }
        let ok = try Fixture.compile(Self.rules("f1()", functions: chain(20)))
        #expect(ok.evaluate(Fixture.request(.get, "x")).allowed)
        let tooDeep = try Fixture.compile(Self.rules("f1()", functions: chain(21)))
        let decision = tooDeep.evaluate(Fixture.request(.get, "x"))
        #expect(!decision.allowed)
        #expect(decision.reason == "denied: function call depth exceeds 20")
        // Even absorbed by `||`, a limit hit denies the whole request.
        let absorbed = try Fixture.compile(Self.rules("f1() || true", functions: chain(21)))
        #expect(!absorbed.evaluate(Fixture.request(.get, "x")).allowed)
    }

    @Test func exponentialFanOutHitsTheExpressionBudget() throws {
        let functions =
            (1..<20).map { "function g\($0)(v) { return g\($0 + 1)(v) && g\($0 + 1)(v); }" }
            .joined(separator: "\n") + "\nfunction g20(v) { return v; }"
        let program = try Fixture.compile(Self.rules("g1(true)", functions: functions))
        let clock = ContinuousClock()
        let start = clock.now
        let decision = program.evaluate(Fixture.request(.get, "x"))
        #expect(!decision.allowed)
        #expect(clock.now - start < .seconds(1))
    }

    @Test func stringGrowthIsBounded() throws {
        let functions =
            (1..<20).map { "function d\($0)(s) { let t = s + s; let u = t + t; return d\($0 + 1)(u + u); }" }
            .joined(separator: "\n") + "\nfunction d20(s) { return s.size() > 0; }"
        let program = try Fixture.compile(Self.rules("d1('abcdefgh')", functions: functions))
        #expect(!program.evaluate(Fixture.request(.get, "x")).allowed)
    }

    @Test func pathologicalRegexIsLinear() throws {
        let input = String(repeating: "a", count: 5_000) + "!"
        let program = try Fixture.compile(Self.rules("x.matches('(a*)*b') == false && x.matches('(a|aa)*!')"))
        let clock = ContinuousClock()
        let start = clock.now
        #expect(program.evaluate(Fixture.request(.get, input)).allowed)
        #expect(clock.now - start < .seconds(2))
        #expect(try !Fixture.holds("'a'.matches('a{1001}')"))
        #expect(try !Fixture.holds("'a'.matches('((((a{100}){100}){100}){100})')"))
    }

    @Test func manyRecursiveWildcardsAreBounded() throws {
        let nested = (0..<8).map { "match /{w\($0)=**} {" }.joined(separator: " ")
        let source =
            "rules_version = '2'; service firebase.storage { match /b/{bucket}/o { \(nested) allow read: if false; "
            + String(repeating: "}", count: 8) + " } }"
        let program = try Fixture.compile(source)
        let path = Array(repeating: "s", count: 200).joined(separator: "/")
        let clock = ContinuousClock()
        let start = clock.now
        let decision = program.evaluate(Fixture.request(.get, path))
        #expect(!decision.allowed)
        #expect(clock.now - start < .seconds(2))
    }

    @Test func sourceSizeLimit() {
        let big = "service firebase.storage {}" + String(repeating: " ", count: 256 * 1024)
        #expect(Self.compileError(big)?.contains("the limit is 262144") == true)
    }

    @Test func firestoreReadLimit() throws {
        struct Counting: DocumentSource {
            func document(at path: [String]) throws -> [String: RulesValue]? { [:] }
        }
        let checks = (0..<11).map { "firestore.exists(/databases/(default)/documents/c/d\($0))" }
        let program = try Fixture.compile(Self.rules(checks.joined(separator: " && ")))
        let policy = RulesAccessPolicy(program: program, documents: Counting())
        #expect(!policy.allows(Fixture.request(.get, "x")))
        let ten = try Fixture.compile(Self.rules(checks.prefix(10).joined(separator: " && ") + " && " + checks[0]))
        #expect(RulesAccessPolicy(program: ten, documents: Counting()).allows(Fixture.request(.get, "x")))
    }
}
