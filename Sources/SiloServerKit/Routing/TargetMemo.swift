import SiloCore
package import SiloHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The routes and query parameters this thread parsed last, by the exact bytes they were parsed from.
///
/// Both are pure functions of a string (``Router/route(path:)`` of the raw path, for one router, and
/// ``QueryParameters`` of the raw query), and a hot object is asked for by the same target again and again. Parsing them made and freed four
/// `String`s per request; with the memo a cached 1 KiB GET went from 23,834 to 21,229 instructions, and a v0
/// getMetadata from 19,777 to 18,477 (`bench/instructions.sh get|metadata`). A hit costs a hash of the bytes,
/// one comparison and the retains of the copy.
///
/// Per thread (a `pthread` slot), so a lookup takes no lock and the event loops share no cache line. A slot is
/// sound here because the memo is invisible: what it returns is what parsing would, whichever thread asks. Each table is direct-mapped: a colliding target replaces the one in its slot, so a lookup is one
/// probe whatever a client sends, and a client that sends many targets only evicts. Only successes are kept; a
/// target that fails to parse is parsed again, and its error made again, every time.
///
/// Bounds: ``slots`` entries per table, keys of at most ``maxKeyBytes`` bytes (a longer target is parsed and not
/// kept), and what is parsed from a key is no longer than the key. A thread's memo so holds at most about
/// 2 tables × 256 slots × 2 × 256 bytes = 256 KiB of text; the threads that route are the event loops and the
/// worker pool's threads.
package final class TargetMemo {
    static let slots = 256
    static let maxKeyBytes = 256

    private var routes = MemoTable<RouterRoute>(slots: TargetMemo.slots)
    private var queries = MemoTable<QueryParameters>(slots: TargetMemo.slots)

    /// `router`'s ``Router/route(path:)`` of `rawPath`.
    static func route(_ rawPath: String, _ router: Router) throws(Router.Refusal) -> Route {
        do {
            return try current.routes.value(for: rawPath, keeping: { $0.router == router.id }) {
                RouterRoute(router: router.id, route: try router.route(path: $0))
            }.route
        } catch let refusal as Router.Refusal { throw refusal } catch { throw Router.Refusal(error: error, group: nil) }
    }

    /// What a router answered for a path, and which router.
    private struct RouterRoute {
        let router: Int
        let route: Route
    }

    /// The query parameters of `head`'s raw query; throws as ``QueryParameters/init(_:)`` does.
    package static func query(_ head: HTTPRequestHead) throws -> QueryParameters {
        try current.queries.value(for: head.rawQuery) { _ in try QueryParameters(head) }
    }

    /// This thread's memo, made on the thread's first request and released when the thread ends.
    private static var current: TargetMemo {
        if let raw = pthread_getspecific(slot) { return Unmanaged<TargetMemo>.fromOpaque(raw).takeUnretainedValue() }
        let memo = TargetMemo()
        pthread_setspecific(slot, Unmanaged.passRetained(memo).toOpaque())
        return memo
    }

    private static let slot: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { raw in
            #if canImport(Glibc)
            guard let raw else { return }
            #endif
            Unmanaged<TargetMemo>.fromOpaque(raw).release()
        }
        return key
    }()
}

/// A direct-mapped table from a string's exact bytes (not `String`'s `==`, which equates canonically equivalent
/// text: two such paths are two different objects) to what was parsed from it.
struct MemoTable<Value> {
    private var keys: [String?]
    private var values: [Value?]
    private let mask: Int

    /// `slots`: a power of two.
    init(slots: Int) {
        precondition(slots > 0 && slots & (slots - 1) == 0, "a memo's slots are a power of two")
        keys = Array(repeating: nil, count: slots)
        values = Array(repeating: nil, count: slots)
        mask = slots - 1
    }

    /// The value kept for `key`'s bytes when `keeping` accepts it, or `parse(key)`, kept when it succeeds and the
    /// key is short enough.
    mutating func value(
        for key: String, keeping: (Value) -> Bool = { _ in true }, parse: (String) throws -> Value
    ) rethrows -> Value {
        // The kept key is compared inside the closure that hashed this one: its bytes are in hand there.
        let (slot, found) = key.withUTF8Bytes { bytes -> (Int?, Bool) in
            guard bytes.count <= TargetMemo.maxKeyBytes else { return (nil, false) }
            let slot = Int(truncatingIfNeeded: bytes.spreadHash()) & mask
            return (slot, keys[slot]?.withUTF8Bytes { $0.hasSameBytes(as: bytes) } ?? false)
        }
        if found, let slot, let value = values[slot], keeping(value) { return value }
        let value = try parse(key)
        if let slot { (keys[slot], values[slot]) = (key, value) }
        return value
    }
}
