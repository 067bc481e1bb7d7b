import Foundation
import SiloStorage
import Synchronization

/// Stand-ins for UIKit and FirebaseUI, which are not part of this SDK (the seed samples name them).
struct UIImage {
    init?(data: Data) { if data.isEmpty { return nil } }
    init?(named: String) { return nil }
}

final class UIImageView: Sendable {
    let loaded = Mutex<Data?>(nil)
    func sd_setImage(with reference: StorageReference, placeholderImage: UIImage?) {
        reference.getData(maxSize: 10 << 20) { data, _ in self.loaded.withLock { $0 = data } }
    }
}

/// Collects what callbacks on other threads saw, for the checks after each sample.
final class Seen: Sendable {
    private let items = Mutex<[String]>([])
    func add(_ item: String) { items.withLock { $0.append(item) } }
    var all: [String] { items.withLock { $0 } }
}

/// The checks of the samples' results: a failed one prints `FAIL` and makes the exit status 1. On the main actor, as
/// the top-level code that calls it (its closures read that code's values).
@MainActor enum Check {
    private static let failures = Mutex(0)

    static func that(_ condition: Bool, _ what: String) {
        if condition {
            say("ok \(what)")
        } else {
            say("FAIL \(what)")
            failures.withLock { $0 += 1 }
        }
    }

    /// Unbuffered, so a crash loses nothing that was already checked.
    private static func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

    static var failed: Bool { failures.withLock { $0 > 0 } }

    /// Polls until `condition` holds or `seconds` pass.
    static func until(_ seconds: Double = 60, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }

    /// Waits for a task's final event.
    static func finish(_ task: StorageDownloadTask) async -> StorageTaskSnapshot? {
        let done = Mutex<StorageTaskSnapshot?>(nil)
        task.observe(.success) { snapshot in done.withLock { $0 = snapshot } }
        task.observe(.failure) { snapshot in done.withLock { $0 = snapshot } }
        _ = await until { done.withLock { $0 } != nil || task.snapshot.status == .failure }
        return done.withLock { $0 } ?? task.snapshot
    }
}
