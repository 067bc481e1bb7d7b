public import SiloCore

/// One webhook that storage events are delivered to, with what it wants: `--event-webhook
/// 'URL[;bucket=B[,B2…]][;types=finalize,delete,archive,metadataUpdate]'`. Without a filter it gets every event.
public struct WebhookTarget: Sendable, Equatable {
    public var url: String
    /// Nil: every bucket.
    public var buckets: Set<BucketName>?
    /// Nil: every kind.
    public var kinds: Set<StorageEvent.Kind>?

    public init(url: String, buckets: Set<BucketName>? = nil, kinds: Set<StorageEvent.Kind>? = nil) {
        self.url = url
        self.buckets = buckets
        self.kinds = kinds
    }

    /// The longest specification accepted; URLs past it are almost certainly a mistake.
    static let maxSpecificationBytes = 4096

    /// Parses the flag's value. The URL must be http or https with a host, and hold no control character or space
    /// (it goes to libcurl as is); each filter is given once.
    public init(parsing specification: String) throws {
        guard specification.utf8.count <= Self.maxSpecificationBytes else {
            throw StorageError(.invalidArgument, "--event-webhook is longer than \(Self.maxSpecificationBytes) bytes")
        }
        var parts = specification.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        let url = parts.removeFirst()
        guard url.hasPrefix("http://") || url.hasPrefix("https://"),
            url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
            let host = url.split(separator: "/", omittingEmptySubsequences: false).dropFirst(2).first, !host.isEmpty
        else {
            throw StorageError(.invalidArgument, "--event-webhook needs an http:// or https:// URL with a host")
        }
        self.init(url: url)
        for part in parts {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2, !pair[1].isEmpty else {
                throw StorageError(.invalidArgument, "--event-webhook: '\(part.prefix(64))' is not key=value")
            }
            let values = pair[1].split(separator: ",").map(String.init)
            switch pair[0] {
            case "bucket" where buckets == nil:
                buckets = Set(
                    try values.map { value in
                        do { return try BucketName(value) } catch {
                            throw StorageError(
                                .invalidArgument, "--event-webhook: '\(value.prefix(64))' is not a bucket name",
                                cause: error)
                        }
                    })
            case "types" where kinds == nil:
                kinds = Set(
                    try values.map { value in
                        guard let kind = StorageEvent.Kind(rawValue: value) else {
                            throw StorageError(
                                .invalidArgument,
                                "--event-webhook: '\(value.prefix(64))' is not an event type (finalize, delete, archive, metadataUpdate)"
                            )
                        }
                        return kind
                    })
            default:
                throw StorageError(
                    .invalidArgument, "--event-webhook: unknown or repeated filter '\(pair[0].prefix(64))'")
            }
        }
    }

    public func wants(_ event: StorageEvent) -> Bool {
        (buckets?.contains(event.object.bucket) ?? true) && (kinds?.contains(event.kind) ?? true)
    }
}
