import Dispatch
import Foundation
import Synchronization

/// Management calls shared by upload and download tasks.
public protocol StorageTaskManagement: AnyObject {
    func enqueue()
    func pause()
    func cancel()
    func resume()
}

/// Base of the task classes. `@unchecked Sendable` because the class is not final (the upload and download tasks
/// subclass it, as in Firebase); every mutable field lives in `core`, a `Mutex`, and subclasses add only `let`s.
public class StorageTask: @unchecked Sendable {
    struct Observer {
        var handle: StorageHandle
        var status: StorageTaskStatus
        var handler: @Sendable (StorageTaskSnapshot) -> Void
    }

    struct Core {
        var machine = TransferStateMachine()
        /// In registration order, so handlers for one event run in the order they were added.
        var observers: [Observer] = []
        /// Handles removed explicitly. Events are queued with the observers of the moment, so each handler is checked
        /// against this set again right before it runs: a removed handler never runs after its removal returns.
        var removed: Set<StorageHandle> = []
        /// Handle and status of the observers a final event dropped (their handlers are released), so that removing
        /// "all" observers still reaches events queued for them before the task finished.
        var retired: [(handle: StorageHandle, status: StorageTaskStatus)] = []
        var completed: Int64 = 0
        var total: Int64 = -1
        var lastReported: Int64 = -1
        /// Whether the task has fired `.progress` or `.resume` yet. Until then it counts as queueing, and Firebase
        /// replays neither to a new observer while queueing (it starts tasks asynchronously), so neither do we.
        var announced = false
        var metadata: StorageMetadata?
        var error: StorageError?
        var worker: Task<Void, Never>?
        /// Called once with the terminal snapshot, after the terminal observers (the completion handler).
        var completion: (@Sendable (StorageTaskSnapshot) -> Void)?
        /// Download state: the bytes of `getData`, or the partial file of `write(toFile:)`.
        var data = Data()
        var partial = PartialFile(url: nil)
    }

    let reference: StorageReference
    let core: Mutex<Core>

    init(reference: StorageReference, metadata: StorageMetadata? = nil) {
        self.reference = reference
        var core = Core()
        core.metadata = metadata
        self.core = Mutex(core)
    }

    /// The task's state now.
    public var snapshot: StorageTaskSnapshot {
        core.withLock { makeSnapshot($0, status: $0.machine.status) }
    }

    func makeSnapshot(_ core: Core, status: StorageTaskStatus) -> StorageTaskSnapshot {
        StorageTaskSnapshot(
            task: self, metadata: core.metadata, reference: reference, error: core.error?.nsError, status: status,
            completed: core.completed, total: core.total)
    }

    /// Overridden by the upload and download tasks: one attempt at the transfer. It reports through
    /// `workerProgress` and `workerFinished` and must stop promptly when its Swift Task is cancelled.
    func runWorker(_ worker: Int) async {}

    /// What a transition leaves to do once the lock is released: stop a worker, remove a partial file.
    private struct Aftermath: Sendable {
        var stop: Task<Void, Never>?
        var removal: PartialFile.Removal?
    }

    /// Applies a state-machine input and performs the resulting action. Events are queued on the callback queue while
    /// the lock is held, so observers see them in the order the machine produced them; file I/O waits until the lock
    /// is released.
    func transition(_ input: (inout Core) -> TransferStateMachine.Action) {
        let queue = reference.storage.callbackQueue
        let aftermath: Aftermath = core.withLock { core in
            let action = input(&core)
            switch action {
            case .none:
                return Aftermath()
            case .start(let w):
                core.worker = startWorker(w)
                return Aftermath()
            case .pause:
                let old = core.worker
                core.worker = nil
                fire(.pause, in: &core, on: queue)
                return Aftermath(stop: old)
            case .resume(let w):
                fire(.resume, in: &core, on: queue)
                core.worker = startWorker(w)
                return Aftermath()
            case .progress:
                fire(.progress, in: &core, on: queue)
                return Aftermath()
            case .succeed:
                // 100 % is reported once: not again if the last `.progress` already said it.
                if core.lastReported != core.completed { fire(.progress, in: &core, on: queue) }
                return Aftermath(removal: finish(.success, in: &core, on: queue))
            case .fail(let stopping, let finalProgress):
                let old = stopping != nil ? core.worker : nil
                core.worker = nil
                if finalProgress { fire(.progress, in: &core, on: queue) }
                return Aftermath(stop: old, removal: finish(.failure, in: &core, on: queue))
            }
        }
        aftermath.stop?.cancel()
        aftermath.removal?.perform()
    }

    private func startWorker(_ w: Int) -> Task<Void, Never> {
        // The Swift Task keeps the task object alive while bytes move, so callers need not hold it.
        Task { await self.runWorker(w) }
    }

