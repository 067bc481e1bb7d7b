import SiloCore
import SiloRules
import Testing

/// Compile errors carry the right line, column and message, formatted as `FILE:LINE:COL: message`.
@Suite struct DiagnosticsTests {
    static func diagnostics(_ source: String) -> [RulesDiagnostic] {
        do {
            _ = try RulesProgram.compile(source: source, fileName: "s.rules")
            Issue.record("compiled unexpectedly:\n\(source)")
            return []
        } catch {
            return error.diagnostics
        }
    }

    static func first(_ source: String) -> String {
        diagnostics(source).first.map { "\($0.line):\($0.column): \($0.message)" } ?? "none"
    }

    @Test func syntaxErrorPosition() {
        #expect(
            Self.first("service firebase.storage {{ match /b/{bucket}/o { } }")
                == "1:27: expected 'match', 'function' or '}', found '{'")
        #expect(
            Self.first("service firebase.storage {\n  match /b/{bucket}/o {\n    allow read: if 1 +;\n  }\n}")
                == "3:23: expected an expression, found ';'")
        #expect(Self.first("rules_version = '3';") == "1:17: rules_version must be '1' or '2', not '3'")
        #expect(Self.first("service x { match /a { allow read: if 'abc } }").hasPrefix("1:39: unterminated string"))
        #expect(Self.first("service x { match /a { allow read: if '\\q'; } }") == "1:40: unknown escape sequence \\'q'")
        #expect(Self.first("/* never closed") == "1:1: unterminated block comment")
        #expect(Self.first("service x { allow read; }") == "1:13: 'allow' is only allowed inside a match block")
        #expect(Self.first("service x { match a { } }") == "1:19: expected a match path starting with '/'")
        // Columns count characters, not bytes.
        #expect(Self.first("service x { match /é { allow read: if @; } }") == "1:39: unexpected character '@'")
    }

    @Test func staticChecksReportEveryProblem() {
        let source = """
            rules_version = '2';
            service firebase.storage {
              function a(x) { return b(x); }
              function b(x) { return a(x); }
              function string(s) { return true; }
              function many(a, b, c, d, e, f, g, h) { return true; }
              match /b/{bucket}/o {
                match /{p=**}/x/{q=**} { allow read: if unknownName; }
                match /{bucket} { allow read: if a(1, 2); }
                match /m { allow fetch: if math; }
              }
            }
            """
        let messages = Self.diagnostics(source).map { "\($0.line):\($0.column): \($0.message)" }
        #expect(
            messages == [
                "3:3: function 'a' is recursive; recursion is not allowed",
                "4:3: function 'b' is recursive; recursion is not allowed",
                "5:3: function 'string' would shadow a built-in",
                "6:3: function 'many' has more than 7 parameters",
                "8:20: a match path may contain only one recursive wildcard",
                "8:45: unknown identifier 'unknownName'",
                "9:11: wildcard 'bucket' is already declared by this or an enclosing match",
                "9:38: function 'a' takes 1 arguments, not 2",
                "10:22: unknown method 'fetch'; expected read, write, get, list, create, update or delete",
                "10:32: namespace 'math' can only be used to call its functions, as in math.f(...)",
            ], "\(messages.joined(separator: "\n"))")
    }

    @Test func moreStaticChecks() {
        #expect(
            Self.first("service firebase.storage { match /{p=**}/thumbs { allow read; } }")
                == "1:34: recursive wildcard '{p=**}' must be the last path segment unless rules_version = '2'")
        let lets = (0...10).map { "let v\($0) = \($0);" }.joined(separator: " ")
        #expect(
            Self.first("service firebase.storage { function f() { \(lets) return true; } }")
                == "1:28: function 'f' has more than 10 let bindings")
        #expect(
            Self.first("service firebase.storage { function f(x) { let x = 1; return x; } }")
                == "1:48: 'x' is already a parameter or let in this function")
        #expect(
            Self.first("service firebase.storage { function f() { return true; } function f() { return false; } }")
                == "1:58: function 'f' is declared twice in the same scope")
        #expect(
            Self.first("service firebase.storage { match /a { allow read: if nope(1); } }")
                == "1:54: unknown function 'nope'")
        #expect(
            Self.first("service firebase.storage { match /a { allow read: if math.nope(1); } }")
                == "1:58: unknown function 'math.nope'")
        #expect(
            Self.first("service firebase.storage { match /a { allow read: if int(1, 2) == 1; } }")
                == "1:54: int() takes 1 argument, not 2")
        #expect(
            Self.first("service firebase.storage { match /a { allow read: if 1 is thing; } }")
                == "1:59: unknown type name 'thing'")
        #expect(Self.first("x = 99999999999999999999;").hasPrefix("1:1: expected 'service' or 'function'"))
        #expect(
            Self.first("service s { match /a { allow read: if 99999999999999999999 > 1; } }")
                == "1:39: integer literal 99999999999999999999 does not fit in 64 bits")
        // Functions see wildcards only where they are declared, never the caller's.
        #expect(
            Self.first(
                "service firebase.storage { match /b/{bucket}/o { function f() { return name == 'x'; } match /{name} { allow read: if f(); } } }"
            ) == "1:72: unknown identifier 'name'")
    }

    @Test func formattedOutput() {
        do {
            _ = try RulesProgram.compile(
                source: "service firebase.storage {\n  allow read;\n}", fileName: "storage.rules")
            Issue.record("compiled")
        } catch {
            #expect(error.formatted == "storage.rules:2:3: 'allow' is only allowed inside a match block")
            #expect(
                error.diagnostics[0].formatted(fileName: "f") == "f:2:3: 'allow' is only allowed inside a match block")
        }
    }

    @Test func acceptedSyntaxVariants() throws {
        let source = """
            // Top-level functions and other services are accepted.
            function top() { return true }
            service cloud.firestore { match /databases/{db}/documents { allow read: if whatever.anything; } }
            service firebase.storage {
              match /b/{bucket}/o {
                match /images/profile-photo.v2@x:y%20 { allow read: if top() }
                match /trailing/{x} {
                  allow get, list: if [1, 2,].size() == 2 && {'a': 1,}.size() == 1 && x.size() > 0
                }
              }
            }
            """
        let program = try Fixture.compile(source)
        let policy = RulesAccessPolicy(program: program)
        #expect(policy.allows(Fixture.request(.get, "images/profile-photo.v2@x:y%20")))
        #expect(policy.allows(Fixture.request(.get, "trailing/q")))
        #expect(program.version == 1)
    }
}
