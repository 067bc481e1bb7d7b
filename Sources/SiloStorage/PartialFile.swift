import Foundation

/// A `write(toFile:)` download's partial file and who holds it, kept in the task's core.
///
/// The file's I/O (open, write, truncate, move, remove) runs outside the task's lock, so pause, cancel, snapshots
/// and observers never wait for the disk: the lock guards only this state. One party at a time holds the file and
/// is the only one to touch it: a worker while it opens, writes or truncates it, the success path while it moves it
/// into place, the end of the task while it removes it. A worker paused in the middle of a write still finishes
/// that write (the transport may be delivering when the worker's Swift Task stops), so the resumed worker's open
/// waits for it, suspended rather than blocking a thread; a task that ends while the file is held leaves the
/// removal to the holder.
struct PartialFile {
    /// Where the bytes go until the download succeeds; nil for `getData`, and once the file was moved or removed.
    var url: URL?
    /// Opened by a worker's open; closed by the next open, the move or the removal.
    var handle: FileHandle?
    /// A test seam: called before each write of a chunk, outside the lock.
    var beforeWrite: (@Sendable () -> Void)?
    private var held = false
    /// Opens waiting for the holder to let go, in arrival order.
    private var waiting: [CheckedContinuation<Bool, Never>] = []
    /// The task ended while the file was held: the holder removes it when it lets go.
    private var removeOnRelease = false

    /// What is left to do once the lock is released: close the file and delete it.
    struct Removal: Sendable {
        let handle: FileHandle?
        let url: URL

        func perform() {
            try? handle?.close()
            try? FileManager.default.removeItem(at: url)
        }
    }

    /// What `release` leaves to do once the lock is released: resume the open whose turn it is, remove the file.
    struct Release: Sendable {
        var next: CheckedContinuation<Bool, Never>?
        var removal: Removal?

        func perform() {
            removal?.perform()
            next?.resume(returning: true)
        }
    }

    init(url: URL?) { self.url = url }

    /// Holds the file if nobody does.
    mutating func hold() -> Bool {
        guard !held else { return false }
        held = true
        return true
    }

    /// Holds the file if nobody does (true: the caller resumes `waiter` itself); otherwise `waiter` waits for its
    /// turn, and the `release` that hands the file over resumes it.
    mutating func hold(orQueue waiter: CheckedContinuation<Bool, Never>) -> Bool {
        if hold() { return true }
        waiting.append(waiter)
        return false
    }

    /// Lets go of the file: the first waiting open holds it now, or nobody does.
    mutating func release() -> Release {
        var release = Release()
        if removeOnRelease {
            removeOnRelease = false
            release.removal = takeForRemoval()
        }
        if waiting.isEmpty {
            held = false
        } else {
            release.next = waiting.removeFirst()
        }
        return release
    }

    /// The task ended: the file goes, at once if nobody holds it (the caller performs the removal outside the
    /// lock), else when its holder lets go.
    mutating func abandon() -> Removal? {
        guard url != nil else { return nil }
        if held {
            removeOnRelease = true
            return nil
        }
        return takeForRemoval()
    }

    private mutating func takeForRemoval() -> Removal? {
        guard let url else { return nil }
        defer {
            self.url = nil
            handle = nil
        }
        return Removal(handle: handle, url: url)
    }
}
