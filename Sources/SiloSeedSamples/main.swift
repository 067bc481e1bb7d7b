// swift-format-ignore-file
// The seed documents' Swift samples (download-files and file-metadata) as top-level code, kept as written: the point
// of this target is that they compile here, in script-style code, exactly as in an app. Changed only in: the import,
// how `storage`/`storageRef` are made, and how local file URLs are made. Each sample sits in its own `do { }` so that
// samples reusing a name (`forestRef`, `downloadTask`, `observer`) do not collide — the metadata seed wraps its own
// calls in `do { }` the same way. Additions (never edits) are marked `// test:`: lines that wait for a sample and check
// what it did, and `_ = x` uses that silence unused-value warnings. SiloStorageTests.SeedTopLevelTests runs this
// program against a live Silo (FIREBASE_STORAGE_BUCKET, FIREBASE_STORAGE_EMULATOR_HOST) and expects exit status 0.
import Foundation
import SiloStorage
import Synchronization

// test: how Storage is made here: the shared instance for FIREBASE_STORAGE_BUCKET, pointed at
// FIREBASE_STORAGE_EMULATOR_HOST (Firebase: Storage.storage() on the configured FirebaseApp).
let storage = Storage.storage()
let storageRef = storage.reference()
let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("silo-seed-\(UUID().uuidString)")  // test:

// MARK: download-files: Create a Reference
do {
    let storage = Storage.storage(url: "")  // test: the sample names two other buckets, so an instance without one

    // Create a reference with an initial file path and name
    let pathReference = storage.reference(withPath: "images/stars.jpg")

    // Create a reference from a Google Cloud Storage URI
    let gsReference = storage.reference(forURL: "gs://<your-firebase-storage-bucket>/images/stars.jpg")

    // Create a reference from an HTTPS URL
    // Note that in the URL, characters are URL escaped!
    let httpsReference = storage.reference(forURL: "https://firebasestorage.googleapis.com/b/bucket/o/images%20stars.jpg")

    Check.that(pathReference.fullPath == "images/stars.jpg", "pathReference")  // test:
    Check.that(gsReference.bucket == "<your-firebase-storage-bucket>" && gsReference.fullPath == "images/stars.jpg", "gsReference")  // test:
    Check.that(httpsReference.bucket == "bucket" && httpsReference.fullPath == "images stars.jpg", "httpsReference")  // test:
}

// MARK: download-files: Download in memory
do {
    let seen = Seen()  // test:
    // Create a reference to the file you want to download
    let islandRef = storageRef.child("images/island.jpg")

    // Download in memory with a maximum allowed size of 1MB (1 * 1024 * 1024 bytes)
    islandRef.getData(maxSize: 1 * 1024 * 1024) { data, error in
      if let error = error {
        // Uh-oh, an error occurred!
        seen.add("error \(error)")  // test:
      } else {
        // Data for "images/island.jpg" is returned
        let image = UIImage(data: data!)
        seen.add(image != nil ? "image" : "no image")  // test:
      }
    }
    Check.that(await Check.until { !seen.all.isEmpty } && seen.all == ["image"], "download in memory")  // test:
}

// MARK: download-files: Download to a local file
do {
    let seen = Seen()  // test:
    // Create a reference to the file you want to download
    let islandRef = storageRef.child("images/island.jpg")

    // test: the sample's relative URL lands in the working directory, so work in a temporary one
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)  // test:
    _ = FileManager.default.changeCurrentDirectoryPath(directory.path)  // test:
    // Create local filesystem URL
    let localURL = URL(string: "path/to/image")!

    // Download to the local filesystem
    let downloadTask = islandRef.write(toFile: localURL) { url, error in
      if let error = error {
        // Uh-oh, an error occurred!
        seen.add("error \(error)")  // test:
      } else {
        // Local file URL for "images/island.jpg" is returned
        seen.add(url == localURL ? "url" : "other url")  // test:
      }
    }
    _ = downloadTask  // test:
    Check.that(await Check.until { !seen.all.isEmpty } && seen.all == ["url"], "download to a local file")  // test:
    Check.that(FileManager.default.contents(atPath: directory.appendingPathComponent("path/to/image").path)?.count == 64 * 1024, "local file content")  // test:
}

