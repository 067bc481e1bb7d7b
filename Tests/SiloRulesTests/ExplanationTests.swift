import SiloCore
import SiloRules
import Testing

private typealias F = Fixture

/// The explain trace (``RulesProgram/explain(_:documents:listChildMode:)``): which `match` statements were tried,
/// which `allow` statements were evaluated with what outcome, and which statement decided.
@Suite struct ExplanationTests {
    static let rules = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /public/{file} {
              allow read;
            }
            match /users/{uid}/{path=**} {
              allow read: if request.auth != null && request.auth.uid == uid;
              allow write: if request.auth.token.admin == true;
            }
          }
        }
        """

    @Test func aGrantNamesTheAllowThatGranted() throws {
        let program = try F.compile(Self.rules)
        let e = program.explain(F.request(.get, "users/u1/a/b.png", uid: "u1"))
        #expect(e.allowed)
        #expect(e.reason.hasPrefix("allowed by 'allow read' at test.rules:8:"))
        let deciding = try #require(e.decidingStep.map { e.steps[$0] })
        #expect(deciding.kind == .allow)
        #expect(deciding.outcome == .granted)
        #expect(deciding.statement == "allow read: if request.auth != null && request.auth.uid == uid;")
        #expect(deciding.line == 8)
        #expect(deciding.column == 7)
        #expect(deciding.depth == 1)
        // The walk: the outer match consumed a prefix, `/public/{file}` did not fit, `/users/...` matched the path.
        #expect(
            e.steps.map { "\($0.kind.rawValue) \($0.outcome.rawValue) \($0.line)" } == [
                "match prefix 3", "match notMatched 4", "match matched 7", "allow granted 8",
            ])
        #expect(e.steps[0].statement == "match /b/{bucket}/o")
        #expect(e.steps[0].detail == "{bucket}='B'")
        #expect(e.steps[2].detail == "{uid}='u1', {path=**}=/a/b.png")
    }

    @Test func aDenialBlamesTheLastAllowThatDidNotGrant() throws {
        let program = try F.compile(Self.rules)
        let request = F.request(.get, "users/u1/a.png", uid: "u2")
        let e = program.explain(request)
        #expect(!e.allowed)
        #expect(e.reason == program.evaluate(request).reason)
        let deciding = try #require(e.decidingStep.map { e.steps[$0] })
        #expect(deciding.kind == .allow)
        #expect(deciding.outcome == .denied)
        #expect(deciding.detail == "false")
        #expect(deciding.line == 8)
        // `allow write` does not cover get: it is not evaluated, so it is not in the trace.
        #expect(e.steps.filter { $0.kind == .allow }.count == 1)
    }

    @Test func anErrorIsShownWithItsMessage() throws {
        let program = try F.compile(Self.rules)
        // No auth: `request.auth.token` is an error, and an error never grants.
        let e = program.explain(F.request(.create, "users/u1/new.txt", uid: nil, size: 3))
        #expect(!e.allowed)
        let deciding = try #require(e.decidingStep.map { e.steps[$0] })
        #expect(deciding.statement == "allow write: if request.auth.token.admin == true;")
        #expect(deciding.outcome == .denied)
        #expect(deciding.detail.hasPrefix("error: "))
    }

    @Test func noMatchingBlockListsTheMatchesTried() throws {
        let program = try F.compile(Self.rules)
        let e = program.explain(F.request(.get, "elsewhere/x"))
        #expect(!e.allowed)
        #expect(e.reason.hasPrefix("denied: no match block matches /b/B/o/elsewhere/x"))
        #expect(e.steps.allSatisfy { $0.kind == .match })
        #expect(e.steps.map(\.outcome) == [.prefix, .notMatched, .notMatched])
        #expect(e.decidingStep == e.steps.count - 1)
    }

    @Test func anAllowWithoutConditionGrants() throws {
        let program = try F.compile(Self.rules)
        let e = program.explain(F.request(.get, "public/logo.png", uid: nil))
        #expect(e.allowed)
        let deciding = try #require(e.decidingStep.map { e.steps[$0] })
        #expect(deciding.statement == "allow read;")
        #expect(deciding.detail == "true (no condition)")
        // The search stops at the first grant: `/users/...` is never tried.
        #expect(!e.steps.contains { $0.line == 7 })
    }

    @Test func debugOutputIsCollected() throws {
        let program = try F.compile(
            """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o/{name} {
                allow get: if debug(name) == 'nope';
              }
            }
            """)
        let e = program.explain(F.request(.get, "x.txt"))
        #expect(!e.allowed)
        #expect(e.debug == ["'x.txt'"])
    }

    @Test func stepsAreBoundedOnAHugeRuleset() throws {
        var source = "rules_version = '2';\nservice firebase.storage {\n  match /b/{bucket}/o {\n"
        for i in 0..<(RulesExplanation.maxSteps + 50) { source += "    match /p\(i)/{x} { allow read; }\n" }
        source += "  }\n}\n"
        let program = try F.compile(source)
        let e = program.explain(F.request(.get, "nowhere/x"))
        #expect(!e.allowed)
        #expect(e.truncated)
        #expect(e.steps.count == RulesExplanation.maxSteps)
    }

    @Test func theSourceIsAvailable() throws {
        let program = try F.compile(Self.rules)
        #expect(program.source == Self.rules)
    }
}
