import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

extension XMLRoutes {
    /// `PUT /{bucket}/{object}` with `x-goog-copy-source`: a server-side copy, through the JSON API's copy (what the
    /// copy keeps of its source, the destination's defaults). `x-goog-copy-source-generation` picks a version,
    /// `x-goog-copy-source-if-*` are conditions on the source, `x-goog-if-*` on the destination, and
    /// `x-goog-metadata-directive: REPLACE` takes the metadata from this request's headers instead of the source.
    package func copy(_ context: RequestContext, _ bucket: BucketName, _ name: ObjectName, source header: String)
        -> RequestDisposition
    {
        // A copy has no body; one that comes anyway is read (up to the JSON bound) and ignored.
        .readBody(
            CollectingSink(limit: service.configuration.maxJSONBodyBytes, refuse: { Reply.xmlError($0) }) { _ in
                run(bucket) {
                    let (sourceBucket, sourceName) = try XMLCopySource.copySource(header)
                    if let missing = missingBucket(sourceBucket) { return missing }
                    let headers = context.headers
                    let named = try Self.generation(headers["x-goog-copy-source-generation"])
                    let original: ObjectRecord
                    do {
                        original = try service.copySource(
                            sourceBucket, sourceName,
                            generation: context.addressed(sourceBucket, sourceName, named: named),
                            conditions: try XMLObjectHeaders.conditions(headers, prefix: "x-goog-copy-source-"))
                    } catch {
                        throw context.changed(sourceBucket, sourceName, named: named, error)
                    }
                    let validators = ValidatorConditions(
                        ifMatch: headers["x-goog-copy-source-if-match"],
                        ifNoneMatch: headers["x-goog-copy-source-if-none-match"],
                        ifModifiedSince: headers["x-goog-copy-source-if-modified-since"],
                        ifUnmodifiedSince: headers["x-goog-copy-source-if-unmodified-since"])
                    guard
                        validators.evaluate(etag: XMLETag.of(original), modified: original.updated)
                            == .proceed
                    else {
                        throw StorageError(
                            .preconditionFailed,
                            "At least one of the pre-conditions you specified did not hold: "
                                + "x-goog-copy-source-if-* on \(sourceBucket)/\(sourceName)")
                    }
                    let changes = try XMLObjectHeaders.changes(headers)
                    var fields: ObjectFields
                    switch headers["x-goog-metadata-directive"]?.uppercased() ?? "COPY" {
                    case "COPY":
                        fields = ObjectService.copiedFields(original)
                    case "REPLACE":
                        fields = ObjectFields(extras: ObjectService.copiedFields(original).extras)
                        try changes.apply(to: &fields)
                        if fields.contentType == nil { fields.contentType = "application/octet-stream" }
                    case let other:
                        throw StorageError(
                            .invalidArgument,
                            "x-goog-metadata-directive must be COPY or REPLACE, not \(other.prefix(40))")
                    }
                    let (record, _) = try service.copy(
                        original, to: (bucket, name), fields: fields, extras: changes.extras,
                        predefinedACL: try XMLObjectHeaders.predefinedACL(headers), principal: context.principal,
                        conditions: try XMLObjectHeaders.conditions(headers), time: context.time)
                    var answer = XMLObjectHeaders.written(record)
                    answer.add("Content-Type", "application/xml; charset=UTF-8")
                    let body =
                        "<?xml version='1.0' encoding='UTF-8'?><CopyObjectResult><LastModified>"
                        + "\(record.updated.rfc3339)</LastModified><ETag>\(XMLText.escape(XMLETag.of(record)))"
                        + "</ETag></CopyObjectResult>"
                    return HTTPResponse(status: 200, headers: answer, body: .bytes(Array(body.utf8)))
                }
            })
    }

    /// A positive generation from a header.
    private static func generation(_ text: String?) throws -> Int64? {
        guard let text else { return nil }
        guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int64(text), value > 0 else {
            throw StorageError(
                .invalidArgument, "x-goog-copy-source-generation must be a positive integer, not \(text.prefix(40))")
        }
        return value
    }
}
