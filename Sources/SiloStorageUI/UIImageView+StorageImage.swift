// Apple platforms only: not compiled or run on Linux, where this project is built and tested.
#if canImport(UIKit)
public import SiloStorage
public import UIKit

/// FirebaseUI's `UIImageView` calls, over `StorageImageLoader.shared`: the placeholder at once, then the image.
extension UIImageView {
    public func sd_setImage(with reference: StorageReference, placeholderImage: UIImage?) {
        sd_setImage(with: reference, placeholderImage: placeholderImage, completion: nil)
    }

    public func sd_setImage(
        with reference: StorageReference, placeholderImage: UIImage?,
        completion: (@MainActor (UIImage?, (any Error)?, StorageImageCacheType, StorageReference) -> Void)?
    ) {
        image = placeholderImage
        ViewImageLoads.start(on: self, reference: reference, loader: .shared) { [weak self] result in
            switch result {
            case .success(let loaded):
                let decoded = UIImage(data: loaded.data)
                if let decoded { self?.image = decoded }
                let error =
                    decoded == nil
                    ? StorageError.unknown(message: "\(reference) is not an image", serverError: [:]) : nil
                completion?(decoded, error, StorageImageCacheType(loaded.source), reference)
            case .failure(let error):
                completion?(nil, error, .none, reference)
            }
        }
    }
}
#endif
