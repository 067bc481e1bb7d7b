import SiloCore
import SiloHTTP
import SiloWire

/// GCS JSON API bucket operations: list, insert, get, patch (versioning), delete.
struct GCSBucketRoutes {
    let service: ObjectService

    private func run(_ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return Reply.gcsError(error) }
    }

    func buckets(_ context: RequestContext) -> RequestDisposition {
        switch context.method {
        case "GET", "HEAD":
            return .respond(
                run {
                    var records = try service.metadata.buckets()
                    if let served = service.configuration.buckets {
                        records = records.filter { served.contains($0.name) }
                    }
                    var o: JSONObject = ["kind": .string("storage#buckets")]
                    if !records.isEmpty {
                        o["items"] = .array(records.map { GCSJSON.bucket($0, base: context.externalBase) })
                    }
                    return Reply.json(200, .object(o))
                })
        case "POST":
            return withBody(context) { json in
                guard let name = json["name"]?.stringValue else {
                    throw StorageError(.invalidArgument, "a new bucket needs a name")
                }
                let bucket = try BucketName(name)
                try service.checkServed(bucket)
                let versioning = json["versioning"]?.objectValue?["enabled"] == .bool(true)
                let record = try service.metadata.createBucket(bucket, versioning: versioning, at: context.time)
                return Reply.json(200, GCSJSON.bucket(record, base: context.externalBase))
            }
        default:
            return .respond(Reply.gcsError(StorageError(.invalidArgument, "\(context.method) is not supported on /b")))
        }
    }

    func bucket(_ context: RequestContext, _ name: BucketName) -> RequestDisposition {
        switch context.method {
        case "GET", "HEAD":
            return .respond(
                run {
                    try service.checkServed(name)
                    // A bucket named with --bucket exists from the start, as the emulator's default bucket does.
                    let record =
                        try service.configuration.buckets != nil
                        ? service.metadata.ensureBucket(name) : service.metadata.bucket(name)
                    guard let record else {
                        throw StorageError(.notFound, "The specified bucket does not exist: \(name)")
                    }
                    return Reply.json(200, GCSJSON.bucket(record, base: context.externalBase))
                })
        case "PATCH", "PUT":
            return withBody(context) { json in
                try service.checkServed(name)
                guard try service.metadata.bucket(name) != nil else {
                    throw StorageError(.notFound, "The specified bucket does not exist: \(name)")
                }
                let record = try service.metadata.updateBucket(name, at: context.time) { bucket in
                    switch json["versioning"] {
                    case nil: break
                    // PATCH semantics: null clears the setting.
                    case .null?: bucket.versioning = false
                    case .object(let versioning)?:
                        if let enabled = versioning["enabled"] {
                            guard case .bool(let on) = enabled else {
                                throw StorageError(.invalidArgument, "versioning.enabled must be true or false")
                            }
                            bucket.versioning = on
                        }
                    default: throw StorageError(.invalidArgument, "versioning must be an object or null")
                    }
                }
                return Reply.json(200, GCSJSON.bucket(record, base: context.externalBase))
            }
        case "DELETE":
            return .respond(
                run {
                    try service.checkServed(name)
                    try service.metadata.deleteBucket(name)
                    return Reply.empty(204)
                })
        default:
            return .respond(
                Reply.gcsError(StorageError(.invalidArgument, "\(context.method) is not supported on a bucket")))
        }
    }

    private func withBody(_ context: RequestContext, _ body: @escaping (JSONObject) throws -> HTTPResponse)
        -> RequestDisposition
    {
        .readBody(
            CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.gcsError($0) }) { bytes in
                run {
                    guard case .object(let json) = try JSONValue.parse(bytes.isEmpty ? Array("{}".utf8) : bytes) else {
                        throw StorageError(.invalidArgument, "the body must be a JSON object")
                    }
                    return try body(json)
                }
            })
    }
}