    private func fire(_ status: StorageTaskStatus, in core: inout Core, on queue: DispatchQueue) {
        if status == .progress { core.lastReported = core.completed }
        if status == .progress || status == .resume { core.announced = true }
        let observers = core.observers.filter { $0.status == status }
        guard !observers.isEmpty else { return }
        let snapshot = makeSnapshot(core, status: status)
        queue.async {
            for observer in observers where !self.isRemoved(observer.handle) { observer.handler(snapshot) }
        }
    }

    func isRemoved(_ handle: StorageHandle) -> Bool {
        core.withLock { $0.removed.contains(handle) }
    }

    /// Returns the partial file to remove once the lock is released (a succeeded download already moved it away).
    private func finish(_ status: StorageTaskStatus, in core: inout Core, on queue: DispatchQueue)
        -> PartialFile.Removal?
    {
        fire(status, in: &core, on: queue)
        let snapshot = makeSnapshot(core, status: status)
        if let completion = core.completion { queue.async { completion(snapshot) } }
        core.completion = nil
        core.retired += core.observers.map { ($0.handle, $0.status) }
        core.observers.removeAll()
        return core.partial.abandon()
    }

    // MARK: worker reports

    /// Progress events are coalesced to one per 256 KiB (and the last one), not one per network read; a count already
    /// reported is not reported again.
    func workerProgress(_ w: Int, completed: Int64, total: Int64? = nil) {
        transition { core in
            guard core.machine.isCurrent(w) else { return .none }
            core.completed = max(core.completed, completed)
            if let total { core.total = total }
            guard core.completed != core.lastReported,
                core.completed - core.lastReported >= 256 * 1024 || core.completed == core.total
            else { return .none }
            return core.machine.progressed(worker: w)
        }
    }

    func workerFinished(_ w: Int, _ result: Result<StorageMetadata?, StorageError>) {
        transition { core in
            guard core.machine.isCurrent(w) else { return .none }
            switch result {
            case .success(let metadata):
                if let metadata { core.metadata = metadata }
                return core.machine.succeeded(worker: w)
            case .failure(let error):
                core.error = error
                return core.machine.failed(worker: w, code: error.code)
            }
        }
    }
}

/// A task whose events can be observed.
public class StorageObservableTask: StorageTask, @unchecked Sendable {
    /// Calls `handler` on the callback queue for every later event of `status`; if the task is already in that state
    /// it is also called once at once (so late registration after a quick finish is safe). As in Firebase, a task
    /// that has not reported anything since it started (queueing) replays neither `.resume` nor `.progress`. After
    /// success or failure all observers are removed. `.unknown` traps, as in Firebase.
    @discardableResult
    public func observe(_ status: StorageTaskStatus, handler: @escaping @Sendable (StorageTaskSnapshot) -> Void)
        -> StorageHandle
    {
        guard status != .unknown else {
            fatalError("Invalid observer status requested, use one of: Pause, Resume, Progress, Complete, or Failure")
        }
        let handle = UUID().uuidString
        let queue = reference.storage.callbackQueue
        core.withLock { core in
            let queueing = !core.announced && (status == .resume || status == .progress)
            if core.machine.replays(status), !queueing {
                let snapshot = makeSnapshot(core, status: status)
                queue.async { if !self.isRemoved(handle) { handler(snapshot) } }
            }
            if !core.machine.isTerminal {
                core.observers.append(Observer(handle: handle, status: status, handler: handler))
            }
        }
        return handle
    }

    /// Unknown handles are ignored. Once this returns the handler is not called again, even for an event that was
    /// already queued on the callback queue (or a pending replay).
    public func removeObserver(withHandle handle: StorageHandle) {
        core.withLock { core in
            core.observers.removeAll { $0.handle == handle }
            core.removed.insert(handle)
        }
    }

    /// Removes the observers of `status`; like `removeObserver(withHandle:)`, queued events skip them.
    public func removeAllObservers(for status: StorageTaskStatus) {
        core.withLock { core in
            for observer in core.observers where observer.status == status { core.removed.insert(observer.handle) }
            for observer in core.retired where observer.status == status { core.removed.insert(observer.handle) }
            core.observers.removeAll { $0.status == status }
        }
    }

    /// Removes every observer; like `removeObserver(withHandle:)`, queued events skip them.
    public func removeAllObservers() {
        core.withLock { core in
            for observer in core.observers { core.removed.insert(observer.handle) }
            for observer in core.retired { core.removed.insert(observer.handle) }
            core.observers.removeAll()
        }
    }

    // The management calls. Firebase declares them on the upload and download classes (StorageTaskManagement), not
    // here; those classes forward to these.

    func enqueueTask() { transition { $0.machine.enqueue() } }

    func pauseTask() { transition { $0.machine.pause() } }

    func resumeTask() { transition { $0.machine.resume() } }

    func cancelTask() {
        transition { core in
            let action = core.machine.cancel()
            if action != .none { core.error = .cancelled }
            return action
        }
    }

    func setCompletion(_ completion: (@Sendable (StorageTaskSnapshot) -> Void)?) {
        core.withLock { $0.completion = completion }
    }
}
