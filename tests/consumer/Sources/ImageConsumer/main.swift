// An app's use of SiloStorageUI through the tagged package: load an image twice (the second from the memory cache),
// the disk cache seen by a second loader, a thumbnail the server makes, and a preset thumbnail written beside an
// uploaded photo. Exits 1 on the first miss.
import Foundation
import SiloStorage
import SiloStorageUI

func check(_ what: String, _ ok: Bool) {
    print((ok ? "ok   " : "FAIL ") + what)
    if !ok { exit(1) }
}

guard let host = ProcessInfo.processInfo.environment["SILO_HOST"],
    let port = ProcessInfo.processInfo.environment["SILO_PORT"].flatMap({ Int($0) }),
    let photoPath = ProcessInfo.processInfo.environment["SILO_PHOTO"]
else {
    print("set SILO_HOST, SILO_PORT and SILO_PHOTO (a JPEG)")
    exit(2)
}
let storage = Storage(url: "gs://consumer.appspot.com")
storage.useEmulator(withHost: host, port: port)
let reference = storage.reference().child("images/stars.jpg")
let bytes = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) })
let uploaded = try await reference.putDataAsync(bytes)

let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("image-consumer-\(getpid())")
defer { try? FileManager.default.removeItem(at: directory) }
let configuration = StorageImageLoaderConfiguration(diskDirectory: directory)
let loader = StorageImageLoader(configuration: configuration)
let first = try await loader.load(reference)
check("the first load downloads the bytes", first.data == bytes && first.source == .network)
check("it knows the generation", first.generation == uploaded.generation)
check("the second load is a memory hit", try await loader.load(reference).source == .memory)
let restarted = StorageImageLoader(configuration: configuration)
check("a new loader finds it on disk", try await restarted.load(reference).source == .disk)
let thumbnail = try StorageImageTransform(width: 128, height: 128, fit: .cover, format: .webp)
check("a thumbnail names its parameters", thumbnail.description == "width=128&height=128&fit=cover&format=webp")

// A real photo, its thumbnail made by the server, as a list of photos would show it.
let photo = try Data(contentsOf: URL(fileURLWithPath: photoPath))
let jpeg = StorageMetadata()
jpeg.contentType = "image/jpeg"
let photoReference = storage.reference().child("images/photo.jpg")
_ = try await photoReference.putDataAsync(photo, metadata: jpeg)
let small = try await loader.load(photoReference, transform: thumbnail)
check(
    "the thumbnail is a WebP the server made",
    small.source == .network && small.data.count < photo.count && small.data.prefix(4) == Data("RIFF".utf8)
        && small.data.dropFirst(8).prefix(4) == Data("WEBP".utf8))
check("the thumbnail's second load is a memory hit", try await loader.load(photoReference, transform: thumbnail).source == .memory)

// A photo under the preset's path: the server writes photos/thumbnails/cat_64x64.jpg beside it, with its own token.
_ = try await storage.reference().child("photos/cat.jpg").putDataAsync(photo, metadata: jpeg)
let preset = storage.reference().child("photos/thumbnails/cat_64x64.jpg")
var written: StorageMetadata?
for _ in 0..<100 where written == nil {
    written = try? await preset.getMetadata()
    if written == nil { try await Task.sleep(nanoseconds: 100_000_000) }
}
check("the preset thumbnail is written", written?.contentType == "image/jpeg" && written?.customMetadata?["resizedImage"] == "true")
let presetURL = try await preset.downloadURL()
check("it has a download URL of its own", presetURL.absoluteString.contains("token="))
print("consumer: SiloStorageUI checks passed")
