// swift-format-ignore-file
// The seed documents' samples are kept as written (block comments, long lines), so the formatter leaves this file alone.
import Foundation
import SiloStorage
import SiloTesting
import Synchronization
import Testing

// The Swift samples of the two seed documents (download-files and file-metadata), compiled and run against a live
// Silo. Changed only in: the import, how `storage`/`storageRef` are made, and how local file URLs are made.
// Additions (never edits) are marked `// test:` — lines after a sample that wait for it and check what it did, and
// `_ = x` uses that silence unused-value warnings the samples would otherwise cause. The full example's error switch
// (`snapshot.error as? NSError`) runs on Linux too and is driven into each of its cases. The same samples as top-level
// code are Sources/SiloSeedSamples (SeedTopLevelTests).

/// Stand-ins for UIKit and FirebaseUI, which are not part of this SDK.
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

/// A hung transfer fails the test after the time limit instead of hanging the run.
@Suite(.timeLimit(.minutes(3))) struct SeedSampleTests {
    let live: Live
    let storage: Storage
    let storageRef: StorageReference
    let directory = temporaryFile("seeds-\(UUID().uuidString)")

    init() async throws {
        live = try Live()
        storage = live.storage
        storageRef = storage.reference()
        for name in ["images/island.jpg", "images/stars.jpg", "images/forest.jpg"] {
            _ = try await storageRef.child(name).putDataAsync(pattern(64 * 1024))
        }
        _ = try await storageRef.child("images/mountains.jpg").putDataAsync(pattern(8 << 20))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    @Test func createAReference() throws {
        // test: the samples name two different buckets, so this instance has no default bucket.
        let storage = Storage(url: "")
        storage.useEmulator(withHost: "127.0.0.1", port: live.server.port)

        // Create a reference with an initial file path and name
        let pathReference = storage.reference(withPath: "images/stars.jpg")

        // Create a reference from a Google Cloud Storage URI
        let gsReference = storage.reference(forURL: "gs://<your-firebase-storage-bucket>/images/stars.jpg")

        // Create a reference from an HTTPS URL
        // Note that in the URL, characters are URL escaped!
        let httpsReference = storage.reference(
            forURL: "https://firebasestorage.googleapis.com/b/bucket/o/images%20stars.jpg")

        #expect(pathReference.fullPath == "images/stars.jpg")  // test:
        #expect(gsReference.bucket == "<your-firebase-storage-bucket>" && gsReference.fullPath == "images/stars.jpg")  // test:
        #expect(httpsReference.bucket == "bucket" && httpsReference.fullPath == "images stars.jpg")  // test:
    }

    @Test func downloadInMemory() async throws {
        let done = Mutex(false)  // test:
        // Create a reference to the file you want to download
        let islandRef = storageRef.child("images/island.jpg")

        // Download in memory with a maximum allowed size of 1MB (1 * 1024 * 1024 bytes)
        islandRef.getData(maxSize: 1 * 1024 * 1024) { data, error in
            if let error = error {
                // Uh-oh, an error occurred!
                _ = error  // test:
            } else {
                // Data for "images/island.jpg" is returned
                let image = UIImage(data: data!)
                done.withLock { $0 = image != nil }  // test:
            }
        }
        #expect(await eventually { done.withLock { $0 } })  // test:
    }

    @Test func downloadToALocalFile() async throws {
        // Create a reference to the file you want to download
        let islandRef = storageRef.child("images/island.jpg")

        // Create local filesystem URL
        let localURL = directory.appendingPathComponent("path/to/image")  // test: a temporary file, not URL(string:)

        // Download to the local filesystem
        let downloadTask = islandRef.write(toFile: localURL) { url, error in
            if let error = error {
                // Uh-oh, an error occurred!
                _ = error  // test:
            } else {
                // Local file URL for "images/island.jpg" is returned
            }
        }
        #expect(await finish(downloadTask).status == .success)  // test:
        #expect(try Data(contentsOf: localURL) == pattern(64 * 1024))  // test:
    }

    @Test func generateADownloadURL() async throws {
        let got = Mutex<URL?>(nil)  // test:
        // Create a reference to the file you want to download
        let starsRef = storageRef.child("images/stars.jpg")

        // Fetch the download URL
        starsRef.downloadURL { url, error in
            if let error = error {
                // Handle any errors
                _ = error  // test:
            } else {
                // Get the download URL for 'images/stars.jpg'
                got.withLock { $0 = url }  // test:
            }
        }
        #expect(await eventually { got.withLock { $0 } != nil })  // test:
    }

    final class ViewController {  // test: the FirebaseUI sample reads `self.imageView`
        let imageView = UIImageView()
        func sample(storageRef: StorageReference) {
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

    @Test func firebaseUIImage() async throws {
        let controller = ViewController()
        controller.sample(storageRef: storageRef)
        #expect(await eventually { controller.imageView.loaded.withLock { $0 } == pattern(64 * 1024) })
    }

    @Test func manageDownloads() async throws {
        let localFile = directory.appendingPathComponent("mountains.jpg")  // test:
        // Start downloading a file
        let downloadTask = storageRef.child("images/mountains.jpg").write(toFile: localFile)

        // Pause the download
        downloadTask.pause()

        // Resume the download
        downloadTask.resume()

        // Cancel the download
        downloadTask.cancel()

        let snapshot = await finish(downloadTask)  // test:
        #expect(snapshot.status == .failure && StorageErrorCode(snapshot.error!) == .cancelled)  // test:
        #expect(!FileManager.default.fileExists(atPath: localFile.path))  // test:
    }

    @Test func monitorDownloadProgressAndRemoveObservers() async throws {
        let localFile = directory.appendingPathComponent("mountains.jpg")  // test:
        let progressEvents = Mutex(0)  // test:
        // Start downloading a file
        let downloadTask = storageRef.child("images/mountains.jpg").write(toFile: localFile)

        // Add a progress observer to a download task
        let observer = downloadTask.observe(.progress) { snapshot in
            // A progress event occurred
            progressEvents.withLock { $0 += 1 }  // test:
        }
        _ = observer  // test:

        #expect(await finish(downloadTask).status == .success)  // test:
        #expect(progressEvents.withLock { $0 } > 0)  // test:

        let second = storageRef.child("images/mountains.jpg").write(toFile: localFile)  // test: a fresh task
        do {
            let downloadTask = second  // test:
            // Create a task listener handle
            let observer = downloadTask.observe(.progress) { snapshot in
                // A progress event occurred
            }

            // Remove an individual observer
            downloadTask.removeObserver(withHandle: observer)

            // Remove all observers of a particular status
            downloadTask.removeAllObservers(for: .progress)

            // Remove all observers
            downloadTask.removeAllObservers()
        }
        #expect(await finish(second).status == .success)  // test:
        #expect(try Data(contentsOf: localFile) == pattern(8 << 20))  // test:
    }

    /// The full example as written, with `storageRef` bound to `storageRef` (the guide's own binding: the bucket root)
    /// or to another reference, so the failure switch reaches each case it names; returns the cases it took.
    func fullExample(storageRef: StorageReference, cancel: Bool = false) async -> [String] {
        let localURL = directory.appendingPathComponent("stars.jpg")  // test:
        let seen = Recorder<String>()  // test:
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
            let percentComplete =
                100.0 * Double(snapshot.progress!.completedUnitCount)
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
            switch error {
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
        if cancel { downloadTask.cancel() }  // test:
        _ = await eventually { !seen.all.isEmpty }  // test:
        return seen.all  // test:
    }

    @Test func fullExampleErrorSwitch() async throws {
        // The guide's binding: the bucket root, which SiloStorage refuses with invalidArgument (docs/compatibility.md).
        #expect(await fullExample(storageRef: storageRef) == ["default"])
        #expect(await fullExample(storageRef: storage.reference(withPath: "images/missing.jpg")) == ["objectNotFound"])
        #expect(await fullExample(storageRef: storage.reference(withPath: "private/stars.jpg")) == ["unauthorized"])
        #expect(await fullExample(storageRef: storageRef.child("images/stars.jpg"), cancel: true) == ["cancelled"])
    }

    // MARK: file-metadata seed

    @Test func getMetadata() async throws {
        // Create reference to the file whose metadata we want to retrieve
        let forestRef = storageRef.child("images/forest.jpg")

        // Get metadata properties
        do {
            let metadata = try await forestRef.getMetadata()
            #expect(metadata.size == 64 * 1024)  // test:
        } catch {
            // ...
            Issue.record(error)  // test:
        }
    }

    @Test func updateAndDeleteMetadata() async throws {
        // Create reference to the file whose metadata we want to change
        let forestRef = storageRef.child("images/forest.jpg")

        // Create file metadata to update
        let newMetadata = StorageMetadata()
        newMetadata.cacheControl = "public,max-age=300"
        newMetadata.contentType = "image/jpeg"

        // Update metadata properties
        do {
            let updatedMetadata = try await forestRef.updateMetadata(newMetadata)
            #expect(updatedMetadata.contentType == "image/jpeg" && updatedMetadata.cacheControl == "public,max-age=300")  // test:
        } catch {
            // ...
            Issue.record(error)  // test:
        }

        do {  // test: the second sample, in its own scope
            let newMetadata = StorageMetadata()
            newMetadata.contentType = nil

            do {
                // Delete the metadata property
                let updatedMetadata = try await forestRef.updateMetadata(newMetadata)
                #expect(updatedMetadata.contentType == nil)  // test:
                #expect(updatedMetadata.cacheControl == "public,max-age=300")  // test: the rest is left as it was
            } catch {
                // ...
                Issue.record(error)  // test:
            }
        }
    }

    @Test func customMetadataDictionary() async throws {
        let metadata = [
            "customMetadata": [
                "location": "Yosemite, CA, USA",
                "activity": "Hiking",
            ]
        ]
        let update = StorageMetadata()  // test: the dictionary's values as custom metadata
        update.customMetadata = metadata["customMetadata"]  // test:
        let result = try await storageRef.child("images/forest.jpg").updateMetadata(update)  // test:
        #expect(result.customMetadata == ["location": "Yosemite, CA, USA", "activity": "Hiking"])  // test:
    }
}
