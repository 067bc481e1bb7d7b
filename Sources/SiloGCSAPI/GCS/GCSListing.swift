import SiloCore
import SiloServerKit
import SiloWire

/// Object listing with GCS semantics: items and prefixes merged in byte order and cut at
/// `maxResults`; `startOffset`/`endOffset` bound names; `matchGlob` filters; `versions` lists every generation;
/// `includeTrailingDelimiter` also returns objects named exactly like a prefix. No v0 name filtering here.
struct GCSListing {
    struct Query {
        var prefix = ""
        var delimiter = ""
        var maxResults = 1000
        var versions = false
        var startOffset: String?
        var endOffset: String?
        var glob: Glob?
        var includeTrailingDelimiter = false
        /// `filter=` on object contexts: objects it refuses are skipped (prefixes are not filtered).
        var filter: (@Sendable (ObjectContexts) -> Bool)?
        /// Decoded page token: the last key emitted.
        var after: [UInt8]?
    }

    struct Page {
        var prefixes: [String] = []
        var items: [ObjectRecord] = []
        var nextToken: [UInt8]?
    }

    let store: any MetadataStore
    /// Names one page may examine: a glob or an end offset that matches little must not make one request walk a
    /// whole bucket. The page then ends early with a token, as GCS's short pages do.
    var scanBudget = 10_000

    package func page(_ bucket: BucketName, _ query: Query) throws -> Page {
        var page = Page()
        var emitted = 0
        var scanned = 0
        let delimiter = Array(query.delimiter.utf8)
        let prefixBytes = Array(query.prefix.utf8)
        let end = query.endOffset.map { Array($0.utf8) }
        // The cursor is the last key emitted: a name (live listing) or a name+generation key (versions).
        var cursor = query.after
        if let start = query.startOffset, let before = Self.keyJustBefore(Array(start.utf8), versions: query.versions),
            cursor.map({ $0.lexicographicallyPrecedes(before) }) ?? true
        {
            cursor = before
        }
        // The common prefix just emitted: names after it in the batch that start with it roll up into it and are
        // passed over there; only a batch that ends inside one makes the next fetch seek past it.
        var rolledUp: [UInt8]?
        var limit = 0
        while true {
            // At least twice the last batch: names that roll up into prefixes fill a batch without filling the page.
            limit = min(max(query.maxResults - emitted + 1, limit * 2), 1001)
            let batch = try fetch(bucket, query, after: cursor, limit: limit)
            if batch.isEmpty { return page }
            for record in batch {
                let name = Array(record.name.rawValue.utf8)
                if let rolledUp, name.starts(with: rolledUp) { continue }
                rolledUp = nil
                if let end, !name.lexicographicallyPrecedes(end) { return page }
                scanned += 1
                if emitted >= query.maxResults || (scanned > scanBudget && cursor != nil) {
                    page.nextToken = cursor
                    return page
                }
                if !delimiter.isEmpty, let at = find(delimiter, in: name, from: prefixBytes.count) {
                    let common = Array(name[..<(at + delimiter.count)])
                    let commonString = String(decoding: common, as: UTF8.self)
                    if try query.glob.map({ try $0.matches(commonString) }) ?? true {
                        page.prefixes.append(commonString)
                        emitted += 1
                    }
                    // `dir/` itself is the first name under the prefix `dir/`, so this is the only chance to see it.
                    if query.includeTrailingDelimiter && name.count == common.count {
                        page.items.append(record)
                    }
                    let skip = ObjectName.keyAfterAllNames(startingWith: common)
                    cursor = query.versions ? ObjectVersionKey(name: skip, generation: 0).bytes : skip
                    rolledUp = common
                    continue
                }
                if try query.glob.map({ try $0.matches(record.name.rawValue) }) ?? true,
                    query.filter.map({ $0(ObjectContexts(json: record.fields.extras.contexts)) }) ?? true
                {
                    page.items.append(record)
                    emitted += 1
                }
                cursor = query.versions ? ObjectVersionKey(name: name, generation: record.generation).bytes : name
            }
            if batch.count < limit { return page }
        }
    }

    private func fetch(_ bucket: BucketName, _ query: Query, after: [UInt8]?, limit: Int) throws -> [ObjectRecord] {
        if query.versions {
            return try store.listObjectVersions(
                bucket, prefix: query.prefix, startAfter: after.flatMap(ObjectVersionKey.init(bytes:)), limit: limit)
        }
        return try store.listObjects(bucket, prefix: query.prefix, startAfter: after, limit: limit)
    }

    /// A key that sorts immediately before every key for `name` (so listing "after" it includes `name`).
    static func keyJustBefore(_ name: [UInt8], versions: Bool) -> [UInt8]? {
        // Generations are positive, so (name, 0) precedes every version of `name`.
        if versions { return ObjectVersionKey(name: name, generation: 0).bytes }
        guard let last = name.last else { return nil }
        // The greatest byte string below `name`: drop the last byte if it is 0, else decrement it and pad with 0xFF.
        if last == 0 { return Array(name.dropLast()) }
        return Array(name.dropLast()) + [last - 1, 0xFF, 0xFF, 0xFF, 0xFF]
    }
}
