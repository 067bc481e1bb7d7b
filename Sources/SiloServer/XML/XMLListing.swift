import SiloCore
import SiloHTTP
import SiloWire

extension XMLRoutes {
    /// `GET /{bucket}`: the JSON API's listing (``GCSListing``) as `<ListBucketResult>`. Version 1 pages with
    /// `marker` (names, so `NextMarker` is the last key or prefix of the page); version 2 (`list-type=2`, what Rust's
    /// object_store sends) with an opaque `continuation-token` and `start-after`.
    func list(_ context: RequestContext, _ bucket: BucketName) -> HTTPResponse {
        run(bucket) {
            let request = try ListRequest(context.query)
            let page: GCSListing.Page
            if request.maxKeys == 0 {
                page = GCSListing.Page()
            } else {
                var query = GCSListing.Query()
                query.prefix = request.prefix
                query.delimiter = request.delimiter
                query.maxResults = request.maxKeys
                query.after = request.after
                page = try GCSListing(store: service.metadata).page(bucket, query)
            }
            return Reply.xml(200, request.render(page, bucket: bucket))
        }
    }
}

/// One listing request's parameters, checked.
struct ListRequest {
    var version2: Bool
    var prefix: String
    var delimiter: String
    var maxKeys: Int
    /// The parameter that says where the page starts, as the client gave it (echoed back).
    var marker: String?
    var continuationToken: String?
    var startAfter: String?
    /// The listing key after which the page starts.
    var after: [UInt8]?

    /// GCS's and S3's page size: larger `max-keys` are cut to it.
    static let maxPage = 1000

    init(_ q: QueryParameters) throws {
        version2 = q["list-type"] == "2"
        if let type = q["list-type"], type != "2" {
            throw StorageError(.invalidArgument, "list-type must be 2 (or absent), not \(type.prefix(20))")
        }
        prefix = q["prefix"] ?? ""
        delimiter = q["delimiter"] ?? ""
        maxKeys = Self.maxPage
        if let text = q["max-keys"] {
            guard let value = Int(text), value >= 0 else {
                throw StorageError(.invalidArgument, "max-keys must be a non-negative integer, not \(text.prefix(40))")
            }
            maxKeys = min(value, Self.maxPage)
        }
        if version2 {
            if let token = q["continuation-token"], !token.isEmpty {
                guard let key = Base64.decode(token) else {
                    throw StorageError(.invalidArgument, "invalid continuation-token")
                }
                continuationToken = token
                after = key
            } else if let start = q["start-after"], !start.isEmpty {
                startAfter = start
                after = Array(start.utf8)
            }
        } else if let marker = q["marker"], !marker.isEmpty {
            self.marker = marker
            after = Self.keyAfter(marker: Array(marker.utf8), prefix: Array(prefix.utf8), delimiter: delimiter)
        }
    }

    /// Where a page after `marker` starts. A marker that is a common prefix (the `NextMarker` of a page that ended
    /// with one) skips every name under it: they all rolled up into that prefix, which the client has.
    static func keyAfter(marker: [UInt8], prefix: [UInt8], delimiter: String) -> [UInt8] {
        let delimiter = Array(delimiter.utf8)
        guard !delimiter.isEmpty, marker.starts(with: prefix), marker.count >= prefix.count + delimiter.count else {
            return marker
        }
        var at = prefix.count
        while at + delimiter.count <= marker.count {
            if marker[at..<(at + delimiter.count)].elementsEqual(delimiter) {
                return ObjectName.keyAfterAllNames(startingWith: marker[..<(at + delimiter.count)])
            }
            at += 1
        }
        return marker
    }

    /// `<ListBucketResult>` as GCS sends it, S3's namespace included (S3 client libraries look for it).
    func render(_ page: GCSListing.Page, bucket: BucketName) -> String {
        var xml = "<?xml version='1.0' encoding='UTF-8'?>"
        xml += "<ListBucketResult xmlns=\"http://doc.s3.amazonaws.com/2006-03-01\">"
        func element(_ name: String, _ value: String) { xml += "<\(name)>\(XMLText.escape(value))</\(name)>" }
        element("Name", bucket.rawValue)
        element("Prefix", prefix)
        let truncated = page.nextToken != nil
        if version2 {
            if let continuationToken { element("ContinuationToken", continuationToken) }
            if let startAfter { element("StartAfter", startAfter) }
            element("KeyCount", String(page.items.count + page.prefixes.count))
        } else {
            element("Marker", marker ?? "")
            // The last key or prefix of the page, whichever sorts last: the page's items and prefixes interleave.
            let last = [page.items.last?.name.rawValue, page.prefixes.last].compactMap { $0 }
                .max { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            if truncated, let last { element("NextMarker", last) }
        }
        element("MaxKeys", String(maxKeys))
        if !delimiter.isEmpty { element("Delimiter", delimiter) }
        element("IsTruncated", truncated ? "true" : "false")
        if version2, let next = page.nextToken { element("NextContinuationToken", Base64.encodeURLSafe(next)) }
        for record in page.items {
            xml += "<Contents>"
            element("Key", record.name.rawValue)
            element("Generation", String(record.generation))
            element("MetaGeneration", String(record.metageneration))
            element("LastModified", record.updated.rfc3339)
            element("ETag", XMLObjectHeaders.etag(record))
            element("Size", String(record.size))
            element("StorageClass", record.fields.extras.storageClass ?? "STANDARD")
            xml += "</Contents>"
        }
        for prefix in page.prefixes {
            xml += "<CommonPrefixes>"
            element("Prefix", prefix)
            xml += "</CommonPrefixes>"
        }
        return xml + "</ListBucketResult>"
    }
}

extension Reply {
    /// An XML document answer.
    static func xml(_ status: Int, _ document: String, headers extra: HTTPHeaders = [:]) -> HTTPResponse {
        var headers = extra
        headers.set("Content-Type", "application/xml; charset=UTF-8")
        return HTTPResponse(status: status, headers: headers, body: .bytes(Array(document.utf8)))
    }
}
