// The download guide's FirebaseUI sample, its Swift lines unchanged apart from the import (`SiloStorageUI` for
// `FirebaseStorageUI`): building this test target on iOS or Mac Catalyst is the check that they compile. Not
// compiled or run here (Linux has no UIKit).
#if canImport(UIKit)
import SiloStorage
import SiloStorageUI
import UIKit

@MainActor
final class FirebaseUISeedViewController: UIViewController {
    let imageView = UIImageView()
    let storageRef = Storage(url: "gs://demo.appspot.com").reference()

    func seed() {
        // Reference to an image file in Firebase Storage
        let reference = storageRef.child("images/stars.jpg")

        // UIImageView in your ViewController
        let imageView: UIImageView = self.imageView

        // Placeholder image
        let placeholderImage = UIImage(named: "placeholder.jpg")

        // Load the image using SDWebImage
        imageView.sd_setImage(with: reference, placeholderImage: placeholderImage)
    }
}
#endif
