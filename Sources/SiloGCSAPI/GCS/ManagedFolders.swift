import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// Managed folders (`/b/{b}/managedFolders[/{name}]`: insert, get, list, delete), kept in the bucket resource under
/// ``ManagedFolders/key`` — a name, a creation time and a metageneration each; GCS's IAM on them is not kept. They
/// appear as prefixes in an object listing that asks for `includeFoldersAsPrefixes=true`.
struct ManagedFolders {
    let service: ObjectService

    static let key = "_managedFolders"
    /// Folders per bucket: they live in the bucket's row, so the row stays small.
    static let maxFolders = 1_000

    package func handle(_ context: RequestContext, _ bucket: BucketName, _ name: String?) -> RequestDisposition {
        switch (context.method, name) {
        case ("POST", nil):
            return GCSBody.json(service, context) { body in
                guard let text = body["name"]?.stringValue else {
                    throw StorageError(.invalidArgument, "Invalid argument: a managed folder needs a name")
                }
                return try insert(context, bucket, try Self.folderName(text))
            }
        case ("GET", nil), ("HEAD", nil): return .respond(run { try list(context, bucket) })
        case ("GET", .some(let name)), ("HEAD", .some(let name)):
            return .respond(
                run {
                    let folder = try Self.folderName(name)
                    guard let resource = try service.bucketResource(bucket) else {
                        throw StorageError.noSuchBucket(bucket)
                    }
                    guard let entry = Self.folders(resource)[folder] else { throw Self.missing(bucket, folder) }
                    return Reply.json(200, Self.json(folder, entry, bucket))
                })
        case ("DELETE", .some(let name)):
            return .respond(
                run {
                    let folder = try Self.folderName(name)
                    _ = try service.metadata.updateBucket(bucket, at: context.time) { record in
                        var resource = BucketResource(record)
                        var folders = Self.folders(resource)
                        guard folders[folder] != nil else { throw Self.missing(bucket, folder) }
                        folders[folder] = nil
                        resource.fields[Self.key] = .object(folders)
                        record.resource = resource.json
                    }
                    return Reply.empty(204)
                })
        default:
            return .respond(
                Reply.gcsError(StorageError(.invalidArgument, "\(context.method) is not supported on managed folders")))
        }
    }

    private func run(_ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return Reply.gcsError(error) }
    }

    private func insert(_ context: RequestContext, _ bucket: BucketName, _ folder: String) throws -> HTTPResponse {
        var created = JSONObject()
        _ = try service.metadata.updateBucket(bucket, at: context.time) { record in
            var resource = BucketResource(record)
            var folders = Self.folders(resource)
            guard folders[folder] == nil else {
                throw StorageError(.conflict, "The managed folder \(folder) already exists in \(bucket)")
            }
            guard folders.members.count < Self.maxFolders else {
                throw StorageError(.invalidArgument, "at most \(Self.maxFolders) managed folders per bucket")
            }
            created = ["createTime": .string(context.time.rfc3339), "metageneration": .string("1")]
            folders[folder] = .object(created)
            resource.fields[Self.key] = .object(folders)
            record.resource = resource.json
        }
        return Reply.json(200, Self.json(folder, .object(created), bucket))
    }

    private func list(_ context: RequestContext, _ bucket: BucketName) throws -> HTTPResponse {
        guard let resource = try service.bucketResource(bucket) else { throw StorageError.noSuchBucket(bucket) }
        let prefix = context.query["prefix"] ?? ""
        let items = Self.folders(resource).members.filter { $0.key.hasPrefix(prefix) }.sorted { $0.key < $1.key }
        var o: JSONObject = ["kind": .string("storage#managedFolders")]
        if !items.isEmpty { o["items"] = .array(items.map { Self.json($0.key, $0.value, bucket) }) }
        return Reply.json(200, .object(o))
    }

    /// Names as GCS keeps them: with one trailing `/`, no empty segments, valid as object-name prefixes.
    static func folderName(_ text: String) throws -> String {
        let name = text.hasSuffix("/") ? text : text + "/"
        guard name.utf8.count <= 1024, !name.hasPrefix("/"), !name.contains("//"), (try? ObjectName(name)) != nil
        else { throw StorageError(.invalidArgument, "Invalid argument: managed folder name \(text.prefix(100))") }
        return name
    }

    package static func folders(_ resource: BucketResource) -> JSONObject {
        resource.fields[key]?.objectValue ?? JSONObject()
    }

    /// The folders that are prefixes at this level of a delimited listing: under `prefix`, with no delimiter
    /// between the prefix and the folder's own trailing `/`.
    static func prefixes(_ resource: BucketResource, prefix: String, delimiter: String) -> [String] {
        guard delimiter == "/" else { return [] }
        return folders(resource).members.map(\.key).filter { name in
            name.hasPrefix(prefix) && !name.dropFirst(prefix.count).dropLast().contains("/")
        }
    }

    static func missing(_ bucket: BucketName, _ folder: String) -> StorageError {
        StorageError(.notFound, "The managed folder \(folder) does not exist in \(bucket)")
    }

    static func json(_ name: String, _ entry: JSONValue, _ bucket: BucketName) -> JSONValue {
        let created = entry.objectValue?["createTime"] ?? .null
        return .object([
            "kind": .string("storage#managedFolder"), "id": .string("\(bucket.rawValue)/\(name)"),
            "bucket": .string(bucket.rawValue), "name": .string(name), "createTime": created, "updateTime": created,
            "metageneration": entry.objectValue?["metageneration"] ?? .string("1"),
        ])
    }
}
