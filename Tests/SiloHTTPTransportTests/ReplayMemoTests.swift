import Foundation
import SiloHTTP
import Synchronization
import Testing

@testable import SiloEpollHTTP

/// The event loop's memo of replayable answers, without sockets (the live behaviour is `ReplayTests` in the server
/// suites): what it keeps, when it lets go, and that a key is the head's exact bytes.
@Suite struct ReplayMemoTests {
    /// A permit whose answer holds until told otherwise.
    final class Permit: ReplayPermit {
        let current = Atomic<Bool>(true)
        let replays = Atomic<Int>(0)
        var isCurrent: Bool { current.load(ordering: .relaxed) }
        func replayed() -> String { "r\(replays.add(1, ordering: .relaxed).newValue)" }
    }

    let get = "GET /v0/b/x/o/a?alt=media HTTP/1.1\r\nHost: h:1\r\n\r\n"

    func parsed(_ head: String) throws -> ParsedRequest {
        let bytes = Array(head.utf8)
        guard case .complete(let request, _) = bytes.withUnsafeBytes({ RequestHeadParser.parse($0) }) else {
            throw Unparsed()
        }
        return request
    }

    struct Unparsed: Error {}

    func answer(_ permit: Permit?, body: [UInt8] = Array("hello".utf8), status: Int = 200) -> HTTPResponse {
        var response = HTTPResponse(status: status, headers: ["Content-Type": "text/plain"], body: .bytes(body))
        response.replay = permit
        return response
    }

    /// What a connection does with a head: the kept answer if there is one, else the handler's (`response`),
    /// offered to the memo with what the probe found.
    @discardableResult
    func serve(_ memo: ReplayMemo, _ head: String, _ response: HTTPResponse, isSecure: Bool = false) throws
        -> ReplayMemo.Entry?
    {
        let request = try parsed(head)
        return Array(head.utf8).withUnsafeBytes { bytes in
            let probe = memo.probe(bytes, isSecure: isSecure)
            if let entry = probe.entry { return entry }
            memo.keep(response, for: request, head: bytes, isSecure: isSecure, probe: probe)
            return nil
        }
    }

    /// The kept answer for `head`, if any (a probe: it also marks the head seen).
    func entry(_ memo: ReplayMemo, _ head: String, isSecure: Bool = false) -> ReplayMemo.Entry? {
        Array(head.utf8).withUnsafeBytes { memo.probe($0, isSecure: isSecure).entry }
    }

    @Test func aHeadIsKeptTheSecondTimeItIsAnswered() throws {
        let memo = ReplayMemo()
        let permit = Permit()
        try serve(memo, get, answer(permit))
        #expect(memo.count == 0 && entry(memo, get) == nil)
        try serve(memo, get, answer(permit))
        #expect(memo.count == 1)
        let kept = try #require(entry(memo, get))
        let response = kept.answer(id: kept.permit.replayed())
        #expect(response.status == 200 && response.requestID == "r1")
        guard case .bytes(let body) = response.body else { throw Unparsed() }
        #expect(body == Array("hello".utf8))
        #expect(response.headers.wireFormat != nil, "headers are formatted once, when kept")
        #expect(kept.keepAlive && !kept.isHeadMethod && !kept.isHTTP10)
    }

    @Test func anAnswerNoLongerCurrentIsDroppedAndKeptAgainAtOnce() throws {
        let memo = ReplayMemo()
        let old = Permit()
        try serve(memo, get, answer(old))
        try serve(memo, get, answer(old))
        #expect(memo.count == 1)
        old.current.store(false, ordering: .relaxed)
        // The kept answer is out of date: the handler answers, and its answer is kept at once, without waiting to
        // see the head a second time.
        #expect(try serve(memo, get, answer(Permit(), body: Array("new".utf8))) == nil)
        #expect(memo.count == 1)
        let kept = try #require(entry(memo, get))
        guard case .bytes(let body) = kept.body else { throw Unparsed() }
        #expect(body == Array("new".utf8))

        // Out of date again and answered without a permit (as a worker answers after a write emptied the cache):
        // nothing is kept, but the head stays seen, so the next answer with a permit is kept.
        let newer = try #require(kept.permit as? Permit)
        newer.current.store(false, ordering: .relaxed)
        #expect(try serve(memo, get, answer(nil)) == nil)
        #expect(memo.count == 0)
        #expect(try serve(memo, get, answer(Permit(), body: Array("newest".utf8))) == nil)
        #expect(memo.count == 1)
    }

    @Test func theKeyIsTheHeadsExactBytesAndTheConnectionsSecurity() throws {
        let memo = ReplayMemo()
        let permit = Permit()
        try serve(memo, get, answer(permit))
        try serve(memo, get, answer(permit))
        #expect(entry(memo, get) != nil)
        #expect(entry(memo, get, isSecure: true) == nil)
        #expect(entry(memo, get.replacingOccurrences(of: "h:1", with: "H:1")) == nil)
        #expect(entry(memo, get.replacingOccurrences(of: "\r\n\r\n", with: "\r\nRange: bytes=0-1\r\n\r\n")) == nil)
        let head = get.replacingOccurrences(of: "GET", with: "HEAD")
        #expect(entry(memo, head) == nil)
        try serve(memo, head, answer(permit))
        try serve(memo, head, answer(permit))
        #expect(try #require(entry(memo, head)).isHeadMethod)
    }

    @Test func onlyBodylessRequestsWithSmallBodiesInMemoryAndAPermitAreKept() throws {
        let memo = ReplayMemo()
        let permit = Permit()
        for _ in 0..<2 { try serve(memo, get, answer(nil)) }
        #expect(memo.count == 0, "no permit")
        let big = Array(repeating: UInt8(7), count: ReplayMemo.maxBodyBytes + 1)
        for _ in 0..<2 { try serve(memo, get, answer(permit, body: big)) }
        #expect(memo.count == 0, "a body over the bound")
        let put = "PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n"
        for _ in 0..<2 { try serve(memo, put, answer(permit)) }
        #expect(memo.count == 0, "a request with a body")
        let long = "GET /" + String(repeating: "a", count: ReplayMemo.maxHeadBytes) + " HTTP/1.1\r\nHost: h\r\n\r\n"
        for _ in 0..<2 { try serve(memo, long, answer(permit)) }
        #expect(memo.count == 0, "a head over the bound")
        var faulted = answer(permit)
        faulted.transportFault = .resetConnection
        for _ in 0..<2 { try serve(memo, get, faulted) }
        #expect(memo.count == 0, "a staged fault")
    }

    @Test func manyHeadsStayWithinTheSlots() throws {
        let memo = ReplayMemo()
        let permit = Permit()
        for index in 0..<500 {
            let head = "GET /o/\(index) HTTP/1.1\r\nHost: h\r\n\r\n"
            for _ in 0..<2 { try serve(memo, head, answer(permit)) }
        }
        #expect(memo.count <= ReplayMemo.slots)
        #expect(memo.count > ReplayMemo.slots / 2, "heads seen twice are kept, until others take their slots")
        // Whatever is found answers its own head.
        for index in 0..<500 {
            let head = "GET /o/\(index) HTTP/1.1\r\nHost: h\r\n\r\n"
            if let found = entry(memo, head) { #expect(found.head == Array(head.utf8)) }
        }
    }
}
