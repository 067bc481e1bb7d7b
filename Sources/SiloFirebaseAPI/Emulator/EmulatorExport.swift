import Foundation
import SiloCore
import SiloServerKit
import SiloWire

/// `POST /internal/export`: writes every live object into `path` in the storage part of the Firebase emulator's
/// export layout (``EmulatorExportFormat``: `buckets.json`, `blobs/`, `metadata/`), the directory firebase-tools' hub
/// names, from the stores directly. Everything is written to a directory beside `path` and swapped in at the end, so
/// a failed export leaves whatever `path` held intact and a reader never sees half an export.
struct EmulatorExport {
    let metadata: any MetadataStore
    let blobs: any BlobStore

    struct Summary: Equatable {
        var buckets = 0
        var objects = 0
    }

    func write(to target: String) throws -> Summary {
        let fm = FileManager.default
        let target = (target as NSString).standardizingPath
        let parent = (target as NSString).deletingLastPathComponent
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: parent.isEmpty ? "." : parent, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw StorageError(.invalidArgument, "cannot export to \(target): its parent directory does not exist")
        }
        let temporary = target + ".silo-export-\(UUID().uuidString)"
        let blobsRoot = temporary + "/" + EmulatorExportFormat.blobsDirectory
        let metadataRoot = temporary + "/" + EmulatorExportFormat.metadataDirectory
        var finished = false
        defer { if !finished { try? fm.removeItem(atPath: temporary) } }
        do {
            try fm.createDirectory(atPath: blobsRoot, withIntermediateDirectories: true)
            try fm.createDirectory(atPath: metadataRoot, withIntermediateDirectories: true)
        } catch {
            throw StorageError(.ioError, "cannot create the export directory beside \(target)", cause: error)
        }

        let buckets = try metadata.buckets().map(\.name).sorted { $0.rawValue < $1.rawValue }
        var summary = Summary(buckets: buckets.count)
        for bucket in buckets {
            var cursor: [UInt8]?
            while true {
                let page = try metadata.listObjects(bucket, prefix: "", startAfter: cursor, limit: 1000)
                for record in page {
                    // A name of its own for each file, as the CLI's exporter names them: object names may hold
                    // anything, file names may not.
                    let diskName = UUID().uuidString.lowercased()
                    try copyBlob(record, to: blobsRoot + "/" + diskName)
                    let v0 = FirebaseMetadata.json(record).objectValue ?? JSONObject()
                    let file = JSONValue.object(EmulatorExportFormat.emulatorMetadata(fromV0: v0))
                    try writeFile(file.serialized(), to: metadataRoot + "/" + diskName + ".json")
                    summary.objects += 1
                }
                guard page.count == 1000, let last = page.last else { break }
                cursor = Array(last.name.rawValue.utf8)
            }
        }
        try writeFile(
            EmulatorExportFormat.bucketList(buckets.map(\.rawValue)).serialized(),
            to: temporary + "/" + EmulatorExportFormat.bucketsFile)

        do {
            if fm.fileExists(atPath: target) {
                let old = target + ".silo-old-\(UUID().uuidString)"
                try fm.moveItem(atPath: target, toPath: old)
                try fm.moveItem(atPath: temporary, toPath: target)
                try? fm.removeItem(atPath: old)
            } else {
                try fm.moveItem(atPath: temporary, toPath: target)
            }
        } catch {
            throw StorageError(.ioError, "cannot move the export into \(target)", cause: error)
        }
        finished = true
        return summary
    }

    private func copyBlob(_ record: ObjectRecord, to path: String) throws {
        let reader = try blobs.openReader(record.blobID)
        let handle = try create(path)
        defer { try? handle.close() }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < record.size {
            let count = try reader.read(into: buffer, at: offset)
            guard count > 0 else { break }
            do { try handle.write(contentsOf: Data(buffer.prefix(count))) } catch {
                throw StorageError(.ioError, "cannot write \(path)", cause: error)
            }
            offset += Int64(count)
        }
        guard offset == record.size else {
            throw StorageError(
                .internalError,
                "the blob of gs://\(record.bucket.rawValue)/\(record.name.rawValue) is shorter than its size")
        }
        do { try handle.synchronize() } catch { throw StorageError(.ioError, "cannot sync \(path)", cause: error) }
    }

    private func writeFile(_ bytes: [UInt8], to path: String) throws {
        let handle = try create(path)
        defer { try? handle.close() }
        do {
            try handle.write(contentsOf: Data(bytes))
            try handle.synchronize()
        } catch {
            throw StorageError(.ioError, "cannot write \(path)", cause: error)
        }
    }

    private func create(_ path: String) throws -> FileHandle {
        guard FileManager.default.createFile(atPath: path, contents: nil),
            let handle = FileHandle(forWritingAtPath: path)
        else { throw StorageError(.ioError, "cannot create \(path)") }
        return handle
    }
}
