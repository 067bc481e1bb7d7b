// Apple platforms only: not compiled or run on Linux, where this project is built and tested.
#if canImport(SwiftUI) && (canImport(UIKit) || canImport(AppKit))
public import SiloStorage
public import SwiftUI

#if canImport(UIKit)
import UIKit
#else
import AppKit
#endif

/// A SwiftUI view showing the image at a storage reference (or its thumbnail): `placeholder` until it has loaded
/// through `StorageImageLoader`, then `content` with the image. Changing the reference cancels the previous load.
public struct StorageImage<Content: View, Placeholder: View>: View {
    let reference: StorageReference
    let transform: StorageImageTransform?
    let loader: StorageImageLoader
    let content: (Image) -> Content
    let placeholder: () -> Placeholder
    @State private var image: Image?

    public init(
        _ reference: StorageReference, transform: StorageImageTransform? = nil,
        loader: StorageImageLoader = .shared, @ViewBuilder content: @escaping (Image) -> Content,
        @ViewBuilder placeholder: @escaping () -> Placeholder
    ) {
        self.reference = reference
        self.transform = transform
        self.loader = loader
        self.content = content
        self.placeholder = placeholder
    }

    public var body: some View {
        Group {
            if let image { content(image) } else { placeholder() }
        }
        .task(id: reference) {
            image = nil
            guard let loaded = try? await loader.load(reference, transform: transform) else { return }
            image = Self.image(loaded.data)
        }
    }

    private static func image(_ data: Data) -> Image? {
        #if canImport(UIKit)
        UIImage(data: data).map { Image(uiImage: $0) }
        #else
        NSImage(data: data).map { Image(nsImage: $0) }
        #endif
    }
}
#endif
