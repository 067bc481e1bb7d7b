import Foundation
import SiloCurl
import SiloHashing
import SiloS3Signer
import SiloWire

/// One S3 request as the store describes it: which key (nil = the bucket itself), subresource query, signed
/// headers, an in-memory body, and how much reply it is willing to hold.
struct S3Operation {
    var method: String
    var key: String?
    var query: [SigV4QueryItem] = []
    var headers: [SigV4Header] = []
    var body: Data?
    /// Largest reply body accepted (XML replies are small; ranged GETs say their length).
    var replyLimit: Int = 1 << 20
    var replyReserve: Int = 0
    /// What the request does, for error messages ("PUT part 3 of blobs/ab…/seg-…").
    var summary: String
}

/// Signs and sends S3 requests over libcurl on the calling thread, retrying 5xx answers and connection failures
/// with a short backoff. Stateless beyond its configuration, so shared by the store and all its readers and writers.
struct S3Client: Sendable {
    let configuration: S3BlobStore.Configuration
    private let signer: SigV4Signer
    private let host: String
    /// Keeps connections to the endpoint open between requests: a blob is several requests (list, then PUTs or
    /// ranged GETs), and one connection per request would leave thousands of sockets in TIME_WAIT under load.
    private let curl = CurlClient(reuseConnections: true, maxIdleConnections: 32)

    init(configuration: S3BlobStore.Configuration) {
        self.configuration = configuration
        signer = SigV4Signer(
            credentials: configuration.credentials, region: configuration.region,
            hashing: SigV4Hashing(
                sha256: { SHA256.digest($0) }, hmacSHA256: { HMACSHA256.authenticationCode(key: $0, message: $1) }))
        // The Host header libcurl derives from the endpoint URL: its authority.
        let afterScheme = configuration.endpoint.split(separator: "://", maxSplits: 1).last ?? ""
        host = String(afterScheme.prefix { $0 != "/" })
    }

    /// Sends `operation` and returns a 2xx reply; anything else becomes an ``S3Error`` naming the operation.
    func send(_ operation: S3Operation) throws(S3Error) -> CurlBufferedResponse {
        var attempt = 1
        while true {
            do {
                return try sendOnce(operation)
            } catch let error where error.code == .unavailable && attempt < configuration.maxAttempts {
                // 5xx, throttling or a broken connection: wait 100 ms, 400 ms, … and replay (bodies are in memory).
                let delay = 0.1 * Double(1 << (2 * (attempt - 1)))
                Thread.sleep(forTimeInterval: delay * Double.random(in: 0.75...1.25))
                attempt += 1
            }
        }
    }

    private func sendOnce(_ operation: S3Operation) throws(S3Error) -> CurlBufferedResponse {
        let path = "/" + configuration.bucket + (operation.key.map { "/" + $0 } ?? "")
        let request = SigV4Request(
            method: operation.method, host: host, path: path, query: operation.query, headers: operation.headers)
        let time = SigV4Timestamp(secondsSince1970: Int64(Date().timeIntervalSince1970))
        let signed = signer.sign(request, payload: .unsigned, at: time)
        let curlRequest = CurlRequest(
            method: operation.method, url: configuration.endpoint + request.encodedPathAndQuery,
            headers: (operation.headers + signed).map { CurlHeader($0.name, $0.value) },
            body: operation.body.map { .bytes($0) } ?? .none,
            timeouts: CurlTimeouts(
                connect: configuration.connectTimeout, idle: configuration.idleTimeout, total: nil))
        let reply: CurlBufferedResponse
        do {
            reply = try curl.performBuffered(
                curlRequest, bodyLimit: operation.replyLimit, reserve: operation.replyReserve)
        } catch let error as CurlError {
            let code: S3Error.Code = error.kind == .badURL ? .invalidConfiguration : .unavailable
            throw S3Error(code, "\(operation.summary): \(error.message)", cause: error)
        } catch let error as CurlBodyLimitExceeded {
            throw S3Error(
                .invalidResponse, "\(operation.summary): reply body exceeds \(error.limit) bytes",
                status: error.status, cause: error)
        } catch {
            throw S3Error(.unavailable, "\(operation.summary): \(error)")
        }
        guard (200..<300).contains(reply.status) else {
            throw Self.failure(status: reply.status, body: reply.body, operation.summary)
        }
        return reply
    }

    /// The error for a non-2xx reply, with S3's `<Code>` and `<Message>` when the body has them. Ceph RGW sends
    /// every `<Message>` empty (docs/s3-engines.md): then the code, which ``S3Error/description`` shows, says it.
    static func failure(status: Int, body: [UInt8], _ summary: String) -> S3Error {
        let xml = Substring(decoding: body.prefix(64 << 10), as: UTF8.self)
        let s3Code = XMLText.value("Code", in: xml).flatMap { $0.isEmpty ? nil : $0 }
        let s3Message = XMLText.value("Message", in: xml).flatMap { $0.isEmpty ? nil : $0 }
        let code: S3Error.Code =
            switch status {
            case 404: .notFound
            case 401, 403: .accessDenied
            case 408, 429, 500...599: .unavailable
            default: .rejected
            }
        let detail = s3Message.map { ": \($0)" } ?? ""
        return S3Error(code, "\(summary) failed\(detail)", status: status, s3Code: s3Code)
    }
}
