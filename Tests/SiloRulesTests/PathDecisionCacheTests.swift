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

    /// What a replayed answer relies on: `answer` says which decisions depended on the path alone (remembered or
    /// not yet), and the version a server compares changes with every reload.
    @Test func answersSayWhenTheyDependedOnThePathAlone() throws {
        let policy = RulesAccessPolicy(program: try F.compile(Self.rules))
        #expect(policy.version == 0)
        let first = policy.answer(F.request(.get, "public/a.png", uid: nil))
        #expect(first == AccessAnswer(allowed: true, byPathAlone: true))
        #expect(policy.answer(F.request(.get, "public/a.png", uid: nil)) == first, "remembered, and still by path")
        #expect(
            policy.answer(F.request(.get, "elsewhere/x", uid: nil)) == AccessAnswer(allowed: false, byPathAlone: true))
        #expect(!policy.answer(F.request(.get, "users/u1/p.png", uid: "u1")).byPathAlone)
        #expect(!policy.answer(F.request(.get, "users/u1/p.png", uid: nil)).byPathAlone)
        #expect(!policy.answer(F.request(.create, "sized/s", size: 10)).byPathAlone)

        let swappable = SwappableAccessPolicy(policy)
        let before = try #require(swappable.version)
        #expect(swappable.answer(F.request(.get, "public/a.png", uid: nil)) == first)
        swappable.replace(with: RulesAccessPolicy(program: try F.compile(Self.rules)))
        let after = try #require(swappable.version)
        #expect(after != before)
        // A policy that keeps no version makes the whole swappable one unknown until it is replaced again.
        swappable.replace(with: Opaque())
        #expect(swappable.version == nil)
        #expect(!swappable.answer(F.request(.get, "public/a.png", uid: nil)).byPathAlone)
        swappable.replace(with: AllowAllPolicy())
        #expect(swappable.version != nil && swappable.version != after)
    }

    private struct Opaque: AccessPolicy {
        func allows(_ request: AccessRequest) -> Bool { true }
    }

    /// What an event loop asks (``AccessPolicy/answerWithoutWaiting(_:)``): the same answers as `answer` where
    /// nothing would wait, and none when the rules may read documents from a store, unless the path decided it.
    @Test func answersWithoutWaitingAreTheSameOrNone() throws {
        let policy = RulesAccessPolicy(program: try F.compile(Self.rules))
        for request in [
            F.request(.get, "public/a.png", uid: nil), F.request(.get, "users/u1/p.png", uid: "u1"),
            F.request(.get, "users/u1/p.png", uid: "u2"), F.request(.get, "elsewhere/x", uid: nil),
        ] {
            #expect(policy.answerWithoutWaiting(request) == policy.answer(request))
        }
        let reading = RulesAccessPolicy(program: try F.compile(Self.rules), documents: NoDocuments())
        #expect(reading.answerWithoutWaiting(F.request(.get, "users/u1/p.png", uid: "u1")) == nil)
        #expect(reading.answerWithoutWaiting(F.request(.get, "public/a.png", uid: nil)) == nil, "not decided yet")
        #expect(reading.answer(F.request(.get, "public/a.png", uid: nil)).byPathAlone)
        #expect(
            reading.answerWithoutWaiting(F.request(.get, "public/a.png", uid: nil))
                == AccessAnswer(allowed: true, byPathAlone: true), "remembered by path")
        let swappable = SwappableAccessPolicy(reading)
        #expect(swappable.answerWithoutWaiting(F.request(.get, "users/u1/p.png", uid: "u1")) == nil)
        #expect(swappable.answerWithoutWaiting(F.request(.get, "public/a.png", uid: nil))?.allowed == true)
    }

    private struct NoDocuments: DocumentSource {
        func document(at path: [String]) throws -> [String: RulesValue]? { nil }
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
