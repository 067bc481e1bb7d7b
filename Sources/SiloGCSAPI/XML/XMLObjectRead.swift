import SiloCore
import SiloHTTP
import SiloServerKit

extension XMLRoutes {
    /// `GET`/`HEAD /{bucket}/{object}`: the download of the JSON API (Range, validators, transcoding) with the XML
    /// API's headers, `x-goog-if-*` conditions, `?generation=` and the `response-*` overrides.
    package func read(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName) -> HTTPResponse {
        run(bucket) {
            let named = try GCSConditions.generation(context.query)
            let generation = context.addressed(bucket, name, named: named)
            let conditions = try XMLObjectHeaders.conditions(context.headers)
            let overrides = try ResponseOverrides(context.query)
            let thumbnail = try ThumbnailQuery.spec(
                context.query, bucket: bucket, settings: service.configuration.images)
            var response = try download.respond(context, api: .xml, thumbnail: thumbnail) {
                guard let record = try service.object(bucket, name, generation: generation) else {
                    throw context.changed(bucket, name, named: named, StorageError.objectNotFound(bucket, name))
                }
                try conditions.check(record, describing: "\(bucket)/\(name)")
                return record
            }
            if response.status == 200 || response.status == 206 { overrides.apply(to: &response.headers) }
            if response.status == 416 {
                // GCS's XML API explains a refused range in its error shape; `Content-Range: bytes */N` stays.
                let range = context.headers["Range"].map { String($0.prefix(100)) } ?? ""
                return Reply.xmlError(
                    StorageError(
                        .rangeNotSatisfiable,
                        "The requested range \(range) cannot be satisfied for \(bucket)/\(name)."),
                    headers: response.headers)
            }
            return response
        }
    }
}

/// `response-content-type=…` and its siblings on a read: the answer carries these header values instead of the
/// stored ones (signed URLs use them to make a browser save or show a file).
struct ResponseOverrides {
    private(set) var values: [(header: String, value: String)] = []

    private static let parameters = [
        ("response-content-type", "Content-Type"), ("response-content-disposition", "Content-Disposition"),
        ("response-content-language", "Content-Language"), ("response-content-encoding", "Content-Encoding"),
        ("response-cache-control", "Cache-Control"), ("response-expires", "Expires"),
    ]

    /// Throws `.invalidArgument` for a value that could not go into a header (a control character, too long).
    init(_ query: QueryParameters) throws {
        for (parameter, header) in Self.parameters {
            guard let value = query[parameter], !value.isEmpty else { continue }
            try FieldText.check(value, field: parameter)
            values.append((header, value))
        }
    }

    func apply(to headers: inout HTTPHeaders) {
        for (header, value) in values { headers.set(header, value) }
    }
}
