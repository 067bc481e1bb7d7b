import SiloCore
import SiloRules
import Testing

/// Expression-level behaviour: the conformance checklist, operators, and error absorption.
@Suite struct LanguageTests {
    @Test(
        "conformance checklist",
        arguments: [
            "int('2') == 2", "int(2.9) == 2", "float(1) == 1.0", "string(2.0) == '2.0'", "string(null) == 'null'",
            "1 == 1.0", "'a' + 'b' == 'ab'", "'abc'[0:2] == 'ab'", "'ABC'.lower() == 'abc'",
            "'banana'.replace('a','o') == 'bonono'", "'a/b/c'.split('/') == ['a','b','c']",
            "['a','b'].hasOnly(['b','a'])", "!['a','b'].hasOnly(['a','c'])", "['a'].hasAny([]) == false",
            "{'a':3}.get('c', 7) == 7", "{'a':{'b':1}}.get(['a','b'], 7) == 1",
            "{'a':1,'b':2}.diff({'a':1,'c':3}).addedKeys() == ['b'].toSet()",
            "math.round(2.5) == 3", "math.floor(2.7) == 2", "math.pow(4, 0.5) == 2",
            #"b'\xFB\xEF\xBE'.toBase64() == '----'"#, "b'**'.toHexString() == '2A2A'",
            "duration.abs(duration.value(-10,'s')) == duration.value(10,'s')",
            "timestamp.date(1984,1,2).toMillis() == 441849600000", "7 / 2 == 3", "-7 / 2 == -3", "7 % -2 == 1",
        ])
    func checklist(_ expression: String) throws {
        #expect(try Fixture.holds(expression), "\(expression)")
    }

    @Test(
        "library and operators",
        arguments: [
            #"b'*' == b'\x2A' && b'*' == b'\052'"#, "'héllo'.size() == 5", "'  x \\t'.trim() == 'x'",
            "'aXbXc'.split('X').size() == 3", "'a,b,,'.split(',') == ['a', 'b']", "',a'.split(',') == ['', 'a']",
            "'Hello'.matches('(?i)hello')", "!'xhello'.matches('hello')", "'a.b'.matches('a\\\\.b')",
            "!'axb'.matches('a\\\\.b')", "'baaac'.replace('a+', '-') == 'b-c'", "'abc'.upper() == 'ABC'",
            "'2' + string(3) == '23'", "[1, 2] + [3] == [1, 2, 3]", "[1,2,3].removeAll([2]) == [1,3]",
            "['x','y'].join('-') == 'x-y'", "[1,1,2].toSet().size() == 2",
            "[1,2].toSet().union([3].toSet()).size() == 3",
            "[1,2].toSet().intersection([2,3]) == [2].toSet()", "[1,2].toSet().difference([2]) == [1].toSet()",
            "{'a':1}.keys() == ['a']", "{'a':1}.values() == [1]", "{'a':1, 'b':2}.size() == 2",
            "{'a':1,'b':2}.diff({'a':2,'c':3}).affectedKeys() == ['a','b','c'].toSet()",
            "{'a':1,'b':2}.diff({'a':2,'b':2}).unchangedKeys() == ['b'].toSet()",
            "{'a':1}.diff({'b':1}).removedKeys() == ['b'].toSet()",
            "{'a':1}.diff({'a':2}).changedKeys() == ['a'].toSet()",
            "1 < 2.5 && 2.5 < 3 && 'a' < 'b' && b'a' < b'b'", "1 is int && 1 is number && 1.5 is number",
            "'x' is string && [1] is list && {} is map && null == null && !(null is map)",
            "request.time is timestamp && request.path is path", "(1 == 'a') == false", "[1,[2]] == [1,[2]]",
            "2 in [1,2] && 'a' in {'a':1} && !('b' in {'a':1}) && 1 in [1].toSet()",
            "true ? 1 == 1 : 1 / 0 == 1", "math.abs(-10) == 10 && math.abs(-2.5) == 2.5", "math.ceil(1.2) == 2",
            "math.sqrt(2.25) == 1.5 && math.pow(2, 2) == 4", "math.isNaN(math.sqrt(-1)) && math.isInfinite(1.0 / 0)",
            "int('-5') == -5 && float('1e3') == 1000.0 && bool('true')", "string(true) == 'true' && string(-3) == '-3'",
            "path('/b/x/o/a') == /b/x/o/a && path('b/x') == /b/x", "/a/$('b' + 'c')/d == path('a/bc/d')",
            "/databases/(default)/documents/x[1] == '(default)'",
            "duration.value(1, 'h') == duration.time(1, 0, 0, 0)", "duration.value(90, 's').seconds() == 90",
            "duration.value(-1500, 'ms').seconds() == -1 && duration.value(-1500, 'ms').nanos() == -500000000",
            "timestamp.date(2024, 2, 29).dayOfYear() == 60", "timestamp.date(2024, 1, 1).dayOfWeek() == 1",
            "timestamp.value(1000).toMillis() == 1000",
            "timestamp.date(2000,1,1) + duration.value(1,'d') == timestamp.date(2000,1,2)",
            "timestamp.date(2000,1,2) - timestamp.date(2000,1,1) == duration.value(24,'h')",
            "(timestamp.date(2000,3,4) + duration.time(5,6,7,8)).hours() == 5",
            "(timestamp.date(2000,3,4) + duration.time(5,6,7,8)).time() == duration.time(5,6,7,8)",
            "timestamp.date(2000,3,4).year() == 2000 && timestamp.date(2000,3,4).month() == 3",
            "request.time > timestamp.date(2020, 1, 1)", "latlng.value(0, 0).distance(latlng.value(0, 1)) > 111000",
            "latlng.value(1.5, 2).latitude() == 1.5",
            "hashing.md5('').toHexString() == 'D41D8CD98F00B204E9800998ECF8427E'",
            "hashing.sha256('abc').toHexString() == 'BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD'",
            "hashing.crc32('123456789').toHexString() == 'CBF43926'",
            "hashing.crc32c('123456789').toHexString() == 'E3069283'",
            "hashing.md5(b'abc') == hashing.md5('abc')", "'abc'.toUtf8() == b'abc' && b'ab'.size() == 2",
            "debug(1) == 1", "[1,2,3][1:3] == [2,3]", "'héllo'[1] == 'é'", "{'a':{'b':2}}['a'].b == 2",
            "0x10 == 16 && .5 == 0.5 && 1e2 == 100.0 && 12. == 12.0", "'\\u00e9' == 'é' && '\\x41' == 'A'",
            "r'\\d' == '\\\\d'", "-9223372036854775807 - 1 < 0",
        ])
    func library(_ expression: String) throws {
        #expect(try Fixture.holds(expression), "\(expression)")
    }

