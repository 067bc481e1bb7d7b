package import SiloCore
package import SiloHTTP
import Synchronization

/// Request ids: the `X-Request-Id` a client sent when it is short and safe to echo and log, else one made here.
///
/// Made ids are a random per-process prefix (28 bits) and a counter (32 bits), 15 hex digits: unique enough to find
/// a log line, made without a system call (a random number per request would cost one `getrandom`, and the GET path
/// is counted in system calls by `bench/guard.sh`), and short enough for a small string, which takes no allocation.
/// Nothing trusts them: they name a request, they authorize nothing.
final class RequestIDs: Sendable {
    private let prefix: UInt64
    private let counter = Atomic<UInt64>(0)

    init() { prefix = UInt64.random(in: 0...0xFFF_FFFF) << 32 }

    func next() -> String {
        let value = prefix | (counter.wrappingAdd(1, ordering: .relaxed).newValue & 0xFFFF_FFFF)
        return String(unsafeUninitializedCapacity: 15) { buffer in
            for index in 0..<15 {
                let nibble = UInt8(truncatingIfNeeded: value >> (56 - 4 * UInt64(index))) & 0xF
                buffer[index] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
            }
            return 15
        }
    }

    /// The client's `X-Request-Id` when it is 1 to 64 bytes of letters, digits, `-`, `_` and `.` (safe in a
    /// header, a JSON string and a shell); else a new id.
    func resolve(_ head: HTTPRequestHead) -> String { clientID(head) ?? next() }

    /// The client's acceptable `X-Request-Id`, if it sent one (``resolve(_:)``).
    func clientID(_ head: HTTPRequestHead) -> String? {
        head.headers["X-Request-Id"].flatMap { Self.isAcceptable($0) ? $0 : nil }
    }

    static func isAcceptable(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.withUTF8Bytes { bytes in
                bytes.allSatisfy { byte in
                    switch byte {
                    case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                        true
                    default: false
                    }
                }
            }
    }
}

/// The id of the request the current thread serves, for answers built deep in a handler (a 5xx names it in its
/// message, ``Reply/failing(_:status:headers:render:)``): bound by the pipeline around the handler and its sink.
enum RequestIdentity {
    @TaskLocal static var current: String?
}

/// What the pipeline learns about one request on its way through, for its metrics and its access-log line.
///
/// Its fields (``Fields``, read and written as the exchange's own through dynamic member lookup) live in one
/// ``CopyOnWrite`` storage: the pipeline hands the exchange from step to step, and its five strings made each copy
/// ten retains and releases.
@dynamicMemberLookup
package struct Exchange {
    package struct Fields {
        /// ``RequestMetrics/now()`` when the pipeline got the head.
        let started: UInt64
        /// Set before the handler on a worker; on an event loop only once an answer is kept (a declined inline
        /// attempt makes none).
        var id: String?
        var route = RouteLabel.invalid
        /// The route sets its own cross-origin policy (``RouteTarget/setsOwnCrossOriginPolicy``).
        var ownsCrossOrigin = false
        var bucket: BucketName?
        var object: ObjectName?
        var caller = Caller.anonymous
        var bytesIn: Int64 = 0
        /// The batch this request is a call of.
        var parent: String?
    }

    private var storage: CopyOnWrite<Fields>

    init(id: String?) {
        storage = CopyOnWrite(Fields(started: RequestMetrics.now(), id: id))
    }

    package subscript<T>(dynamicMember field: KeyPath<Fields, T>) -> T { storage.values[keyPath: field] }

    subscript<T>(dynamicMember field: WritableKeyPath<Fields, T>) -> T {
        _read { yield storage.values[keyPath: field] }
        _modify { yield &storage.values[keyPath: field] }
    }

    /// Who called, as the access log names them: never a credential.
    enum Caller: Sendable {
        case anonymous, admin
        case user(uid: String)
        case serviceAccount(email: String)
        /// A credential without a uid (a Bearer access token of no service account, a self-issued token without
        /// `sub`).
        case authenticated

        init(_ principal: Principal?) {
            guard let principal else {
                self = .anonymous
                return
            }
            if principal.isAdmin {
                self = .admin
            } else if let account = principal.serviceAccount {
                self = .serviceAccount(email: account.email)
            } else if let uid = principal.uid {
                self = .user(uid: uid)
            } else {
                self = .authenticated
            }
        }
    }

    /// Route, bucket and object from the router's answer; whether the route sets its own cross-origin policy.
    mutating func routed(_ route: Route, _ head: HTTPRequestHead) {
        let target = route.target
        self.route = target.label
        (self.bucket, self.object) = target.logged(head)
        self.ownsCrossOrigin = target.setsOwnCrossOriginPolicy
    }

    /// A request whose target the router refused, under `label`.
    mutating func refused(_ label: RouteLabel) {
        self.route = label
    }

    /// The object an upload names in its query (`?name=`), when it is a valid name: what the access log names a
    /// `POST` to a bucket's upload route by.
    package static func postedName(_ head: HTTPRequestHead) -> ObjectName? {
        // Through the memo: the context parses the same query next, and finds it there.
        guard head.method == "POST", let name = (try? TargetMemo.query(head))?["name"] else { return nil }
        return try? ObjectName(name)
    }
}
