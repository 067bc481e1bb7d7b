import Foundation
import SiloStorage
import SiloWire
import Synchronization

/// The SDK instance and a raw request path to one server. Most commands go through `SiloStorage`; ranged and
/// resumable downloads, metadata patches with deletions and the control endpoints use the SDK's transport
/// directly, with the same `Authorization: Firebase <token>` header the SDK's ID-token provider adds.
final class ServerConnection: Sendable {
    let endpoint: Endpoint
    let token: String?
    let storage: Storage
    let transport: any StorageTransport

    init(_ options: ClientOptions) {
        endpoint = options.endpoint
        token = options.token
        // On Linux the SDK's transport is libcurl's, which takes a CA file; elsewhere the system decides.
        #if os(Linux)
        transport =
            options.trustedCertificatesFile.map { CurlStorageTransport(trustedCertificatesFile: $0) }
            ?? Storage.defaultTransport()
        #else
        transport = Storage.defaultTransport()
        #endif
        let provider: Storage.IDTokenProvider? = options.token.map { token in { @Sendable in token } }
        storage = Storage(url: "", idTokenProvider: provider, transport: transport)
        storage.useEmulator(
            withHost: options.endpoint.host, port: options.endpoint.port, secure: options.endpoint.secure)
        // A command line should fail in seconds, not retry for the SDK's default ten minutes.
        storage.maxOperationRetryTime = 15
        storage.maxUploadRetryTime = 60
        storage.maxDownloadRetryTime = 60
    }

    /// The SDK reference for an address.
    func reference(_ address: ObjectAddress) throws -> StorageReference {
        guard let url = URL(string: "gs://\(address.bucket)") else {
            throw ValidationError("invalid bucket name '\(address.bucket)'")
        }
        let root = try storage.reference(for: url)
        return address.path.isEmpty ? root : root.child(address.path)
    }

    /// Runs `body`, translating its failures into actionable messages about `operation` on `address`.
    func run<T: Sendable>(
        _ operation: Operation, _ address: ObjectAddress?, _ body: () async throws -> T
    ) async throws -> T {
        do {
            return try await body()
        } catch {
            throw ErrorMessages.failure(error, operation: operation, address: address, endpoint: endpoint)
        }
    }

    /// `/v0/b/<bucket>/o/<object>` with an optional query.
    static func v0Path(_ address: ObjectAddress, query: String? = nil) -> String {
        var path = "/v0/b/" + V0NameEncoding.encodePathSegment(address.bucket) + "/o"
        if !address.path.isEmpty { path += "/" + V0NameEncoding.encodePathSegment(address.path) }
        if let query { path += "?" + query }
        return path
    }

    /// One request with a small collected response; non-2xx answers become failures about `operation`.
    func send(
        _ method: String, _ pathAndQuery: String, headers: [String: String] = [:],
        body: StorageHTTPRequest.Body = .none, operation: Operation, address: ObjectAddress?
    ) async throws -> (head: StorageHTTPResponseHead, body: Data) {
        let receiver = Collector()
        try await stream(
            method, pathAndQuery, headers: headers, body: body, receiver: receiver, operation: operation,
            address: address)
        let (head, data) = receiver.result
        guard let head else { throw CommandFailure("no response from \(endpoint.base)") }
        guard (200..<300).contains(head.status) else {
            throw ErrorMessages.httpFailure(
                status: head.status, body: data, operation: operation, address: address, endpoint: endpoint)
        }
        return (head, data)
    }

    /// Streams one request's response into `receiver`; connection failures become "cannot reach …".
    func stream(
        _ method: String, _ pathAndQuery: String, headers: [String: String] = [:],
        body: StorageHTTPRequest.Body = .none, receiver: any StorageResponseReceiver, operation: Operation,
        address: ObjectAddress?
    ) async throws {
        guard let url = URL(string: endpoint.base + pathAndQuery) else {
            throw CommandFailure("cannot build a URL from \(endpoint.base + pathAndQuery)")
        }
        var headers = headers
        if let token { headers["Authorization"] = "Firebase \(token)" }
        do {
            try await transport.stream(
                StorageHTTPRequest(method: method, url: url, headers: headers, body: body), timeout: 600,
                receiver: receiver, sent: nil)
        } catch {
            throw ErrorMessages.failure(error, operation: operation, address: address, endpoint: endpoint)
        }
    }

    /// The v0 metadata JSON of an object, as the server sends it (with `downloadTokens`, which the SDK hides).
    func metadataJSON(_ address: ObjectAddress) async throws -> JSONObject {
        let (_, body) = try await send("GET", Self.v0Path(address), operation: .read, address: address)
        guard let object = try? JSONValue.parse(Array(body)).objectValue else {
            throw CommandFailure("the server sent unreadable metadata for \(address)")
        }
        return object
    }
}

/// Keeps a response head and body in memory (up to 16 MiB).
final class Collector: StorageResponseReceiver {
    private let state = Mutex<(StorageHTTPResponseHead?, Data)>((nil, Data()))

    func receive(head: StorageHTTPResponseHead) throws { state.withLock { $0.0 = head } }

    func receive(body chunk: Data) throws {
        try state.withLock {
            guard $0.1.count + chunk.count <= 16 << 20 else { throw CommandFailure("response larger than 16 MiB") }
            $0.1.append(chunk)
        }
    }

    var result: (StorageHTTPResponseHead?, Data) { state.withLock { $0 } }
}
