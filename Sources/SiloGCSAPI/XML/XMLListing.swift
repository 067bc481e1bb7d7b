import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

extension XMLRoutes {
    /// `GET /{bucket}`: the JSON API's listing (``GCSListing``) as `<ListBucketResult>`. Version 1 pages with
    /// `marker` (names, so `NextMarker` is the last key or prefix of the page); version 2 (`list-type=2`, what Rust's
    /// object_store sends) with an opaque `continuation-token` and `start-after`; `versions` lists every generation
    /// as `<ListVersionsResult>`, paged by `marker` and `generation-marker` (gsutil's `ls -a`).
    package func list(_ context: RequestContext, _ bucket: BucketName) -> HTTPResponse {
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
                query.versions = request.versions
                page = try GCSListing(store: service.metadata).page(bucket, query)
            }
            guard request.versions else { return Reply.xml(200, request.render(page, bucket: bucket)) }
            // Which listed generation is each name's live one: one lookup per name on the page.
            var live: [ObjectName: Int64] = [:]
            for name in Set(page.items.map(\.name)) {
                live[name] = try service.object(bucket, name, generation: nil)?.generation
            }
            return Reply.xml(200, request.render(page, bucket: bucket) { live[$0.name] == $0.generation })
        }
    }
}

/// One listing request's parameters, checked.
struct ListRequest {
    var version2: Bool
    /// `versions`: every generation, live and noncurrent.
    var versions: Bool
    var prefix: String
    var delimiter: String
    var maxKeys: Int
    /// The parameter that says where the page starts, as the client gave it (echoed back).
    var marker: String?
    /// With `versions`: the generation of `marker` after which the page starts.
    var generationMarker: Int64?
    var continuationToken: String?
    var startAfter: String?
    /// The listing key after which the page starts (an ``ObjectVersionKey`` with `versions`).
    var after: [UInt8]?
    /// `encoding-type=url`: names in the answer percent-encoded, for names XML 1.0 cannot carry (control
    /// characters).
    var encodeNames: Bool

    /// GCS's and S3's page size: larger `max-keys` are cut to it.
    static let maxPage = 1000

    init(_ q: QueryParameters) throws {
        version2 = q["list-type"] == "2"
        if let type = q["list-type"], type != "2" {
            throw StorageError(.invalidArgument, "list-type must be 2 (or absent), not \(type.prefix(20))")
        }
        // `?versions` is a bare key (gsutil); `versions=false` is the one value that does not ask for them.
        versions = q["versions"].map { $0.lowercased() != "false" } ?? false
        if versions && version2 {
            throw StorageError(.invalidArgument, "versions cannot be listed with list-type=2")
        }
        switch q["encoding-type"] {
        case nil, "": encodeNames = false
        case "url": encodeNames = true
        case let other?:
            throw StorageError(.invalidArgument, "encoding-type must be url, not \(other.prefix(20))")
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
        } else if versions {
            // GCS spells them `marker` and `generation-marker`; S3's `key-marker` and `version-id-marker` too.
            if let text = q["generation-marker"] ?? q["version-id-marker"], !text.isEmpty {
                guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let generation = Int64(text) else {
                    throw StorageError(
                        .invalidArgument, "generation-marker must be a generation number, not \(text.prefix(40))")
                }
                generationMarker = generation
            }
            if let marker = q["marker"] ?? q["key-marker"], !marker.isEmpty {
                self.marker = marker
                after = Self.versionKeyAfter(
                    marker: Array(marker.utf8), generation: generationMarker, prefix: Array(prefix.utf8),
                    delimiter: delimiter)
            }
        } else if let marker = q["marker"], !marker.isEmpty {
            self.marker = marker
            after = Self.keyAfter(marker: Array(marker.utf8), prefix: Array(prefix.utf8), delimiter: delimiter)
        }
    }

