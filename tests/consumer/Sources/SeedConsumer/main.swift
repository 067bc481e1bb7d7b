// Top-level code, as in a script or an app's main.swift: the seeds' Swift samples with only the import and the
// construction of `Storage` changed (docs/compatibility.md). Prints one line per check; exits 1 on the first miss.
import Foundation
import SiloStorage

func check(_ what: String, _ ok: Bool) {
    print((ok ? "ok   " : "FAIL ") + what)
    if !ok { exit(1) }
}

guard let host = ProcessInfo.processInfo.environment["SILO_HOST"],
    let port = ProcessInfo.processInfo.environment["SILO_PORT"].flatMap({ Int($0) })
else {
    print("set SILO_HOST and SILO_PORT")
    exit(2)
}
let storage = Storage(url: "gs://consumer.appspot.com")
storage.useEmulator(withHost: host, port: port)
let storageRef = storage.reference()

// Upload (the upload guide's putDataAsync).
let forestRef = storageRef.child("images/forest.jpg")
let data = Data("not really a forest".utf8)
let uploaded = try await forestRef.putDataAsync(data)
check("putDataAsync stores the bytes", uploaded.size == Int64(data.count))

// The metadata guide, verbatim apart from what `check` adds.
let newMetadata = StorageMetadata()
newMetadata.cacheControl = "public,max-age=300"
newMetadata.contentType = "image/jpeg"
do {
    let updatedMetadata = try await forestRef.updateMetadata(newMetadata)
    check("top-level updateMetadata is the async overload", updatedMetadata.cacheControl == "public,max-age=300")
} catch {
    check("updateMetadata: \(error)", false)
}
do {
    let metadata = try await forestRef.getMetadata()
    check("getMetadata reads it back", metadata.contentType == "image/jpeg")
}

// The download guide's error switch, on an object that does not exist.
let missing = storageRef.child("images/missing.jpg")
let localURL = URL(fileURLWithPath: NSTemporaryDirectory() + "consumer-missing.jpg")
let done = DispatchSemaphore(value: 0)
nonisolated(unsafe) var sawNotFound = false
let downloadTask = missing.write(toFile: localURL)
downloadTask.observe(.failure) { snapshot in
    defer { done.signal() }
    guard let errorCode = (snapshot.error as? NSError)?.code else {
        return
    }
    guard let error = StorageErrorCode(rawValue: errorCode) else {
        return
    }
    switch error {
    case .objectNotFound:
        // File doesn't exist
        sawNotFound = true
    case .unauthorized:
        break
    case .cancelled:
        break
    default:
        break
    }
}
downloadTask.observe(.success) { _ in done.signal() }
done.wait()
check("the seed's error switch sees .objectNotFound through NSError", sawNotFound)

let url = try await forestRef.downloadURL()
check("downloadURL carries a token", url.absoluteString.contains("token="))
try await forestRef.delete()
check("delete", (try? await forestRef.getMetadata()) == nil)
print("consumer: all checks passed")
