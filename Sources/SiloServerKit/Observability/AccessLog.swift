import Foundation
import SiloCore
import SiloWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The access log: one JSON line per request, written by a thread of its own from a bounded buffer. Request threads
/// (event loops included) only append a record under a lock held for the append; when the buffer is full the record
/// is dropped and counted (`silo_access_log_lines_total{result="dropped"}`): a slow disk never slows requests.
///
/// A line holds what identifies the request and its outcome, never a credential: no header, no query (signed URLs
/// carry their signature there), no body; the caller by uid, service-account email, `admin` or `anonymous`.
///
/// `@unchecked Sendable`: `fd`, `pending`, `spare`, `writing` and `closed` are only touched with `condition` locked
/// (the writer reads `fd` once per batch, under the lock).
public final class AccessLog: @unchecked Sendable {
    public enum Destination: Sendable, Equatable {
        case standardError
        /// Appended to (created `0640` if missing). Rotate by renaming the file, then SIGHUP (``reopen()``): the
        /// next line goes to a new file under the old name.
        case file(String)
    }

    public let destination: Destination
    /// Records held at most before new ones are dropped.
    public let capacity: Int
    private var fd: Int32
    private let condition = NSCondition()
    private var pending: [AccessRecord] = []
    private var spare: [AccessRecord] = []
    private var writing = false
    private var closed = false
    private var writerWaiting = false
    private let counters = AtomicCounters(count: 3)
    private enum Slot: Int {
        case written, dropped, failed
    }

    /// Opens the destination and starts the writer thread. Throws `.ioError` naming the file when it cannot be
    /// opened for appending.
    public init(_ destination: Destination, capacity: Int = 16_384) throws {
        self.destination = destination
        self.capacity = max(1, capacity)
        switch destination {
        case .standardError:
            fd = 2
        case .file(let path):
            fd = try Self.openForAppending(path)
        }
        pending.reserveCapacity(self.capacity)
        spare.reserveCapacity(self.capacity)
        let thread = Thread { [self] in run() }
        thread.name = "silo-access-log"
        thread.start()
    }

    private static func openForAppending(_ path: String) throws -> Int32 {
        let opened = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
        guard opened >= 0 else {
            throw StorageError(
                .ioError, "cannot open the access log \(path) for appending: \(String(cString: strerror(errno)))")
        }
        return opened
    }

    /// Opens the file destination again by its name (after logrotate renamed it) and writes there from the next
    /// batch on; the batch being written finishes in the old file. Requests are not held up: they append to the
    /// buffer meanwhile. On failure the old file stays in use and the error is thrown.
    public func reopen() throws {
        guard case .file(let path) = destination else { return }
        let opened = try Self.openForAppending(path)
        condition.lock()
        while writing { condition.wait() }
        let old = fd
        fd = opened
        condition.unlock()
        _ = closeFile(old)
    }

    /// Lines written, dropped because the buffer was full, and lost to a failed write.
    public var written: UInt64 { counters[Slot.written.rawValue] }
    public var dropped: UInt64 { counters[Slot.dropped.rawValue] }
    public var failed: UInt64 { counters[Slot.failed.rawValue] }

    func record(_ record: AccessRecord) {
        condition.lock()
        guard !closed, pending.count < capacity else {
            condition.unlock()
            counters.add(Slot.dropped.rawValue)
            return
        }
        pending.append(record)
        let wake = writerWaiting
        writerWaiting = false
        condition.unlock()
        if wake { condition.signal() }
    }

    /// Returns once every record taken so far is written (tests, and shutdown).
    public func flush() {
        condition.lock()
        while !pending.isEmpty || writing { condition.wait() }
        condition.unlock()
    }

    /// Writes what is buffered, then stops the writer and closes a file destination.
    public func close() {
        condition.lock()
        closed = true
        writerWaiting = false
        condition.broadcast()
        while !pending.isEmpty || writing { condition.wait() }
        let last = fd
        condition.unlock()
        if last != 2 { _ = closeFile(last) }
    }

    private func run() {
        var line: [UInt8] = []
        line.reserveCapacity(64 << 10)
        while true {
            condition.lock()
            while pending.isEmpty && !closed {
                writerWaiting = true
                condition.wait()
            }
            if pending.isEmpty && closed {
                condition.broadcast()
                condition.unlock()
                return
            }
            swap(&pending, &spare)
            writing = true
            let target = fd
            condition.unlock()

            line.removeAll(keepingCapacity: true)
            for record in spare { record.appendLine(to: &line) }
            let ok = writeAll(line, to: target)
            counters.add(ok ? Slot.written.rawValue : Slot.failed.rawValue, UInt64(spare.count))
            spare.removeAll(keepingCapacity: true)

            condition.lock()
            writing = false
            condition.broadcast()
            condition.unlock()
        }
    }

    func collect(into text: inout MetricsText) {
        text.family(
            "silo_access_log_lines_total", .counter,
            help: "Access-log lines: written, dropped because the buffer was full, failed because the write failed.")
        text.sample("silo_access_log_lines_total", ["result": "written"], written)
        text.sample("silo_access_log_lines_total", ["result": "dropped"], dropped)
        text.sample("silo_access_log_lines_total", ["result": "failed"], failed)
    }
}

/// One request's line, as the request thread hands it over: formatted by the writer thread, not on the request's.
struct AccessRecord: Sendable {
    var time: Timestamp
    var id: String
    var parent: String?
    var route: RouteLabel
    var method: String
    var bucket: BucketName?
    var object: ObjectName?
    var status: Int
    var bytesIn: Int64
    var bytesOut: Int64?
    var micros: UInt64
    var caller: Exchange.Caller

    /// `{"time":…,"request_id":…,…}\n`, keys in a fixed order; strings escaped as JSON (``JSONValue``), so an object
    /// name with quotes, backslashes or control characters stays one line.
    func appendLine(to out: inout [UInt8]) {
        var members: [(key: String, value: JSONValue)] = [
            ("time", .string(time.rfc3339Precise)),
            ("request_id", .string(id)),
        ]
        if let parent { members.append(("batch_id", .string(parent))) }
        members += [
            ("api", .string(route.api)),
            ("route", .string(route.route)),
            ("method", .string(String(method.prefix(16)))),
            ("bucket", bucket.map { .string($0.rawValue) } ?? .null),
            ("object", object.map { .string($0.rawValue) } ?? .null),
            ("status", .number(String(status))),
            ("bytes_in", .number(String(bytesIn))),
            ("bytes_out", bytesOut.map { .number(String($0)) } ?? .null),
            ("duration_us", .number(String(micros))),
        ]
        switch caller {
        case .anonymous: members.append(("caller", .string("anonymous")))
        case .admin: members.append(("caller", .string("admin")))
        case .authenticated: members.append(("caller", .string("authenticated")))
        case .user(let uid):
            members.append(("caller", .string("user")))
            members.append(("uid", .string(String(uid.prefix(128)))))
        case .serviceAccount(let email):
            members.append(("caller", .string("service_account")))
            members.append(("service_account", .string(String(email.prefix(256)))))
        }
        var object = JSONObject()
        object.members = members
        out.append(contentsOf: JSONValue.object(object).serialized())
        out.append(UInt8(ascii: "\n"))
    }
}

#if canImport(Glibc)
private func closeFile(_ fd: Int32) -> Int32 { Glibc.close(fd) }
#elseif canImport(Darwin)
private func closeFile(_ fd: Int32) -> Int32 { Darwin.close(fd) }
#endif
