/// The life of an upload or download task as a pure value, testable without I/O: each input returns the one
/// `Action` the owning task must perform. No I/O, no clock, no callbacks here.
///
/// A "worker" is one attempt at moving bytes (a Swift Task). Each start or resume makes a new worker number; inputs
/// from any other worker are stale (it was paused or cancelled) and are ignored, so a late network event can never
/// change a paused or finished task.
struct TransferStateMachine: Sendable, Equatable {
    enum State: Sendable, Equatable {
        case created
        case running(worker: Int)
        /// Every byte is in and worker `worker` is putting the result in place (a download moves its file over the
        /// destination): too late to pause or cancel, as after success.
        case committing(worker: Int)
        case paused
        case succeeded
        case failed
        case cancelled
    }

    enum Action: Sendable, Equatable {
        case none
        /// Start worker `worker`; no event (Firebase fires no `.resume` when a task first starts).
        case start(worker: Int)
        /// Stop worker `stopping` (if any); fire `.pause`.
        case pause(stopping: Int?)
        /// Fire `.resume`; start worker `worker`.
        case resume(worker: Int)
        /// Fire `.progress`.
        case progress
        /// Fire a final `.progress`, then `.success`; call the completion; drop all observers.
        case succeed
        /// Stop worker `stopping` (if any); fire a final `.progress` if `finalProgress`, then `.failure`; call the
        /// completion; drop all observers. The error is `failure`.
        case fail(stopping: Int?, finalProgress: Bool)
    }

    private(set) var state: State = .created
    private(set) var failure: StorageErrorCode?
    private var workers = 0

    var isTerminal: Bool {
        switch state {
        case .succeeded, .failed, .cancelled: true
        default: false
        }
    }

    var status: StorageTaskStatus {
        switch state {
        case .created: .unknown
        case .running, .committing: .resume
        case .paused: .pause
        case .succeeded: .success
        case .failed, .cancelled: .failure
        }
    }

    func isCurrent(_ worker: Int) -> Bool { state == .running(worker: worker) || state == .committing(worker: worker) }

    private mutating func newWorker() -> Int {
        workers += 1
        return workers
    }

    /// Starting twice is a no-op (Firebase would start a second transfer).
    mutating func enqueue() -> Action {
        guard state == .created else { return .none }
        let w = newWorker()
        state = .running(worker: w)
        return .start(worker: w)
    }

    mutating func pause() -> Action {
        switch state {
        case .created:
            state = .paused
            return .pause(stopping: nil)
        case .running(let w):
            state = .paused
            return .pause(stopping: w)
        default:
            return .none
        }
    }

    mutating func resume() -> Action {
        switch state {
        case .created, .paused:
            let w = newWorker()
            state = .running(worker: w)
            return .resume(worker: w)
        default:
            return .none
        }
    }

    mutating func cancel() -> Action {
        switch state {
        case .created, .paused:
            state = .cancelled
            failure = .cancelled
            return .fail(stopping: nil, finalProgress: false)
        case .running(let w):
            state = .cancelled
            failure = .cancelled
            return .fail(stopping: w, finalProgress: false)
        default:
            return .none
        }
    }

    mutating func progressed(worker: Int) -> Action {
        isCurrent(worker) ? .progress : .none
    }

    /// Worker `worker` starts putting the result in place; false if it is stale.
    mutating func commit(worker: Int) -> Bool {
        guard isCurrent(worker) else { return false }
        state = .committing(worker: worker)
        return true
    }

    mutating func succeeded(worker: Int) -> Action {
        guard isCurrent(worker) else { return .none }
        state = .succeeded
        return .succeed
    }

    mutating func failed(worker: Int, code: StorageErrorCode) -> Action {
        guard isCurrent(worker) else { return .none }
        state = .failed
        failure = code
        return .fail(stopping: nil, finalProgress: true)
    }

    /// Whether an observer registered now for `status` is called at once with the current snapshot: `.pause` while
    /// paused, `.resume` and `.progress` while running, `.success` after success, `.failure` after a failure other
    /// than cancellation.
    func replays(_ status: StorageTaskStatus) -> Bool {
        switch (state, status) {
        case (.paused, .pause), (.running, .resume), (.running, .progress), (.committing, .resume),
            (.committing, .progress), (.succeeded, .success), (.failed, .failure):
            true
        default:
            false
        }
    }
}
