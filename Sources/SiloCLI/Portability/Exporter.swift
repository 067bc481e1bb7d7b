import Foundation
import SiloStorage
import SiloWire

/// Writes a running server's objects in the Firebase emulator's export layout. Everything goes to a temporary
/// directory beside the target, renamed over it at the end, so a failed export leaves the previous one intact.
/// Other emulators' data already in the target (and their keys in `firebase-export-metadata.json`) is kept.
struct Exporter {
    let connection: ServerConnection
    let log: any OutputSink

    struct Summary: Sendable, Equatable {
        public var buckets = 0
        public var objects = 0
        public var bytes: Int64 = 0
    }

    func export(to target: String, buckets requested: [String]) async throws -> Summary {
        let fm = FileManager.default
        let target = (target as NSString).standardizingPath
        let parent = (target as NSString).deletingLastPathComponent
        try fm.createDirectory(atPath: parent.isEmpty ? "." : parent, withIntermediateDirectories: true)
        let temporary = target + ".silo-export-\(UUID().uuidString)"
        let storageRoot = temporary + "/" + EmulatorExportLayout.defaultStoragePath
        try fm.createDirectory(atPath: storageRoot + "/blobs", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: storageRoot + "/metadata", withIntermediateDirectories: true)
        var finished = false
        defer { if !finished { try? fm.removeItem(atPath: temporary) } }

        let buckets = requested.isEmpty ? try await listBuckets() : requested
        var summary = Summary(buckets: buckets.count)
        for bucket in buckets {
            try Task.checkCancellation()
            let root = ObjectAddress(bucket: bucket, path: "")
            let items = try await Listing.all(
                under: try connection.reference(root), connection: connection, address: root)
            for item in items {
                try Task.checkCancellation()
                let address = ObjectAddress(bucket: bucket, path: item.fullPath)
                let v0 = try await connection.metadataJSON(address)
                let diskName = UUID().uuidString.lowercased()
                let handle = try create(storageRoot + "/blobs/" + diskName)
                defer { try? handle.close() }
                let receiver = MediaReceiver(target: .file(handle))
                try await connection.stream(
                    "GET", ServerConnection.v0Path(address, query: "alt=media"), receiver: receiver, operation: .read,
                    address: address)
                guard (200..<300).contains(receiver.status) else {
                    throw ErrorMessages.httpFailure(
                        status: receiver.status, body: receiver.errorBody, operation: .read, address: address,
                        endpoint: connection.endpoint)
                }
                try handle.synchronize()
                let metadata = EmulatorExportFormat.emulatorMetadata(fromV0: v0)
                try write(.object(metadata), to: storageRoot + "/metadata/" + diskName + ".json")
                summary.objects += 1
                summary.bytes += metadata["size"]?.int64Value ?? 0
            }
        }
        try write(EmulatorExportFormat.bucketList(buckets), to: storageRoot + "/" + EmulatorExportFormat.bucketsFile)

        // Keep what other emulators exported into the target.
        var rootMetadata = JSONObject()
        if let data = fm.contents(atPath: target + "/" + EmulatorExportLayout.rootMetadataFile),
            let old = try? JSONValue.parse(Array(data)).objectValue
        {
            rootMetadata = old
        }
        rootMetadata["version"] = rootMetadata["version"] ?? .string(EmulatorExportFormat.version)
        rootMetadata["storage"] = .object([
            "version": .string(EmulatorExportFormat.version), "path": .string(EmulatorExportLayout.defaultStoragePath),
        ])
        try write(.object(rootMetadata), to: temporary + "/" + EmulatorExportLayout.rootMetadataFile)
        if LocalFiles.isDirectory(target) {
            for entry in try fm.contentsOfDirectory(atPath: target)
            where entry != EmulatorExportLayout.rootMetadataFile && entry != EmulatorExportLayout.defaultStoragePath {
                try fm.moveItem(atPath: target + "/" + entry, toPath: temporary + "/" + entry)
            }
            let old = target + ".silo-old-\(UUID().uuidString)"
            try fm.moveItem(atPath: target, toPath: old)
            try fm.moveItem(atPath: temporary, toPath: target)
            try? fm.removeItem(atPath: old)
        } else {
            try fm.moveItem(atPath: temporary, toPath: target)
        }
        finished = true
        return summary
    }

    /// Every bucket the server knows, through the GCS JSON API.
    private func listBuckets() async throws -> [String] {
        let (_, body) = try await connection.send("GET", "/storage/v1/b", operation: .list, address: nil)
        guard let json = try? JSONValue.parse(Array(body)).objectValue else {
            throw CommandFailure("the server sent an unreadable bucket list")
        }
        return (json["items"]?.arrayValue ?? []).compactMap { $0.objectValue?["name"]?.stringValue }.sorted()
    }

    private func create(_ path: String) throws -> FileHandle {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw CommandFailure("cannot create \(path)")
        }
        return try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    }

    private func write(_ json: JSONValue, to path: String) throws {
        try Data(json.serialized()).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
