package import SiloCore
package import SiloHTTP

/// RFC 9110 §13 conditions on a version's validators (its quoted ETag and its modification time, which
/// `Last-Modified` sends to the second): downloads take them from `If-Match`, `If-None-Match`, `If-Modified-Since`
/// and `If-Unmodified-Since`; XML API copies from their `x-goog-copy-source-if-*` spellings.
package struct ValidatorConditions {
    var ifMatch: String?
    var ifNoneMatch: String?
    var ifModifiedSince: String?
    var ifUnmodifiedSince: String?

    package enum Outcome: Equatable {
        case proceed
        /// An `If-None-Match` that matched or an `If-Modified-Since` that held: 304 on a read.
        case notModified
        /// An `If-Match` that did not match or an `If-Unmodified-Since` that failed: 412.
        case failed
    }

    /// The request's own conditional header fields (the first of each), in one pass over the fields: every
    /// download asks, and four lookups walked the head four times.
    package init(_ headers: HTTPHeaders) {
        for field in headers.fields {
            switch field.name.utf8.count {
            case 8 where ifMatch == nil && equalsIgnoringCase(field.name, "If-Match"):
                ifMatch = field.value
            case 13 where ifNoneMatch == nil && equalsIgnoringCase(field.name, "If-None-Match"):
                ifNoneMatch = field.value
            case 17 where ifModifiedSince == nil && equalsIgnoringCase(field.name, "If-Modified-Since"):
                ifModifiedSince = field.value
            case 19 where ifUnmodifiedSince == nil && equalsIgnoringCase(field.name, "If-Unmodified-Since"):
                ifUnmodifiedSince = field.value
            default: continue
            }
        }
    }

    package init(ifMatch: String?, ifNoneMatch: String?, ifModifiedSince: String?, ifUnmodifiedSince: String?) {
        self.ifMatch = ifMatch
        self.ifNoneMatch = ifNoneMatch
        self.ifModifiedSince = ifModifiedSince
        self.ifUnmodifiedSince = ifUnmodifiedSince
    }

    var isEmpty: Bool { ifMatch == nil && ifNoneMatch == nil && ifModifiedSince == nil && ifUnmodifiedSince == nil }

    /// In RFC 9110 §13.2.2's order: `If-Match`, else `If-Unmodified-Since`; then `If-None-Match`, else
    /// `If-Modified-Since`. A date that does not parse is ignored, as the RFC asks.
    package func evaluate(etag: String, modified: Timestamp) -> Outcome {
        if isEmpty { return .proceed }
        let modifiedSecond = modified.microseconds / 1_000_000
        if let ifMatch {
            if !DownloadResponder.matches(ifMatch, etag: etag) { return .failed }
        } else if let text = ifUnmodifiedSince, let date = Timestamp(httpDate: text),
            modifiedSecond > date.microseconds / 1_000_000
        {
            return .failed
        }
        if let ifNoneMatch {
            if DownloadResponder.matches(ifNoneMatch, etag: etag) { return .notModified }
        } else if let text = ifModifiedSince, let date = Timestamp(httpDate: text),
            modifiedSecond <= date.microseconds / 1_000_000
        {
            return .notModified
        }
        return .proceed
    }
}
