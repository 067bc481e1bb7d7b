import SiloCore
import SiloRules
import Testing

private typealias F = Fixture
private let A = true
private let D = false
private let MiB: Int64 = 1_048_576

/// Every reference case (a ruleset of ``SpecRules``, a request, the expected decision) through
/// `RulesAccessPolicy.allows`.
///
/// The cases of one ruleset share one policy, as the requests of one server do, and each case asks twice: a
/// decision the policy remembered by path (``PathDecisionCache``) must still be right for every other case on that
/// path, whatever its credentials or object.
@Suite struct SpecCaseTests {
    private static let policies = BlockingMutex([String: RulesAccessPolicy]())

    static func check(_ source: String, _ c: Case, listChildMode: Bool = false, documents: (any DocumentSource)? = nil)
        throws
    {
        let fresh = RulesAccessPolicy(
            program: try F.compile(source), documents: documents, listChildMode: listChildMode)
        let key = "\(listChildMode) \(documents.map { "\(type(of: $0))" } ?? "-") \(source)"
        let shared = policies.withLock { policies in
            if let existing = policies[key] { return existing }
            policies[key] = fresh
            return fresh
        }
        let decision = fresh.decide(c.request, trace: true)
        let explanation = "\(c.id): \(decision.reason)\n\(decision.trace.joined(separator: "\n"))"
        #expect(fresh.allows(c.request) == c.allowed, "\(explanation)")
        #expect(shared.allows(c.request) == c.allowed, "\(explanation) (shared policy)")
        #expect(shared.allows(c.request) == c.allowed, "\(explanation) (shared policy, asked again)")
        // The explain trace walks the same search: it must reach the same decision on every case.
        let explained = fresh.program.explain(c.request, documents: documents, listChildMode: listChildMode)
        #expect(explained.allowed == c.allowed, "\(c.id): explain says \(explained.reason)")
    }

    static let r1: [Case] = [
        Case("T01", F.request(.get, "a/b.png", existing: F.object("a/b.png")), A),
        Case("T02", F.request(.get, "a/b.png", uid: nil, existing: F.object("a/b.png")), D),
        Case("T03", F.request(.create, "x.txt", uid: nil, size: 5), D),
        Case("T04", F.request(.delete, "x.txt", existing: F.object("x.txt")), A),
        Case("T05", F.request(.list, ""), A),
        Case("T06", F.request(.list, "a"), A),
        Case("T07", F.request(.update, "x.txt", existing: F.object("x.txt")), A),
    ]
    @Test(arguments: r1) func r1SignedInOnly(_ c: Case) throws { try Self.check(SpecRules.r1, c) }

    static let r2: [Case] = [
        Case("T08", F.request(.list, "a"), D),
        Case("T09", F.request(.get, "a/b.png", existing: F.object("a/b.png")), A),
    ]
    @Test(arguments: r2) func r2VersionOne(_ c: Case) throws { try Self.check(SpecRules.r2, c) }

