import Foundation
import SiloStorage
import SiloWire

/// Loads a Firebase emulator export (or a Silo export) into a running server: each object is uploaded with its
/// content type, standard fields, custom metadata and download tokens (sent as the `firebaseStorageDownloadTokens`
/// custom key, which the server turns into the token list), so download URLs made before the export keep working.
/// Generations and timestamps are the server's own.
struct Importer {
    let connection: ServerConnection
    let log: any OutputSink

    struct Summary: Sendable, Equatable {
        public var objects = 0
        public var skipped = 0
        public var bytes: Int64 = 0
    }

    func importExport(from root: String) async throws -> Summary {
        let storage = try EmulatorExportLayout.storageDirectory(of: root)
        let fm = FileManager.default
        var summary = Summary()
        let metadataRoot = storage + "/metadata"
        guard LocalFiles.isDirectory(metadataRoot) else { return summary }  // no metadata/: an empty export
        guard let walker = fm.enumerator(atPath: metadataRoot) else { return summary }
        var files: [String] = []
        while let relative = walker.nextObject() as? String {
            if relative.hasSuffix(".json"), !LocalFiles.isDirectory(metadataRoot + "/" + relative) {
                files.append(relative)
            }
        }
        for relative in files.sorted() {
            try Task.checkCancellation()
            guard let data = fm.contents(atPath: metadataRoot + "/" + relative),
                let metadata = try? JSONValue.parse(Array(data)).objectValue,
                let bucket = metadata["bucket"]?.stringValue, let rawName = metadata["name"]?.stringValue
            else {
                log.line("silo: skipping \(metadataRoot)/\(relative): not an object metadata file")
                summary.skipped += 1
                continue
            }
            // An export made on Windows names objects and files with `\` where the path had `/`; the emulator
            // imports them under `/`, and so does Silo.
            let name = rawName.replacingOccurrences(of: "\\", with: "/")
            let diskName = String(relative.dropLast(5))
            let decoded = diskName.removingPercentEncoding ?? diskName
            let candidates = [
                diskName, decoded, diskName.replacingOccurrences(of: "\\", with: "/"),
                decoded.replacingOccurrences(of: "\\", with: "/"),
            ]
            guard let blob = candidates.map({ storage + "/blobs/" + $0 }).first(where: { fm.fileExists(atPath: $0) })
            else {
                log.line("silo: skipping gs://\(bucket)/\(name): its blob \(storage)/blobs/\(diskName) is missing")
                summary.skipped += 1
                continue
            }
            let address = ObjectAddress(bucket: bucket, path: name)
            try await upload(blob, metadata: metadata, to: address)
            summary.objects += 1
            summary.bytes += LocalFiles.size(of: blob) ?? 0
        }
        return summary
    }

    private func upload(_ blob: String, metadata json: JSONObject, to address: ObjectAddress) async throws {
        let metadata = StorageMetadata()
        metadata.contentType = json["contentType"]?.stringValue ?? "application/octet-stream"
        metadata.cacheControl = json["cacheControl"]?.stringValue
        metadata.contentDisposition = json["contentDisposition"]?.stringValue
        metadata.contentEncoding = json["contentEncoding"]?.stringValue
        metadata.contentLanguage = json["contentLanguage"]?.stringValue
        var custom: [String: String] = [:]
        for (key, value) in json["customMetadata"]?.objectValue?.members ?? [] {
            if let text = value.stringValue { custom[key] = text }
        }
        let tokens = EmulatorExportFormat.downloadTokens(json)
        if !tokens.isEmpty { custom["firebaseStorageDownloadTokens"] = tokens.joined(separator: ",") }
        if !custom.isEmpty { metadata.customMetadata = custom }
        let reference = try connection.reference(address)
        _ = try await connection.run(.write, address) {
            try await reference.putFileAsync(from: URL(fileURLWithPath: blob), metadata: metadata)
        }
        if let customTime = json["customTime"]?.stringValue {
            _ = try await connection.send(
                "PATCH", ServerConnection.v0Path(address), headers: ["Content-Type": "application/json; charset=utf-8"],
                body: .data(Data(JSONValue.object(["customTime": .string(customTime)]).serialized())),
                operation: .update, address: address)
        }
    }
}