    /// Each of these is ⊥ or false and must not grant.
    @Test(
        "never grants",
        arguments: [
            "1 / 0 == 0", "1 % 0 == 0", "9223372036854775807 + 1 > 0", "int('abc') == 0", "int(' 2') == 2",
            "int('2.0') == 2", "[1][5] == 1", "'abc'[5] == 'c'", "{'a':1}.b == 1", "null.x == 1", "1 < 'a'",
            "!1", "1 && true", "'x'.nope()", "'x'.matches('(')", "'x'.matches('(a)\\\\1')", "'x'.matches('(?=x)x')",
            "[1][-1] == 1", "'abc'[2:1] == ''", "timestamp.date(2023, 2, 29) != null", "duration.value(1, 'y') != null",
            "latlng.value(91, 0) != null", "1 in 1", "{1: 2} != null", "{'a':1,'a':2} != null",
            "request.auth.token.missing == true", "resource.size + 'a' == 1", "-(-9223372036854775807 - 1) > 0",
            "'a' * 2 == 'aa'", "int(1e300) > 0", "request.resource.size > 0", "1 == 1 ? 1 : 2",
            "firestore.exists(/databases/(default)/documents/a/b)",
        ])
    func neverGrants(_ expression: String) throws {
        #expect(try !Fixture.holds(expression), "\(expression)")
    }