    static let r3: [(String, Case)] = [
        ("a", Case("T10", F.request(.get, "images"), D)),
        ("b", Case("T11", F.request(.get, "images"), A)),
        ("a", Case("T12", F.request(.get, "images/x/y/z.png"), A)),
        ("b", Case("T13", F.request(.get, "img/z.png"), D)),
    ]
    /// `{name=*}` is a single-segment wildcard, as `{name}` (Firebase's integration-test rules use it).
    static let singleSegmentEquals = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /{directChild=*} { allow read: if directChild == 'top.txt'; }
            match /ro/{file=*} { allow read; }
          }
        }
        """
    static let singleSegment: [Case] = [
        Case("W01", F.request(.get, "top.txt"), A),
        Case("W02", F.request(.get, "other.txt"), D),
        Case("W03", F.request(.get, "ro/x"), A),
        Case("W04", F.request(.get, "ro/x/y"), D),
        Case("W05", F.request(.get, "a/top.txt"), D),
    ]
    @Test(arguments: singleSegment) func singleSegmentWildcardWithEquals(_ c: Case) throws {
        try Self.check(Self.singleSegmentEquals, c)
    }

    @Test(arguments: r3) func r3RecursiveWildcardArity(_ variant: String, _ c: Case) throws {
        try Self.check(variant == "a" ? SpecRules.r3a : SpecRules.r3b, c)
    }

    static let r4: [Case] = [
        Case("T14", F.request(.create, "users/u1/p.png", size: 1), A),
        Case("T15", F.request(.create, "users/u1/p.png", uid: "u2", size: 1), D),
        Case("T16", F.request(.create, "users/u1/p.png", uid: nil, size: 1), D),
        Case("T17", F.request(.get, "users/u1/p.png", uid: nil, existing: F.object("users/u1/p.png")), A),
        Case("T18", F.request(.create, "users/u1/sub/p.png", size: 1), D),
        Case("T19", F.request(.get, "other/p.png", existing: F.object("other/p.png")), D),
    ]
    @Test(arguments: r4) func r4UserPrivate(_ c: Case) throws { try Self.check(SpecRules.r4, c) }

    static let r5: [Case] = [
        Case("T21", F.request(.create, "images/cat.png", size: 1000, contentType: "image/png"), D),
        Case(
            "T22",
            F.request(
                .create, "images/cat.png", existing: F.object("images/cat.png"), size: 1000, contentType: "image/png"),
            A),
        Case(
            "T23",
            F.request(
                .create, "images/cat.png", existing: F.object("images/cat.png"), size: 1000, contentType: "image/jpeg"),
            D),
        Case(
            "T24",
            F.request(
                .create, "images/cat.png", existing: F.object("images/cat.png"), size: 6 * MiB, contentType: "image/png"
            ),
            D),
        Case(
            "T25",
            F.request(
                .create, "images/" + String(repeating: "a", count: 40),
                existing: F.object("images/" + String(repeating: "a", count: 40)), size: 10, contentType: "image/png"),
            D),
        Case("T26", F.request(.delete, "images/cat.png", existing: F.object("images/cat.png")), D),
    ]
    @Test func t20LoadsWithoutFinalSemicolon() throws { _ = try F.compile(SpecRules.r5) }
    @Test(arguments: r5) func r5DataValidation(_ c: Case) throws { try Self.check(SpecRules.r5, c) }

    static let r6: [Case] = [
        Case("T27", F.request(.create, "images/a.jpg", size: 5_242_879, contentType: "image/jpeg"), A),
        Case("T28", F.request(.create, "images/a.jpg", size: 5_242_880, contentType: "image/jpeg"), D),
        Case("T29", F.request(.create, "images/a.pdf", size: 10, contentType: "application/pdf"), D),
        Case("T30", F.request(.create, "images/a.png", size: 10, contentType: "text/image/png"), D),
        Case("T31", F.request(.get, "images/a.jpg", existing: F.object("images/a.jpg")), D),
    ]
    @Test(arguments: r6) func r6SizeAndType(_ c: Case) throws { try Self.check(SpecRules.r6, c) }

    static let r7: [Case] = [
        Case("T32", F.request(.create, "files/a", size: 1), A),
        Case("T33", F.request(.create, "files/a", existing: F.object("files/a"), size: 1), A),
        Case("T34", F.request(.update, "files/a", existing: F.object("files/a")), D),
        Case("T35", F.request(.delete, "files/a", existing: F.object("files/a", contentType: "text/plain")), D),
        Case("T36", F.request(.delete, "files/a", existing: F.object("files/a", contentType: "image/png")), A),
        Case("T37", F.request(.delete, "files/missing"), D),
        Case("T38", F.request(.list, "files"), D),
        Case("T39", F.request(.create, "upload/new.txt", size: 1), A),
        Case("T40", F.request(.create, "upload/x.txt", existing: F.object("upload/x.txt"), size: 1), D),
        Case("T41", F.request(.create, "disallowSize0", size: 0), D),
        Case("T42", F.request(.create, "disallowSize0", size: 1), A),
    ]
    @Test(arguments: r7) func r7GranularMethods(_ c: Case) throws { try Self.check(SpecRules.r7, c) }

    @Test func t38ListChildMode() throws {
        try Self.check(SpecRules.r7, Case("T38-child", F.request(.list, "files"), A), listChildMode: true)
        // The placeholder never satisfies a literal segment.
        try Self.check(SpecRules.r7, Case("T38-child-upload", F.request(.list, "nothing"), D), listChildMode: true)
        let rest =
            "rules_version = '2'; service firebase.storage { match /b/{b}/o/u/{uid}/{f}/{rest=**} { allow list; } }"
        try Self.check(rest, Case("child-then-rest", F.request(.list, "u/u1"), A), listChildMode: true)
        try Self.check(rest, Case("child-then-rest-off", F.request(.list, "u/u1"), D))
    }

    static let g1 = #"{"sub":"u1","groupId":"g1"}"#
    static let r8: [Case] = [
        Case(
            "T43",
            F.request(
                .get, "files/g1/doc.pdf", claims: g1, existing: F.object("files/g1/doc.pdf", metadata: ["owner": "g1"])),
            A),
        Case("T44", F.request(.get, "files/g1/doc.pdf", claims: g1, existing: F.object("files/g1/doc.pdf")), D),
        Case("T45", F.request(.create, "files/g1/doc.pdf", claims: g1, size: 1, metadata: ["owner": "g1"]), A),
        Case("T46", F.request(.create, "files/g1/doc.pdf", claims: g1, size: 1, metadata: [:]), D),
        Case("T47", F.request(.create, "files/g1/doc.pdf", size: 1, metadata: ["owner": "g1"]), D),
    ]
    @Test(arguments: r8) func r8ClaimsAndMetadata(_ c: Case) throws { try Self.check(SpecRules.r8, c) }

    static func photo(_ uid: String, old: [String: String], new: [String: String]) -> AccessRequest {
        F.request(
            .update, "photos/u1/a.jpg", uid: uid, existing: F.object("photos/u1/a.jpg", metadata: old), metadata: new)
    }
    static let r9: [Case] = [
        Case("T48", photo("u1", old: ["caption": "a", "owner": "u1"], new: ["caption": "b", "owner": "u1"]), A),
        Case("T49", photo("u1", old: ["caption": "a", "owner": "u1"], new: ["caption": "a", "owner": "u2"]), D),
        Case("T50", photo("u1", old: ["owner": "u1"], new: ["owner": "u1", "caption": "hi"]), A),
        Case("T51", photo("u2", old: ["caption": "a"], new: ["caption": "b"]), D),
    ]
    @Test(arguments: r9) func r9MetadataDiff(_ c: Case) throws { try Self.check(SpecRules.r9, c) }

    static let avatar = F.object("avatars/u1/a.png", size: MiB, contentType: "image/png")
    static let r10: [Case] = [
        Case("T52", F.request(.create, "avatars/u1/a.png", size: MiB, contentType: "image/png"), A),
        Case("T53", F.request(.create, "avatars/u1/a.png", size: 3 * MiB, contentType: "image/png"), D),
        Case("T54", F.request(.create, "avatars/u1/a.gif", size: MiB, contentType: "text/plain"), D),
        Case("T55", F.request(.delete, "avatars/u1/a.png", uid: "u2", existing: avatar), D),
        Case("T56", F.request(.delete, "avatars/u1/a.png", existing: avatar), A),
        Case("T57", F.request(.get, "avatars/u1/a.png", uid: nil, existing: avatar), D),
        Case("T58", F.request(.update, "avatars/u1/a.png", existing: avatar, metadata: ["k": "v"]), A),
    ]
    @Test(arguments: r10) func r10FunctionsAndLet(_ c: Case) throws { try Self.check(SpecRules.r10, c) }

    static let r11: [Case] = [
        Case(
            "T59",
            F.request(.get, "images/i", uid: nil, existing: F.object("images/i", metadata: ["visibility": "public"])), A
        ),
        Case(
            "T60",
            F.request(.get, "images/i", uid: nil, existing: F.object("images/i", metadata: ["visibility": "private"])),
            D),
        Case("T61", F.request(.get, "images/i", existing: F.object("images/i")), A),
    ]
    @Test(arguments: r11) func r11ErrorAbsorption(_ c: Case) throws { try Self.check(SpecRules.r11, c) }

    static func get(_ path: String, uid: String? = "u1", metadata: [String: String] = [:], exists: Bool = true)
        -> AccessRequest
    {
        F.request(.get, path, uid: uid, existing: exists ? F.object(path, size: 10, metadata: metadata) : nil)
    }
    static let r12: [Case] = [
        Case("T62", get("neg/x", uid: nil), D),
        Case("T63", get("neg/x"), A),
        Case("T64", get("div/x"), A),
        Case("T65", get("div2/x"), D),
        Case("T66", get("conv/42"), A),
        Case("T67", get("conv/abc"), D),
        Case("T68", get("type/x"), D),
        Case("T69", get("nonbool/x"), D),
        Case("T70", get("dflt/x"), A),
        Case("T71", get("dflt/x", metadata: ["tier": "pro"]), D),
        Case("T72", get("in/x"), A),
        Case("T73", get("in/x", metadata: ["secret": "1"]), D),
        Case("T74", get("tern/x", uid: nil, metadata: ["public": "true"]), A),
        Case("T75", get("tern/x", uid: nil), D),
        Case("T76", get("tern/x"), A),
        Case("T77", get("nullres/x", exists: false), D),
    ]
    @Test(arguments: r12) func r12ErrorAndEdgeSemantics(_ c: Case) throws { try Self.check(SpecRules.r12, c) }

    static let r13: [Case] = [
        Case("T78", get("docs/a.pub.pdf", uid: nil), A),
        Case(
            "T79",
            F.request(.get, "docs/a.pdf", claims: #"{"sub":"u1","admin":true}"#, existing: F.object("docs/a.pdf")), A),
        Case(
            "T80",
            F.request(.get, "docs/a.pdf", claims: #"{"sub":"u1","admin":false}"#, existing: F.object("docs/a.pdf")), D),
        Case("T81", get("docs/a.pdf"), D),
    ]
    @Test(arguments: r13) func r13OverlappingMatches(_ c: Case) throws { try Self.check(SpecRules.r13, c) }

    static let r14: [Case] = [
        Case("T82", get("dir/image.png"), A),
        Case("T83", get("dir/other.png"), D),
    ]
    @Test(arguments: r14) func r14RequestPath(_ c: Case) throws { try Self.check(SpecRules.r14, c) }

    struct StubFirestore: DocumentSource {
        func document(at path: [String]) throws -> [String: RulesValue]? {
            path == ["databases", "(default)", "documents", "users", "alice"]
                ? ["friends": .list([.string("bob")])] : nil
        }
    }
    static let r20: [Case] = [
        Case("T101", get("users/alice/files/1", uid: "alice"), A),
        Case("T102", get("users/alice/files/1", uid: "bob"), A),
        Case("T103", get("users/alice/files/1", uid: "eve"), D),
        Case("T104", F.request(.create, "users/carol/files/1", uid: "carol", size: 1), D),
        Case("T104b", get("users/carol/files/1", uid: "bob"), D),
        Case("T105", get("users/alice/files/1", uid: nil), D),
    ]
    @Test(arguments: r20) func r20CrossService(_ c: Case) throws {
        try Self.check(SpecRules.r20, c, documents: StubFirestore())
    }

    @Test func r20WithoutDocumentSourceDenies() throws {
        try Self.check(SpecRules.r20, Case("T101-nosource", Self.get("users/alice/files/1", uid: "alice"), D))
        try Self.check(SpecRules.r20, Case("T102-nosource", Self.get("users/alice/files/1", uid: "bob"), D))
    }

    static let r21: [(String, String)] = [
        ("T106", "service firebase.storage {{ match /b/{bucket}/o { match /{p=**} { allow read; } } }"),
        (
            "T107",
            """
            rules_version = '2';
            service firebase.storage {
              function a(x) { return b(x); }
              function b(x) { return a(x); }
              match /b/{bucket}/o { match /{p=**} { allow read: if a(1); } }
            }
            """
        ),
        ("T108", "rules_version = '3';\nservice firebase.storage { match /b/{bucket}/o { allow read; } }"),
        (
            "T109",
            "rules_version = '2';\nservice firebase.storage { match /b/{bucket}/o { match /a/{x=**}/b/{y=**} { allow read; } } }"
        ),
        ("T110", "service firebase.storage { match /b/{bucket}/o { match /{p=**}/thumbs/{f} { allow read; } } }"),
    ]
    @Test(arguments: r21) func r21LoadFailures(_ id: String, _ source: String) {
        #expect(throws: RulesCompileError.self, "\(id)") {
            try RulesProgram.compile(source: source, fileName: "t.rules")
        }
    }

    @Test func t110SameMatchLoadsUnderVersionTwo() throws {
        let program = try F.compile(
            "rules_version = '2';\nservice firebase.storage { match /b/{bucket}/o { match /{p=**}/thumbs/{f} { allow read; } } }"
        )
        let policy = RulesAccessPolicy(program: program)
        #expect(policy.allows(F.request(.get, "thumbs/a.png")))
        #expect(policy.allows(F.request(.get, "x/y/thumbs/a.png")))
        #expect(!policy.allows(F.request(.get, "x/y/a.png")))
    }
}
