import SiloCore
import Synchronization

/// How many bytes of gzip objects each caller may make this node inflate for it (decompressive transcoding, for a
/// client that does not accept gzip): ``ServerConfiguration/maxInflatedBytesPerCallerPerMinute``.
///
/// Sending stored bytes costs the server little (sendfile, or a copy); inflating them costs it CPU at a rate the
/// stored size does not bound — deflate expands up to about 1032:1, so a 1 MiB object can stream a gigabyte, about
/// 12 s of a core. No per-caller limit on bytes sent existed to count this work against, so this is the smallest
/// one that bounds it: per caller (a user by uid, anyone else by IP address, as the upload quotas; admins exempt),
/// the bytes inflated in a minute that starts with the caller's first inflated byte. A transcoding download is
/// refused with 429 while its caller's minute is spent, and one in progress that spends it is cut off (the client
/// sees a truncated body, as after any failure past the head). Per node, in memory: nodes behind a load balancer
/// each allow as much.
final class InflationBudget: Sendable {
    private struct Window {
        /// When the caller's current minute began (``RequestMetrics/now()``, microseconds).
        var started: UInt64
        var used: Int64
    }

    /// Bytes per minute per caller; 0: unlimited (counted, never refused).
    let perMinute: Int64
    private let windows = Mutex<[String: Window]>([:])
    /// Callers tracked at once: past it, callers whose minute is over are forgotten, then the one that started first.
    static let maxCallers = 10_000
    static let windowMicroseconds: UInt64 = 60_000_000
    /// `silo_transcoded_bytes_total` (0) and `silo_transcode_refusals_total` (1).
    let counters = AtomicCounters(count: 2)

    init(perMinute: Int64) {
        self.perMinute = perMinute
    }

    /// Throws 429 when `caller`'s minute is spent (nil: not limited).
    func admit(_ caller: String?) throws {
        guard perMinute > 0, let caller else { return }
        let now = RequestMetrics.now()
        let used = windows.withLock { $0[caller].map { current($0, now).used } ?? 0 }
        guard used < perMinute else {
            counters.add(1)
            throw StorageError(
                .tooManyRequests,
                "this caller had \(perMinute) bytes of gzip objects decompressed within a minute; send "
                    + "Accept-Encoding: gzip to receive them as stored, or retry later")
        }
    }

    /// Counts `bytes` inflated for `caller`; false when its minute was already spent (the transcoding stops). The
    /// piece that spends it is still sent: a minute overshoots by at most one piece.
    func charge(_ caller: String?, _ bytes: Int) -> Bool {
        counters.add(0, UInt64(bytes))
        guard perMinute > 0, let caller else { return true }
        let now = RequestMetrics.now()
        let allowed = windows.withLock { windows in
            var window = windows[caller].map { current($0, now) } ?? Window(started: now, used: 0)
            guard window.used < perMinute else { return false }
            window.used += Int64(bytes)
            if windows[caller] == nil && windows.count >= Self.maxCallers { forget(&windows, now) }
            windows[caller] = window
            return true
        }
        if !allowed { counters.add(1) }
        return allowed
    }

    /// `window`, or a fresh one if its minute is over.
    private func current(_ window: Window, _ now: UInt64) -> Window {
        now &- window.started >= Self.windowMicroseconds ? Window(started: now, used: 0) : window
    }

    /// Makes room: callers whose minute is over lose nothing by being forgotten; if none is, the oldest minute goes.
    private func forget(_ windows: inout [String: Window], _ now: UInt64) {
        let over = windows.filter { now &- $0.value.started >= Self.windowMicroseconds }.map(\.key)
        for caller in over { windows[caller] = nil }
        if over.isEmpty, let oldest = windows.min(by: { $0.value.started < $1.value.started })?.key {
            windows[oldest] = nil
        }
    }
}
