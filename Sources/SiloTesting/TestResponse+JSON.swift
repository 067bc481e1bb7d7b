import SiloCore
public import SiloHTTP
public import SiloWire

extension TestResponse {
    /// The body as a JSON object; throws when it is not one.
    public func json() throws -> JSONObject {
        guard case .object(let o) = try JSONValue.parse(body) else {
            throw StorageError(.invalidArgument, "not a JSON object: \(text.prefix(500))")
        }
        return o
    }

    public func string(_ key: String) throws -> String? { try json()[key]?.stringValue }

    /// `error.code` of a JSON error body (both APIs' shapes), if there is one.
    public var errorCode: Int? { (try? json())?["error"]?.objectValue?["code"]?.int64Value.map(Int.init) }
}

extension HTTPTestClient {
    public func get(_ target: String, headers: HTTPHeaders = [:]) throws -> TestResponse {
        try send(method: "GET", target: target, headers: headers)
    }
}
