import SiloCore
import SiloServerKit

/// v0 listing: items and prefixes merged into one byte-ordered sequence and cut at `maxResults`;
/// the page token is the last key emitted. Names that are not valid Firebase paths are filtered out.
enum FirebaseListing {
    struct Page: Equatable {
        var prefixes: [String] = []
        var items: [String] = []
        /// Where the next page starts (exclusive); nil on the last page.
        var cursor: [UInt8]?
    }

    static func page(
        store: any MetadataStore, bucket: BucketName, prefix: String, delimiter: String, startAfter: [UInt8]?,
        maxResults: Int
    ) throws -> Page {
        var page = Page()
        let prefixBytes = Array(prefix.utf8)
        let delimiterBytes = Array(delimiter.utf8)
        var cursor = startAfter
        var emitted = 0
        // The common prefix just emitted: the names after it in the batch that start with it roll up into it. They
        // are passed over in the batch; only when a batch ends inside one does the next fetch seek past it. (A fetch
        // per prefix read up to a thousand rows to use one: pages of many small folders cost a query each.)
        var rolledUp: [UInt8]?
        var limit = 0
        while true {
            // One more than the page needs, so a full page knows whether anything follows; at least twice the last
            // batch, because names that roll up into prefixes fill a batch without filling the page.
            limit = min(max(maxResults - emitted + 1, limit * 2), 1001)
            let batch = try store.listObjects(bucket, prefix: prefix, startAfter: cursor, limit: limit)
            if batch.isEmpty { return page }
            for record in batch {
                let name = Array(record.name.rawValue.utf8)
                if let rolledUp, name.starts(with: rolledUp) { continue }
                rolledUp = nil
                if emitted == maxResults {
                    page.cursor = cursor
                    return page
                }
                if !delimiterBytes.isEmpty, let end = find(delimiterBytes, in: name, from: prefixBytes.count) {
                    let commonPrefix = Array(name[..<(end + delimiterBytes.count)])
                    if isValidPath(commonPrefix.last == 0x2F ? Array(commonPrefix.dropLast()) : commonPrefix) {
                        page.prefixes.append(String(decoding: commonPrefix, as: UTF8.self))
                        emitted += 1
                    }
                    cursor = ObjectName.keyAfterAllNames(startingWith: commonPrefix)
                    rolledUp = commonPrefix
                    continue
                }
                if isValidPath(name) {
                    page.items.append(record.name.rawValue)
                    emitted += 1
                }
                cursor = name
            }
            // The store returned fewer than asked: nothing left.
            if batch.count < limit { return page }
        }
    }

    /// A Firebase path has no empty segment: no leading or trailing `/`, no `//`.
    static func isValidPath(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.first, let last = bytes.last, first != 0x2F, last != 0x2F else { return false }
        for i in 1..<bytes.count where bytes[i] == 0x2F && bytes[i - 1] == 0x2F { return false }
        return true
    }
}
