internal import CLinux
import Dispatch
import Synchronization

/// Hands freed heap back to the kernel (`malloc_trim`) on a utility thread, at most one trim at a time for all
/// loops: loops that release idle connections' buffers in the same sweep share the walk.
enum HeapTrim {
    private static let running = Atomic<Bool>(false)

    static func request() {
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return }
        DispatchQueue.global(qos: .utility).async {
            silo_release_free_heap()
            running.store(false, ordering: .releasing)
        }
    }
}
