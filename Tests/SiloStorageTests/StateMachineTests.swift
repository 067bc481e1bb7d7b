import Testing

@testable import SiloStorage

@Suite struct StateMachineTests {
    typealias M = TransferStateMachine

    @Test func startProgressSuccess() {
        var m = M()
        #expect(m.status == .unknown)
        #expect(m.enqueue() == .start(worker: 1))
        #expect(m.enqueue() == .none)  // idempotent
        #expect(m.status == .resume)
        #expect(m.progressed(worker: 1) == .progress)
        #expect(m.succeeded(worker: 1) == .succeed)
        #expect(m.status == .success)
        #expect(m.isTerminal)
        #expect(m.pause() == .none)
        #expect(m.resume() == .none)
        #expect(m.cancel() == .none)
    }

    @Test func failureFiresFinalProgress() {
        var m = M()
        _ = m.enqueue()
        #expect(m.failed(worker: 1, code: .objectNotFound) == .fail(stopping: nil, finalProgress: true))
        #expect(m.failure == .objectNotFound)
        #expect(m.replays(.failure))
        #expect(!m.replays(.success))
    }

    @Test func pauseResumeMakesNewWorkerAndIgnoresTheOld() {
        var m = M()
        _ = m.enqueue()
        #expect(m.pause() == .pause(stopping: 1))
        #expect(m.pause() == .none)
        #expect(m.status == .pause)
        // Late events from the stopped worker change nothing.
        #expect(m.progressed(worker: 1) == .none)
        #expect(m.succeeded(worker: 1) == .none)
        #expect(m.failed(worker: 1, code: .unknown) == .none)
        #expect(m.resume() == .resume(worker: 2))
        #expect(m.resume() == .none)
        #expect(m.succeeded(worker: 1) == .none)
        #expect(m.succeeded(worker: 2) == .succeed)
    }

    @Test func committingIsTooLateToPauseOrCancel() {
        var m = M()
        _ = m.enqueue()
        let stale = m.commit(worker: 2)
        #expect(!stale)
        let current = m.commit(worker: 1)
        #expect(current)
        #expect(m.status == .resume && m.isCurrent(1) && !m.isTerminal)
        #expect(m.replays(.progress))
        #expect(m.pause() == .none)
        #expect(m.cancel() == .none)
        #expect(m.succeeded(worker: 1) == .succeed)
    }

    @Test func cancelFromEveryLiveState() {
        var running = M()
        _ = running.enqueue()
        #expect(running.cancel() == .fail(stopping: 1, finalProgress: false))
        #expect(running.failure == .cancelled)
        #expect(!running.replays(.failure))  // Firebase does not replay a cancellation
        #expect(running.succeeded(worker: 1) == .none)

        var paused = M()
        _ = paused.enqueue()
        _ = paused.pause()
        #expect(paused.cancel() == .fail(stopping: nil, finalProgress: false))

        var created = M()
        #expect(created.cancel() == .fail(stopping: nil, finalProgress: false))
        #expect(created.enqueue() == .none)
    }

    @Test func pauseBeforeStart() {
        var m = M()
        #expect(m.pause() == .pause(stopping: nil))
        #expect(m.enqueue() == .none)
        #expect(m.resume() == .resume(worker: 1))
    }

    @Test func replayRules() {
        var m = M()
        _ = m.enqueue()
        #expect(m.replays(.resume) && m.replays(.progress))
        #expect(!m.replays(.pause) && !m.replays(.success))
        _ = m.pause()
        #expect(m.replays(.pause) && !m.replays(.progress))
        _ = m.resume()
        _ = m.succeeded(worker: 2)
        #expect(m.replays(.success) && !m.replays(.progress))
    }
}

@Suite struct RetryBackoffTests {
    @Test(arguments: [
        (1.0, 1.0), (2, 2), (4, 4), (10, 8), (20, 16), (30, 16), (40, 32), (50, 32), (60, 32), (11, 8), (120, 64),
        (600, 512),
    ])
    func capTable(budget: Double, cap: Double) {
        #expect(RetryBackoff.cap(for: budget) == cap)
    }

    @Test func doublesUpToTheCapWithinTheBudget() {
        var b = RetryBackoff(budget: 10)
        #expect(b.delay(elapsed: 0) == 1)
        #expect(b.delay(elapsed: 1) == 2)
        #expect(b.delay(elapsed: 3) == 4)
        #expect(b.delay(elapsed: 7) == nil)  // 7 + 8 > 10
        var c = RetryBackoff(budget: 3)
        #expect(c.delay(elapsed: 0) == 1)
        #expect(c.delay(elapsed: 1) == 2)
        #expect(c.delay(elapsed: 3) == nil)
    }

    @Test func retryAfterOverridesButStaysInBudget() {
        var b = RetryBackoff(budget: 10)
        #expect(b.delay(elapsed: 0, retryAfter: 5) == 5)
        #expect(b.delay(elapsed: 6, retryAfter: 5) == nil)
    }

    @Test func whatIsRetried() {
        #expect([408, 502, 503, 504].allSatisfy(RetryBackoff.isRetryable(status:)))
        #expect(![400, 401, 403, 404, 429, 500].contains(where: RetryBackoff.isRetryable(status:)))
        #expect(!RetryBackoff.isRetryable(CancellationError()))
    }
}
