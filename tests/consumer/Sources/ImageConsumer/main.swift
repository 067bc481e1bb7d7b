// An app's use of SiloStorageUI through the tagged package: load an image twice (the second from the memory cache),
// a thumbnail's request, and the disk cache seen by a second loader. Exits 1 on the first miss.
import Foundation
import SiloStorage
import SiloStorageUI

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
print("consumer: SiloStorageUI checks passed")