    /// The truth tables of `&&` and `||` with ⊥ = `1/0 == 0` and a non-bool (`1`) counting as ⊥.
    @Test func absorptionTables() throws {
        let t = "true"
        let f = "false"
        let e = "(1/0 == 0)"
        let n = "1"
        let and: [(String, String, Bool)] = [
            (t, t, true), (t, f, false), (t, e, false), (f, e, false), (e, f, false), (e, t, false), (e, e, false),
            (f, f, false), (n, f, false), (t, n, false),
        ]
        for (a, b, want) in and { #expect(try Fixture.holds("\(a) && \(b)") == want, "\(a) && \(b)") }
        // `a && b` is false (not ⊥) when either side is false, so negating it must grant.
        for (a, b) in [(f, e), (e, f), (f, n)] { #expect(try Fixture.holds("!(\(a) && \(b))"), "!(\(a) && \(b))") }
        for (a, b) in [(t, e), (e, t), (e, e)] { #expect(try !Fixture.holds("!(\(a) && \(b))"), "!(\(a) && \(b))") }
        let or: [(String, String, Bool)] = [
            (t, e, true), (e, t, true), (f, e, false), (e, f, false), (e, e, false), (f, f, false), (n, t, true),
        ]
        for (a, b, want) in or { #expect(try Fixture.holds("\(a) || \(b)") == want, "\(a) || \(b)") }
        // `false || ⊥` is ⊥, not false: its negation must not grant.
        for (a, b) in [(f, e), (e, f), (e, e)] { #expect(try !Fixture.holds("!(\(a) || \(b))"), "!(\(a) || \(b))") }
        #expect(try Fixture.holds("!(false || false)"))
        #expect(try !Fixture.holds("!\(e)"))
        #expect(try !Fixture.holds("\(e) ? true : true"))
    }

    @Test func equalityWithNullNeverErrors() throws {
        #expect(try Fixture.holds("request.resource == null"))
        #expect(try Fixture.holds("request.auth != null"))
        #expect(try Fixture.holds("resource == null"))
    }

    @Test func functionArgumentErrorsMatterOnlyWhenUsed() throws {
        let program = try Fixture.compile(
            """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o/{x} {
                function ignore(a, b) { let unused = 1 / 0; return b; }
                allow read: if ignore(1 / 0, true);
              }
            }
            """)
        #expect(RulesAccessPolicy(program: program).allows(Fixture.request(.get, "x")))
    }

    @Test func decisionExplainsDenial() throws {
        let program = try Fixture.compile(SpecRules.r4)
        let denied = program.evaluate(Fixture.request(.create, "users/u1/p.png", uid: "u2", size: 1))
        #expect(!denied.allowed)
        #expect(denied.reason.contains("test.rules:6:7 allow write: false"), "\(denied.reason)")
        let none = program.evaluate(Fixture.request(.get, "nowhere"))
        #expect(none.reason == "denied: no match block matches /b/B/o/nowhere")
        let granted = program.evaluate(Fixture.request(.get, "users/u1/p.png"))
        #expect(granted.reason == "allowed by 'allow read' at test.rules:5:7")
    }

    @Test func requestResourceFields() throws {
        let fields = [
            "request.resource.name == 'x'", "request.resource.bucket == 'B'", "request.resource.size == 7",
            "request.resource.contentType == 'text/plain'", "request.resource.metadata == {'k': 'v'}",
            "request.resource.contentEncoding == null", "request.resource.metageneration == 1",
            "request.resource.timeCreated == request.time",
        ]
        let program = try Fixture.compile(
            "rules_version = '2'; service firebase.storage { match /b/{bucket}/o/{x} { allow create: if "
                + fields.joined(separator: " && ") + "; } }")
        let decision = program.evaluate(
            Fixture.request(.create, "x", size: 7, contentType: "text/plain", metadata: ["k": "v"]),
            options: .init(trace: true))
        #expect(decision.allowed, "\(decision.reason)")
        let existing = [
            "resource.md5Hash == 'q6urq6urq6urq6urq6urqw=='", "resource.crc32c == 'EjRWeA=='",
            "resource.generation == 1600000000000000", "resource.timeCreated < request.time",
            "request.resource.metageneration == 2", "request.resource.md5Hash == resource.md5Hash",
            "!('firebaseStorageDownloadTokens' in resource.metadata)",
        ]
        let updateProgram = try Fixture.compile(
            "rules_version = '2'; service firebase.storage { match /b/{bucket}/o/{x} { allow update: if "
                + existing.joined(separator: " && ") + "; } }")
        var object = Fixture.object("x")
        object.fields.customMetadata = ["firebaseStorageDownloadTokens": "t"]
        let update = updateProgram.evaluate(Fixture.request(.update, "x", existing: object))
        #expect(update.allowed, "\(update.reason)")
    }

    @Test func adminBypassesRules() throws {
        let policy = RulesAccessPolicy(program: try Fixture.compile("service firebase.storage {}"))
        var request = Fixture.request(.get, "x")
        #expect(!policy.allows(request))
        request.principal?.isAdmin = true
        #expect(policy.allows(request))
    }
}
