import SiloStorage
import Synchronization

/// The loads under way, one per (key, named generation), and the callers waiting on each. All of it sits under one
/// lock, so joining, leaving and completing never race; continuations are resumed after the lock is released.
///
/// A caller's life: `join` makes it a member (starting a flight if none is under way), `wait` registers its
/// continuation, and either the flight completes (every member gets the result) or the caller's Task is cancelled
/// (`leave`: it alone gets `.cancelled`, and when it was the last member the download itself is cancelled). A
/// cancellation or completion that happens before the caller registers is kept in `early` until it does.
final class ImageLoadFlights: Sendable {
    struct Key: Hashable, Sendable {
        var cache: ImageCacheKey
        var generation: Int64?
    }
    typealias Outcome = Result<StorageImageResult, StorageError>

    private struct Flight {
        let id: UInt64
        var task: Task<Void, Never>?
        var members: Set<UInt64>
        var waiters: [UInt64: CheckedContinuation<StorageImageResult, any Error>] = [:]
    }
    private struct State {
        var flights: [Key: Flight] = [:]
        var early: [UInt64: Outcome] = [:]
        var nextID: UInt64 = 0
    }
    private let state = Mutex(State())

    /// Makes the caller a member of the flight for `key`; `start` runs (outside the lock) only when this call made
    /// a new flight, and returns the Task that does the work.
    func join(_ key: Key, start: (_ flight: UInt64) -> Task<Void, Never>) -> UInt64 {
        let (member, newFlight) = state.withLock { s -> (UInt64, UInt64?) in
            s.nextID += 1
            let member = s.nextID
            if s.flights[key] != nil {
                s.flights[key]!.members.insert(member)
                return (member, nil)
            }
            s.nextID += 1
            s.flights[key] = Flight(id: s.nextID, members: [member])
            return (member, s.nextID)
        }
        if let newFlight {
            let task = start(newFlight)
            let orphaned = state.withLock { s -> Bool in
                guard s.flights[key]?.id == newFlight else { return true }
                s.flights[key]!.task = task
                return false
            }
            // Every member left before the task was recorded: nobody else can cancel it.
            if orphaned { task.cancel() }
        }
        return member
    }

    /// Waits for the flight's result; cancelling the calling Task makes this member leave.
    func wait(_ key: Key, member: UInt64) async throws -> StorageImageResult {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<StorageImageResult, any Error>) in
                let early = state.withLock { s -> Outcome? in
                    if let outcome = s.early.removeValue(forKey: member) { return outcome }
                    s.flights[key]!.waiters[member] = c
                    return nil
                }
                if let early { c.resume(with: early.mapError { $0 as any Error }) }
            }
        } onCancel: {
            leave(key, member: member)
        }
    }

    private func leave(_ key: Key, member: UInt64) {
        let (waiter, task) = state.withLock {
            s -> (CheckedContinuation<StorageImageResult, any Error>?, Task<Void, Never>?) in
            guard var flight = s.flights[key], flight.members.contains(member) else { return (nil, nil) }
            flight.members.remove(member)
            let waiter = flight.waiters.removeValue(forKey: member)
            if waiter == nil { s.early[member] = .failure(.cancelled) }
            if flight.members.isEmpty {
                s.flights[key] = nil
                return (waiter, flight.task)
            }
            s.flights[key] = flight
            return (waiter, nil)
        }
        waiter?.resume(throwing: StorageError.cancelled)
        task?.cancel()
    }

    /// Hands `outcome` to every member of flight `id`; nothing when that flight was abandoned (all members left).
    func complete(_ key: Key, flight id: UInt64, with outcome: Outcome) {
        let waiters = state.withLock { s -> [CheckedContinuation<StorageImageResult, any Error>] in
            guard let flight = s.flights[key], flight.id == id else { return [] }
            s.flights[key] = nil
            for member in flight.members where flight.waiters[member] == nil { s.early[member] = outcome }
            return Array(flight.waiters.values)
        }
        for waiter in waiters { waiter.resume(with: outcome.mapError { $0 as any Error }) }
    }

    /// Loads under way, and the callers waiting on them (for tests and diagnostics).
    var count: Int { state.withLock { $0.flights.count } }
    var memberCount: Int { state.withLock { $0.flights.values.reduce(0) { $0 + $1.members.count } } }
}