    /// Where a versions page after (`marker`, `generation`) starts: right after that version; after every version
    /// of `marker` when no generation is given; after every name under it when `marker` is a common prefix.
    static func versionKeyAfter(marker: [UInt8], generation: Int64?, prefix: [UInt8], delimiter: String) -> [UInt8] {
        if let generation { return ObjectVersionKey(name: marker, generation: generation).bytes }
        let skip = keyAfter(marker: marker, prefix: prefix, delimiter: delimiter)
        if skip == marker { return ObjectVersionKey(name: marker, generation: .max).bytes }
        // Generations are positive: (skip, 0) sorts before every version of every name after the prefix.
        return ObjectVersionKey(name: skip, generation: 0).bytes
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

    /// `<ListBucketResult>` as GCS sends it, S3's namespace included (S3 client libraries look for it); with
    /// `versions`, `<ListVersionsResult>` with a `<Version>` per generation, `isLatest` telling the live ones.
    package func render(_ page: GCSListing.Page, bucket: BucketName, isLatest: (ObjectRecord) -> Bool = { _ in true })
        -> String
    {
        let name = { (text: String) in encodeNames ? PercentCoding.encodeComponent(text) : text }
        let truncated = page.nextToken != nil
        var xml = XMLWriter()
        let root = versions ? "ListVersionsResult" : "ListBucketResult"
        xml.element(root, attributes: ["xmlns": "http://doc.s3.amazonaws.com/2006-03-01"]) { xml in
            xml.element("Name", bucket.rawValue)
            xml.element("Prefix", name(prefix))
            if version2 {
                if let continuationToken { xml.element("ContinuationToken", continuationToken) }
                if let startAfter { xml.element("StartAfter", name(startAfter)) }
                xml.element("KeyCount", String(page.items.count + page.prefixes.count))
            } else {
                xml.element("Marker", name(marker ?? ""))
                if versions { xml.element("GenerationMarker", generationMarker.map(String.init) ?? "") }
                if truncated, let next = nextMarker(page) {
                    xml.element("NextMarker", name(next.name))
                    if let generation = next.generation { xml.element("NextGenerationMarker", String(generation)) }
                }
            }
            xml.element("MaxKeys", String(maxKeys))
            if !delimiter.isEmpty { xml.element("Delimiter", name(delimiter)) }
            if encodeNames { xml.element("EncodingType", "url") }
            xml.element("IsTruncated", truncated ? "true" : "false")
            if version2, let next = page.nextToken { xml.element("NextContinuationToken", Base64.encodeURLSafe(next)) }
            for record in page.items {
                xml.element(versions ? "Version" : "Contents") { xml in
                    xml.element("Key", name(record.name.rawValue))
                    xml.element("Generation", String(record.generation))
                    xml.element("MetaGeneration", String(record.metageneration))
                    if versions { xml.element("IsLatest", isLatest(record) ? "true" : "false") }
                    xml.element("LastModified", record.updated.rfc3339)
                    xml.element("ETag", XMLETag.of(record))
                    xml.element("Size", String(record.size))
                    xml.element("StorageClass", record.fields.extras.storageClass ?? "STANDARD")
                }
            }
            for prefix in page.prefixes {
                xml.element("CommonPrefixes") { $0.element("Prefix", name(prefix)) }
            }
        }
        return xml.text
    }

    /// Where the next version 1 or versions page starts. Versions: the key the listing stopped at — a version
    /// (name and generation) or, after a common prefix, the prefix. Version 1: the last key or prefix of the page,
    /// whichever sorts last (the page's items and prefixes interleave).
    private func nextMarker(_ page: GCSListing.Page) -> (name: String, generation: Int64?)? {
        if versions, let token = page.nextToken, let key = ObjectVersionKey(bytes: token) {
            // A skipped prefix is the prefix plus 0xFF (ObjectName.keyAfterAllNames), which no name holds.
            if key.name.last == 0xFF { return String(validating: key.name.dropLast(), as: UTF8.self).map { ($0, nil) } }
            return String(validating: key.name, as: UTF8.self).map { ($0, key.generation) }
        }
        let last = [page.items.last?.name.rawValue, page.prefixes.last].compactMap { $0 }
            .max { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        return last.map { ($0, nil) }
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