// MARK: download-files: Generate a download URL
do {
    let seen = Seen()  // test:
    // Create a reference to the file you want to download
    let starsRef = storageRef.child("images/stars.jpg")

    // Fetch the download URL
    starsRef.downloadURL { url, error in
      if let error = error {
        // Handle any errors
        seen.add("error \(error)")  // test:
      } else {
        // Get the download URL for 'images/stars.jpg'
        seen.add(url?.absoluteString.contains("/o/images%2Fstars.jpg?alt=media&token=") == true ? "url" : "bad url")  // test:
      }
    }
    Check.that(await Check.until { !seen.all.isEmpty } && seen.all == ["url"], "download URL")  // test:
}

// MARK: download-files: Downloading Images with FirebaseUI
final class ViewController {  // test: the sample reads `self.imageView`
    let imageView = UIImageView()
    func sample() {
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
do {
    let controller = ViewController()  // test:
    controller.sample()  // test:
    Check.that(await Check.until { controller.imageView.loaded.withLock { $0 } != nil }, "FirebaseUI image")  // test:
}

// MARK: download-files: Manage Downloads
do {
    let localFile = directory.appendingPathComponent("mountains.jpg")  // test:
    // Start downloading a file
    let downloadTask = storageRef.child("images/mountains.jpg").write(toFile: localFile)

    // Pause the download
    downloadTask.pause()

    // Resume the download
    downloadTask.resume()

    // Cancel the download
    downloadTask.cancel()

    let snapshot = await Check.finish(downloadTask)  // test:
    Check.that((snapshot?.error as? NSError)?.code == StorageErrorCode.cancelled.rawValue, "manage downloads: cancelled")  // test:
}

// MARK: download-files: Monitor Download Progress
do {
    let localFile = directory.appendingPathComponent("mountains.jpg")  // test:
    let seen = Seen()  // test:
    let downloadTask = storageRef.child("images/mountains.jpg").write(toFile: localFile)  // test: the sample's task

    // Add a progress observer to a download task
    let observer = downloadTask.observe(.progress) { snapshot in
      // A progress event occurred
      seen.add("progress")  // test:
    }
    _ = observer  // test:

    Check.that(await Check.finish(downloadTask)?.status == .success && !seen.all.isEmpty, "monitor progress")  // test:
}

// MARK: download-files: remove observers
do {
    let localFile = directory.appendingPathComponent("mountains.jpg")  // test:
    let seen = Seen()  // test:
    let downloadTask = storageRef.child("images/mountains.jpg").write(toFile: localFile)  // test: the sample's task

    // Create a task listener handle
    let observer = downloadTask.observe(.progress) { snapshot in
    // A progress event occurred
    seen.add("progress")  // test:
    }

    // Remove an individual observer
    downloadTask.removeObserver(withHandle: observer)

    // Remove all observers of a particular status
    downloadTask.removeAllObservers(for: .progress)

    // Remove all observers
    downloadTask.removeAllObservers()

    Check.that(await Check.finish(downloadTask)?.status == .success && seen.all.isEmpty, "removed observers")  // test:
}

// MARK: download-files: Full Example
do {
    let localURL = directory.appendingPathComponent("stars.jpg")  // test:
    let seen = Seen()  // test:
    // Create a reference to the file we want to download
    let starsRef = storageRef.child("images/stars.jpg")
    _ = starsRef  // test:

    // Start the download (in this case writing to a file)
    let downloadTask = storageRef.write(toFile: localURL)

    // Observe changes in status
    downloadTask.observe(.resume) { snapshot in
      // Download resumed, also fires when the download starts
    }

    downloadTask.observe(.pause) { snapshot in
      // Download paused
    }

    downloadTask.observe(.progress) { snapshot in
      // Download reported progress
      let percentComplete = 100.0 * Double(snapshot.progress!.completedUnitCount)
        / Double(snapshot.progress!.totalUnitCount)
      _ = percentComplete  // test:
    }

    downloadTask.observe(.success) { snapshot in
      // Download completed successfully
    }

    // Errors only occur in the "Failure" case
    downloadTask.observe(.failure) { snapshot in
      guard let errorCode = (snapshot.error as? NSError)?.code else {
        seen.add("not an NSError")  // test:
        return
      }
      guard let error = StorageErrorCode(rawValue: errorCode) else {
        seen.add("not a StorageErrorCode")  // test:
        return
      }
      switch (error) {
      case .objectNotFound:
        // File doesn't exist
        seen.add("objectNotFound")  // test:
        break
      case .unauthorized:
        // User doesn't have permission to access file
        seen.add("unauthorized")  // test:
        break
      case .cancelled:
        // User cancelled the download
        seen.add("cancelled")  // test:
        break

      /* ... */

      case .unknown:
        // Unknown error occurred, inspect the server response
        seen.add("unknown")  // test:
        break
      default:
        // Another error occurred. This is a good place to retry the download.
        seen.add("default")  // test:
        break
      }
    }
    // test: the sample downloads the bucket root (`storageRef`, not `starsRef`), which SiloStorage refuses with
    // invalidArgument (docs/compatibility.md), so the switch takes its `default` branch.
    Check.that(await Check.until { !seen.all.isEmpty } && seen.all == ["default"], "full example: error switch")  // test:
}

// MARK: file-metadata: Get File Metadata
do {
    // Create reference to the file whose metadata we want to retrieve
    let forestRef = storageRef.child("images/forest.jpg")

    // Get metadata properties
    do {
      let metadata = try await forestRef.getMetadata()
      Check.that(metadata.size == 64 * 1024, "get metadata")  // test:
    } catch {
      // ...
      Check.that(false, "get metadata: \(error)")  // test:
    }
}

// MARK: file-metadata: Update File Metadata
do {
    // Create reference to the file whose metadata we want to change
    let forestRef = storageRef.child("images/forest.jpg")

    // Create file metadata to update
    let newMetadata = StorageMetadata()
    newMetadata.cacheControl = "public,max-age=300"
    newMetadata.contentType = "image/jpeg"

    // Update metadata properties
    do {
      let updatedMetadata = try await forestRef.updateMetadata(newMetadata)
      Check.that(updatedMetadata.contentType == "image/jpeg" && updatedMetadata.cacheControl == "public,max-age=300", "update metadata")  // test:
    } catch {
      // ...
      Check.that(false, "update metadata: \(error)")  // test:
    }
}

// MARK: file-metadata: delete a metadata property
do {
    let forestRef = storageRef.child("images/forest.jpg")  // test: the sample continues the previous one's forestRef

    let newMetadata = StorageMetadata()
    newMetadata.contentType = nil

    do {
      // Delete the metadata property
      let updatedMetadata = try await forestRef.updateMetadata(newMetadata)
      Check.that(updatedMetadata.contentType == nil && updatedMetadata.cacheControl == "public,max-age=300", "delete a metadata property")  // test:
    } catch {
      // ...
      Check.that(false, "delete a metadata property: \(error)")  // test:
    }
}

// MARK: file-metadata: Custom Metadata
do {
    let metadata = [
      "customMetadata": [
        "location": "Yosemite, CA, USA",
        "activity": "Hiking"
      ]
    ]
    Check.that(metadata["customMetadata"]?["activity"] == "Hiking", "custom metadata dictionary")  // test:
}

try? FileManager.default.removeItem(at: directory)  // test:
exit(Check.failed ? 1 : 0)  // test:
