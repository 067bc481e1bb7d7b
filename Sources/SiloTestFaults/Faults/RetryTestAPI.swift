import SiloCore
import SiloHTTP
import SiloServerKit
import SiloWire

/// storage-testbench's Retry Test API: `POST /retry_test` creates a test from `{"instructions": {operation:
/// [instruction, …]}, "transport": "HTTP"}`, `GET /retry_test/{id}` shows it (`completed` once every instruction was
/// consumed), `GET /retry_tests` lists them, `DELETE /retry_test/{id}` removes one. Shapes as the testbench answers.
struct RetryTestAPI {
    let registry: RetryTestRegistry
    let maxBodyBytes: Int
    /// The operations a test may name: those the server's APIs name (``RouteGroup/operationIDs``).
    let operations: Set<String>

    /// Whether the path is this API's.
    static func handles(_ head: HTTPRequestHead) -> Bool {
        let path = head.rawPath
        return path == "/retry_tests" || path == "/retry_test" || path.hasPrefix("/retry_test/")
    }

    /// Nil for paths that are not this API's.
    func handle(_ head: HTTPRequestHead) -> RequestDisposition? {
        let path = head.rawPath
        if path == "/retry_tests" {
            guard head.method == "GET" else { return .respond(notAllowed(head)) }
            return .respond(Reply.json(200, .object(["retry_test": .array(registry.all().map(\.json))])))
        }
        if path == "/retry_test" {
            guard head.method == "POST" else { return .respond(notAllowed(head)) }
            return .readBody(
                CollectingSink(limit: maxBodyBytes, refuse: { Reply.gcsError($0) }) { body in
                    do {
                        return Reply.json(200, try registry.create(try Self.parse(body, operations)).json)
                    } catch {
                        return Reply.gcsError(error)
                    }
                })
        }
        guard path.hasPrefix("/retry_test/") else { return nil }
        let id = String(path.dropFirst("/retry_test/".count))
        guard Self.isTestID(id), let test = registry.test(id) else {
            return .respond(Reply.gcsError(StorageError(.notFound, "Retry Test \(id.prefix(64)) not found")))
        }
        switch head.method {
        case "GET": return .respond(Reply.json(200, test.json))
        case "DELETE":
            _ = registry.delete(id)
            return .respond(Reply.text(200, "Deleted \(id)"))
        default: return .respond(notAllowed(head))
        }
    }

    /// Ids are what the registry makes: 32 lowercase hex digits.
    static func isTestID(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// The creation body: every operation a name the server knows, every instruction a supported one that applies
    /// to it; `transport` HTTP (the default), since Silo serves no gRPC.
    static func parse(_ body: [UInt8], _ operations: Set<String>) throws
        -> [(operation: String, pending: [FaultInstruction])]
    {
        let json: JSONValue
        do { json = try JSONValue.parse(body) } catch {
            throw StorageError(.invalidArgument, "the retry test is not valid JSON", cause: error)
        }
        guard let object = json.objectValue else { throw StorageError(.invalidArgument, "the retry test is no object") }
        if let transport = object["transport"] {
            guard let text = transport.stringValue, text.uppercased() == "HTTP" else {
                throw StorageError(
                    .invalidArgument, "transport must be HTTP: this server serves the JSON and XML APIs, not gRPC")
            }
        }
        guard let byOperation = object["instructions"]?.objectValue, !byOperation.members.isEmpty else {
            throw StorageError(.invalidArgument, "instructions is not defined")
        }
        return try byOperation.members.map { entry in
            guard operations.contains(entry.key) else {
                throw StorageError(
                    .invalidArgument, "The requested method <\(entry.key.prefix(100))> for fault injection is unknown")
            }
            guard let list = entry.value.arrayValue else {
                throw StorageError(.invalidArgument, "the instructions of \(entry.key) are not a list")
            }
            let pending = try list.map { item -> FaultInstruction in
                guard let text = item.stringValue else {
                    throw StorageError(.invalidArgument, "an instruction of \(entry.key) is not a string")
                }
                let instruction = try FaultInstruction(text)
                guard instruction.applies(to: entry.key) else {
                    throw StorageError(
                        .invalidArgument, "\(text) applies to \(OperationName.objectsInsert) (uploads) only")
                }
                return instruction
            }
            return (entry.key, pending)
        }
    }

    private func notAllowed(_ head: HTTPRequestHead) -> HTTPResponse {
        Reply.gcsError(StorageError(.invalidArgument, "\(head.method.prefix(20)) is not supported on \(head.rawPath)"))
    }
}
