import SiloCore
import SiloRules
import Testing

private typealias F = Fixture

/// Which decisions `RulesAccessPolicy` may remember by path: only those that read neither `request`, `resource`
/// nor a document.
@Suite struct PathDecisionCacheTests {
    static let rules = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /public/{all=**} { allow read: if true; allow write: if false; }
            match /users/{uid}/{all=**} { allow read, write: if request.auth != null && request.auth.uid == uid; }
            match /sized/{name} { allow write: if request.resource.size < 100; }
            match /existing/{name} { allow delete: if resource.metadata.owner == 'u1'; }
          }
        }
        """

    @Test func pathOnlyDecisionsAreRememberedAndOthersNot() throws {
        let policy = RulesAccessPolicy(program: try F.compile(Self.rules))
        #expect(policy.allows(F.request(.get, "public/a.png", uid: nil)))
        #expect(policy.allows(F.request(.get, "public/a.png", uid: "u1")))
        #expect(!policy.allows(F.request(.create, "public/a.png", uid: "u1", size: 1)))
        // A path no match block covers is denied without reading anything.
        #expect(!policy.allows(F.request(.get, "elsewhere/x", uid: "u1")))
        #expect(policy.pathDecisions.count == 3)

        // Decisions that read request.auth, request.resource or resource are evaluated every time.
        #expect(policy.allows(F.request(.get, "users/u1/p.png", uid: "u1")))
        #expect(!policy.allows(F.request(.get, "users/u1/p.png", uid: "u2")))
        #expect(!policy.allows(F.request(.get, "users/u1/p.png", uid: nil)))
        #expect(policy.allows(F.request(.create, "sized/s", size: 10)))
        #expect(!policy.allows(F.request(.create, "sized/s", size: 1000)))
        let mine = F.object("existing/e", metadata: ["owner": "u1"])
        let theirs = F.object("existing/e", metadata: ["owner": "u2"])
        #expect(policy.allows(F.request(.delete, "existing/e", existing: mine)))
        #expect(!policy.allows(F.request(.delete, "existing/e", existing: theirs)))
        #expect(policy.pathDecisions.count == 3)
    }

    /// Found by review after fuzz/name's ObjectName finding: the rules compare strings by bytes, but the cache keyed
    /// paths by `String` equality (canonical equivalence), so a decision made for "café" (NFC) was reused for the
    /// different object "cafe\u{301}" (NFD), whatever the rules say about it.
    @Test func canonicallyEquivalentPathsAreDecidedSeparately() throws {
        let rules = """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o {
                match /files/{name} { allow read: if name != 'cafe\u{301}.txt'; }
              }
            }
            """
        let policy = RulesAccessPolicy(program: try F.compile(rules))
        #expect(policy.allows(F.request(.get, "files/caf\u{E9}.txt", uid: nil)))
        #expect(!policy.allows(F.request(.get, "files/cafe\u{301}.txt", uid: nil)))
        #expect(policy.pathDecisions.count == 2)
    }

    @Test func theCacheIsBounded() throws {
        let policy = RulesAccessPolicy(program: try F.compile(Self.rules), pathDecisionCapacity: 2)
        for index in 0..<5 { #expect(policy.allows(F.request(.get, "public/\(index)", uid: nil))) }
        #expect(policy.pathDecisions.count <= 2)
        #expect(policy.allows(F.request(.get, "public/0", uid: nil)))
    }
}
