public import Foundation

/// An immutable view of a task at the moment of an event.
public final class StorageTaskSnapshot: Sendable, CustomStringConvertible {
    public let task: StorageTask
    /// Uploads: the request metadata while running, the server's after success. Downloads: nil.
    public let metadata: StorageMetadata?
    public let reference: StorageReference
    public let error: (any Error)?
    public let status: StorageTaskStatus
    /// Bytes moved so far and bytes expected (−1 when the server did not say).
    let completedUnitCount: Int64
    let totalUnitCount: Int64

    init(
        task: StorageTask, metadata: StorageMetadata?, reference: StorageReference, error: (any Error)?,
        status: StorageTaskStatus, completed: Int64, total: Int64
    ) {
        self.task = task
        self.metadata = metadata
        self.reference = reference
        self.error = error
        self.status = status
        self.completedUnitCount = completed
        self.totalUnitCount = total
    }

    /// A new `Progress` with the snapshot's counts (a fresh object on each access, as Firebase makes one per event).
    public var progress: Progress? {
        let p = Progress.discreteProgress(totalUnitCount: totalUnitCount)
        p.completedUnitCount = completedUnitCount
        return p
    }

    /// Firebase's strings: `<State: Progress, Progress: …>`, `<State: Paused>`, `<State: Failed, Error: …` (sic).
    public var description: String {
        switch status {
        case .progress: "<State: Progress, Progress: Optional(\(completedUnitCount)/\(totalUnitCount))>"
        case .failure: "<State: Failed, Error: \(String(describing: error))"
        default: "<State: \(status.stateName)>"
        }
    }
}
