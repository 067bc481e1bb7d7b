import Foundation
import SiloCore
import SiloHTTP
import SiloServer
import SiloServerKit
import SiloTestStores
import SiloTesting
import Synchronization
import Testing

/// No store call runs on an event-loop thread: with the server on **one** event loop, an upload whose metadata
/// commit is held inside the store (a hook that waits) must not stop other connections from being answered — a
/// cached download, and a metadata read that needs the store itself. Before blocking work moved to workers, the
/// held commit parked the only loop thread and both GETs waited for it.
///
/// The waits here are liveness bounds, not timings: the hook gives up after `holdLimit` so that a regression
/// fails the ordering check below instead of hanging the suite.
@Suite struct LoopBlockingTests {
    static let holdLimit = 20.0

    /// One upload parked in `insertObject` until released.
    final class Gate: Sendable {
        private let entered = DispatchSemaphore(value: 0)
        private let release = DispatchSemaphore(value: 0)
        private let state = Mutex((armed: false, releasedByTest: false, gaveUp: false))

        func arm() { state.withLock { $0.armed = true } }

        /// The hook: parks the first armed `insertObject`.
        func hold(_ call: StoreCall, _ moment: CallMoment) {
            guard moment == .before, call.method == "insertObject" else { return }
            let park = state.withLock { state -> Bool in
                defer { state.armed = false }
                return state.armed
            }
            guard park else { return }
            entered.signal()
            if release.wait(timeout: .now() + LoopBlockingTests.holdLimit) == .timedOut {
                state.withLock { $0.gaveUp = true }
            }
        }

        func waitUntilEntered() -> Bool { entered.wait(timeout: .now() + LoopBlockingTests.holdLimit) == .success }

        /// Lets the parked upload go; false if it had already given up waiting (the other requests were stuck).
        func open() -> Bool {
            let gaveUp = state.withLock { state -> Bool in
                state.releasedByTest = true
                return state.gaveUp
            }
            release.signal()
            return !gaveUp
        }
    }

    @Test func aHeldStoreCommitDoesNotStopOtherConnections() throws {
        let hooks = StoreCallHooks()
        let gate = Gate()
        hooks.set { call, moment in gate.hold(call, moment) }
        let server = try TestServer(hooks: hooks, threads: 1)
        defer { server.shutdown() }
        let setup = server.client()
        #expect(try setup.mediaUpload("cached.txt", Array("cached".utf8)).status == 200)
        #expect(try setup.mediaUpload("other.txt", Array("other".utf8)).status == 200)
        // Twice: the first read gives the object its download token; the second is the cached path.
        for _ in 0..<2 { #expect(try setup.get(objectPath("cached.txt") + "?alt=media").status == 200) }

        gate.arm()
        let port = server.port
        let upload = Thread.detach { () -> Int in
            (try? HTTPTestClient(port: port).mediaUpload("held.txt", Array("held".utf8)).status) ?? -1
        }
        #expect(gate.waitUntilEntered(), "the upload reached the store")

        // While the commit is held: a cached download and a metadata read that needs the store.
        // Patient enough to see the hold give up, so that a stuck loop fails the ordering check, not a timeout.
        let reader = HTTPTestClient(port: server.port, timeoutSeconds: Self.holdLimit + 10)
        let cached = try reader.get(objectPath("cached.txt") + "?alt=media")
        let metadata = try reader.get(objectPath("other.txt"))
        let answeredWhileHeld = gate.open()

        #expect(cached.status == 200 && cached.text == "cached")
        #expect(metadata.status == 200 && metadata.text.contains("\"name\":\"other.txt\""))
        #expect(answeredWhileHeld, "the GETs were answered only after the held commit gave up")
        #expect(upload.join() == 200)
    }
}

extension Thread {
    /// Runs `body` on a new thread; `join` waits for its result.
    fileprivate static func detach<T: Sendable>(_ body: @escaping @Sendable () -> T) -> Joinable<T> {
        let joinable = Joinable<T>()
        Thread { joinable.finish(body()) }.start()
        return joinable
    }
}

private final class Joinable<T: Sendable>: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let result = Mutex<T?>(nil)

    func finish(_ value: T) {
        result.withLock { $0 = value }
        done.signal()
    }

    func join() -> T {
        done.wait()
        return result.withLock { $0! }
    }
}
