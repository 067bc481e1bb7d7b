public import Foundation
public import SiloS3Signer

extension S3BlobStore {
    /// Where and how the store talks to S3. Built from an `s3://` URL and the AWS environment variables by
    /// ``init(url:environment:)``, or field by field.
    public struct Configuration: Sendable {
        /// `http(s)://host[:port]` of the S3 API; requests use path-style URLs (`<endpoint>/<bucket>/<key>`).
        public var endpoint: String
        public var bucket: String
        /// Key prefix under which blobs live, without leading or trailing slash ("" = the bucket's root).
        public var prefix: String
        public var region: String
        public var credentials: SigV4Credentials
        /// Bytes a writer buffers before sending them as one part of a multipart upload, which is also the most
        /// memory one writer holds. S3 wants at least 5 MiB for every part but the last.
        public var partSize: Int = 8 << 20
        /// The most one server-side copy request moves (S3 caps CopyObject and each UploadPartCopy at 5 GiB):
        /// composing a larger segment copies it in ranges of this size. At least 5 MiB, S3's smallest part.
        public var maxCopyBytes: Int64 = 5 << 30
        /// The first read-ahead of a reader; it doubles on each sequential miss up to ``maxReadAhead``.
        public var initialReadAhead: Int = 256 << 10
        public var maxReadAhead: Int = 4 << 20
        /// Attempts per request when the store answers 5xx or cannot be reached (bodies are in memory, so every
        /// request is replayable).
        public var maxAttempts: Int = 3
        public var connectTimeout: Duration = .seconds(10)
        /// Longest time with no byte moving before a request fails.
        public var idleTimeout: Duration = .seconds(60)

        public init(
            endpoint: String, bucket: String, prefix: String = "", region: String, credentials: SigV4Credentials
        ) {
            self.endpoint = endpoint
            self.bucket = bucket
            self.prefix = prefix
            self.region = region
            self.credentials = credentials
        }

        /// Parses `s3://bucket[/prefix][?endpoint=http://127.0.0.1:8333&region=us-east-1&partSize=8388608]`.
        ///
        /// Credentials come from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and optionally `AWS_SESSION_TOKEN`.
        /// The region is the URL's, else `AWS_REGION`, else `AWS_DEFAULT_REGION`, else `us-east-1`. Without an
        /// endpoint the store is AWS itself: `https://s3.<region>.amazonaws.com`.
        public init(url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(S3Error) {
            guard let components = URLComponents(string: url), components.scheme?.lowercased() == "s3",
                let bucket = components.host, !bucket.isEmpty
            else {
                throw S3Error(.invalidConfiguration, "not an s3://bucket URL: \(Self.redacted(url))")
            }
            var query: [String: String] = [:]
            for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
            let known: Set = ["endpoint", "region", "partSize"]
            if let unknown = query.keys.first(where: { !known.contains($0) }) {
                throw S3Error(.invalidConfiguration, "unknown parameter '\(unknown)' in \(Self.redacted(url))")
            }
            let region =
                query["region"] ?? environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"] ?? "us-east-1"
            var endpoint = query["endpoint"] ?? "https://s3.\(region).amazonaws.com"
            while endpoint.hasSuffix("/") { endpoint.removeLast() }
            guard let parsed = URLComponents(string: endpoint), ["http", "https"].contains(parsed.scheme ?? ""),
                parsed.host?.isEmpty == false, parsed.path.isEmpty, parsed.query == nil
            else {
                throw S3Error(.invalidConfiguration, "endpoint must be http(s)://host[:port], got '\(endpoint)'")
            }
            guard let accessKey = environment["AWS_ACCESS_KEY_ID"], !accessKey.isEmpty,
                let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty
            else {
                throw S3Error(
                    .invalidConfiguration,
                    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set for s3://\(bucket)")
            }
            let token = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
            let prefix = components.path.split(separator: "/").joined(separator: "/")
            self.init(
                endpoint: endpoint, bucket: bucket, prefix: prefix, region: region,
                credentials: SigV4Credentials(accessKeyID: accessKey, secretAccessKey: secret, sessionToken: token))
            if let text = query["partSize"] {
                guard let size = Int(text), size >= 5 << 20, size <= 1 << 30 else {
                    throw S3Error(.invalidConfiguration, "partSize must be 5 MiB...1 GiB in bytes, got '\(text)'")
                }
                partSize = size
            }
        }

        /// The URL without its query, for messages (the query never holds secrets, but keep messages short).
        private static func redacted(_ url: String) -> String {
            String(url.prefix { $0 != "?" })
        }
    }
}
