public import Foundation
internal import SiloWire

/// The request/response operations (everything but transfers), each implemented once as an async function that
/// throws `StorageError`; the completion-handler and `Result` forms in StorageReference+Callbacks.swift wrap them.
extension StorageReference {
    var operationBudget: TimeInterval { storage.maxOperationRetryTime }

    func fetchMetadata() async throws(StorageError) -> StorageMetadata {
        try requireObject()
        let response = try await storage.perform(method: "GET", path: path, budget: operationBudget)
        return try StorageMetadata.fromServer(response.body)
    }

    func patchMetadata(_ metadata: StorageMetadata) async throws(StorageError) -> StorageMetadata {
        try requireObject()
        let body = Data(metadata.updateJSON().serialized())
        let response = try await storage.perform(
            method: "PATCH", path: path, headers: ["Content-Type": "application/json; charset=UTF-8"], body: body,
            budget: operationBudget)
        return try StorageMetadata.fromServer(response.body)
    }

    func deleteObject() async throws(StorageError) {
        try requireObject()
        _ = try await storage.perform(method: "DELETE", path: path, budget: operationBudget)
    }

    /// Built from the metadata's `bucket`, `name` and first download token, on this instance's host.
    func fetchDownloadURL() async throws(StorageError) -> URL {
        try requireObject()
        let response = try await storage.perform(method: "GET", path: path, budget: operationBudget)
        guard let value = try? JSONValue.parse(response.body), let object = value.objectValue else {
            throw .unknown(
                message: "Invalid data returned from the server: \(String(decoding: response.body, as: UTF8.self))",
                serverError: [:])
        }
        guard let tokens = object["downloadTokens"]?.stringValue,
            let token = tokens.split(separator: ",").first.map(String.init), !token.isEmpty
        else { throw .unknown(message: "Failed to retrieve a download URL.", serverError: [:]) }
        let bucket = object["bucket"]?.stringValue ?? path.bucket
        let name = object["name"]?.stringValue ?? path.object
        let text =
            storage.baseURL + "/v0/b/" + V0NameEncoding.encodePathSegment(bucket) + "/o/"
            + V0NameEncoding.encodePathSegment(name) + "?alt=media&token=" + V0NameEncoding.encodeQueryValue(token)
        guard let url = URL(string: text) else {
            throw .unknown(message: "Failed to retrieve a download URL.", serverError: [:])
        }
        return url
    }

    static let maxResultsMessage = "Argument 'maxResults' must be between 1 and 1000 inclusive."

    static func validate(maxResults: Int64) throws(StorageError) {
        guard (1...1000).contains(maxResults) else { throw .invalidArgument(message: maxResultsMessage) }
    }

    /// One page: `GET …/o?prefix=<fullPath>/&delimiter=/[&maxResults=][&pageToken=]` against the bucket root.
    func listPage(maxResults: Int64?, pageToken: String?) async throws(StorageError) -> StorageListResult {
        if let maxResults { try StorageReference.validate(maxResults: maxResults) }
        var query: [(String, String)] = []
        if !path.isRoot { query.append(("prefix", path.object + "/")) }
        query.append(("delimiter", "/"))
        if let maxResults { query.append(("maxResults", String(maxResults))) }
        if let pageToken { query.append(("pageToken", pageToken)) }
        let response = try await storage.perform(
            method: "GET", path: path.root(), query: query, budget: operationBudget)
        guard let value = try? JSONValue.parse(response.body), let object = value.objectValue else {
            throw .unknown(
                message: "Invalid data returned from the server: \(String(decoding: response.body, as: UTF8.self))",
                serverError: [:])
        }
        let root = self.root()
        let prefixes = (object["prefixes"]?.arrayValue ?? []).compactMap(\.stringValue).map { prefix in
            root.child(prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix)
        }
        let items = (object["items"]?.arrayValue ?? []).compactMap { $0.objectValue?["name"]?.stringValue }.map {
            root.child($0)
        }
        let token = object["nextPageToken"]?.stringValue
        return StorageListResult(prefixes: prefixes, items: items, pageToken: token?.isEmpty == true ? nil : token)
    }

    /// Follows page tokens (server-chosen page size) and returns everything in one result.
    func listEverything() async throws(StorageError) -> StorageListResult {
        var prefixes: [StorageReference] = []
        var items: [StorageReference] = []
        var token: String?
        repeat {
            let page = try await listPage(maxResults: nil, pageToken: token)
            prefixes += page.prefixes
            items += page.items
            token = page.pageToken
        } while token != nil
        return StorageListResult(prefixes: prefixes, items: items, pageToken: nil)
    }

    // MARK: async forms (they honour Task cancellation: a cancelled caller gets StorageError.cancelled promptly)

    public func getMetadata() async throws -> StorageMetadata { try await fetchMetadata() }
    public func updateMetadata(_ metadata: StorageMetadata) async throws -> StorageMetadata {
        try await patchMetadata(metadata)
    }
    public func delete() async throws { try await deleteObject() }
    public func downloadURL() async throws -> URL { try await fetchDownloadURL() }
    public func listAll() async throws -> StorageListResult { try await listEverything() }
    public func list(maxResults: Int64) async throws -> StorageListResult {
        try await listPage(maxResults: maxResults, pageToken: nil)
    }
    public func list(maxResults: Int64, pageToken: String) async throws -> StorageListResult {
        try await listPage(maxResults: maxResults, pageToken: pageToken)
    }
}
