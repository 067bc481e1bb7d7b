import SiloCore
import SiloHTTP

/// Answers an event loop may send again without calling the handler (``ReplayPermit``), by the exact bytes of the
/// request head they answered.
///
/// A hot object is read by the same request again and again (a download URL in an app, a CDN's origin fetch, a
/// benchmark), and every such read parsed the head, made its strings, routed, authenticated, checked the rules and
/// looked in three caches to build the same bytes. A replay finds the head's end, hashes and compares its bytes,
/// asks the permit whether the answer still stands, and queues the answer through the same state machine and
/// framing as any other, with a fresh `Date` and request id.
///
/// The key is the whole head, every header included, and whether the connection is TLS: two requests that differ
/// in any byte are two keys, so nothing the handler might have read from the head can differ between them.
/// Only answers to body-less requests, with bodies in memory, are kept.
///
/// Bounds: ``slots`` entries, direct-mapped (a colliding head replaces the one in its slot, so a lookup is one
/// probe whatever a client sends); heads of at most ``maxHeadBytes`` and bodies of at most ``maxBodyBytes``. A
/// loop's memo so holds at most 64 × (2 KiB + 16 KiB) = 1.1 MiB, plus the answers' headers. Confined to its loop's
/// thread, like the loop.
final class ReplayMemo {
    static let slots = 64
    static let maxHeadBytes = 2048
    static let maxBodyBytes = 16 << 10

    struct Entry {
        let head: [UInt8]
        let isSecure: Bool
        let keepAlive: Bool
        let isHeadMethod: Bool
        let isHTTP10: Bool
        let status: Int
        let headers: HTTPHeaders
        let body: ResponseBody
        let permit: any ReplayPermit

        /// The answer to send now, under the request id the permit gave this replay.
        func answer(id: String) -> HTTPResponse {
            var response = HTTPResponse(status: status, headers: headers, body: body)
            response.requestID = id
            return response
        }
    }

    private var entries: [Entry?] = Array(repeating: nil, count: ReplayMemo.slots)
    /// Per slot, the hash of the last head that arrived there and is not kept: only an answer to a head seen before
    /// is kept, so that requests that never repeat (every one a new range, a new object) do not pay for a copy, nor
    /// the handler for a permit (``HTTPRequestHead/wantsReplayPermit``).
    private var sightings: [UInt64] = Array(repeating: 0, count: ReplayMemo.slots)
    /// Entries kept now (for tests and diagnostics: nothing on the request path counts them).
    var count: Int { entries.reduce(0) { $0 + ($1 == nil ? 0 : 1) } }

    /// What the memo knows of a head, found before it is parsed.
    struct Probe {
        /// Kept, and current: the answer to send.
        var entry: Entry?
        /// An answer to these bytes would be kept: they were seen before (or their kept answer just went out of
        /// date).
        var seen: Bool
        fileprivate var hash: UInt64
    }

    /// Looks `head` up: its entry if it is kept and its permit is current (an entry found out of date is dropped, its
    /// head still seen), and whether it was seen before. A head not seen before is remembered as seen, in its slot's
    /// one place.
    func probe(_ head: UnsafeRawBufferPointer, isSecure: Bool) -> Probe {
        guard head.count <= Self.maxHeadBytes else { return Probe(entry: nil, seen: false, hash: 0) }
        let bytes = head.assumingMemoryBound(to: UInt8.self)
        let hash = bytes.spreadHash() &+ (isSecure ? 1 : 0)
        let slot = Self.slot(hash)
        if let entry = entries[slot], entry.isSecure == isSecure,
            entry.head.withUnsafeBufferPointer({ $0.hasSameBytes(as: bytes) })
        {
            if entry.permit.isCurrent { return Probe(entry: entry, seen: true, hash: hash) }
            entries[slot] = nil
            // Still seen: after a write the next answer often comes from a worker (the cache was emptied), and
            // the inline answer after it is then kept.
            sightings[slot] = hash
            return Probe(entry: nil, seen: true, hash: hash)
        }
        if sightings[slot] == hash { return Probe(entry: nil, seen: true, hash: hash) }
        sightings[slot] = hash
        return Probe(entry: nil, seen: false, hash: hash)
    }

    /// Keeps `response`, the handler's answer to `request` (whose head is the bytes `head`, probed as `probe`), if
    /// it carries a permit, fits, and its head was seen before (a head over ``maxHeadBytes`` never is).
    func keep(
        _ response: HTTPResponse, for request: ParsedRequest, head: UnsafeRawBufferPointer, isSecure: Bool,
        probe: Probe
    ) {
        guard probe.seen, let permit = response.replay, request.framing == .none, !request.awaitsContinue,
            response.transportFault == nil
        else { return }
        switch response.body {
        case .empty: break
        case .bytes(let bytes) where bytes.count <= Self.maxBodyBytes: break
        default: return
        }
        let slot = Self.slot(probe.hash)
        sightings[slot] = 0
        entries[slot] = Entry(
            head: Array(head.assumingMemoryBound(to: UInt8.self)), isSecure: isSecure, keepAlive: request.keepAlive,
            isHeadMethod: request.isHeadMethod, isHTTP10: request.isHTTP10, status: response.status,
            headers: response.headers.preformatted(), body: response.body, permit: permit)
    }

    private static func slot(_ hash: UInt64) -> Int { Int(truncatingIfNeeded: hash) & (slots - 1) }
}
