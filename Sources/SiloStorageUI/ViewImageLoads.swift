// Apple platforms only: not compiled or run on Linux, where this project is built and tested.
#if canImport(ObjectiveC) && (canImport(UIKit) || canImport(AppKit))
import Foundation
import ObjectiveC
import SiloStorage

/// The load an image view is showing, kept on the view itself (an associated object), so that setting a new
/// reference — a reused table cell — cancels the previous load instead of letting it land late.
@MainActor
enum ViewImageLoads {
    private final class Current {
        let task: Task<Void, Never>
        init(_ task: Task<Void, Never>) { self.task = task }
        deinit { task.cancel() }
    }
    private static var key: UInt8 = 0

    /// Cancels `view`'s previous load and starts loading `reference`; `deliver` runs on the main actor unless the
    /// load was replaced or cancelled meanwhile.
    static func start(
        on view: AnyObject, reference: StorageReference, loader: StorageImageLoader,
        deliver: @escaping @MainActor (Result<StorageImageResult, any Error>) -> Void
    ) {
        let task = Task { @MainActor in
            let result: Result<StorageImageResult, any Error>
            do { result = .success(try await loader.load(reference)) } catch { result = .failure(error) }
            guard !Task.isCancelled else { return }
            deliver(result)
        }
        objc_setAssociatedObject(view, &key, Current(task), .OBJC_ASSOCIATION_RETAIN_NONATOMIC)
    }
}
#endif
