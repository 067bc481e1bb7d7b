import Foundation
import SiloStorage
import SiloWire

/// `silo meta`: change an object's metadata.
struct MetaCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "meta", abstract: "Change an object's metadata.",
            subcommands: [MetaSetCommand.self, MetaUnsetCommand.self])
    }

    init(from values: ParsedValues) throws {}
}

/// `silo meta set gs://b/x k=v … [--content-type T] [--cache-control C]`.
struct MetaSetCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "set", abstract: "Set custom metadata keys and standard fields.",
            options: [
                .value("content-type", valueName: "TYPE", help: "set the content type"),
                .value("cache-control", valueName: "VALUE", help: "set Cache-Control"),
            ] + ClientOptions.definitions,
            arguments: [
                ArgumentDefinition("URL", help: "gs://bucket/path"),
                ArgumentDefinition("KEY=VALUE", help: "custom metadata to set", optional: true, repeating: true),
            ])
    }

    var address: ObjectAddress
    var pairs: [(String, String)]
    var contentType: String?
    var cacheControl: String?
    var client: ClientOptions

    init(from values: ParsedValues) throws {
        address = try ObjectAddress(parsing: values.positionals[0])
        pairs = try KeyValue.parse(Array(values.positionals.dropFirst()), option: "meta set").sorted { $0.key < $1.key }
            .map { ($0.key, $0.value) }
        contentType = values.value("content-type")
        cacheControl = values.value("cache-control")
        client = try ClientOptions(from: values)
    }

    func validate() throws {
        if pairs.isEmpty && contentType == nil && cacheControl == nil {
            throw ValidationError("nothing to set: give KEY=VALUE pairs, --content-type or --cache-control")
        }
        if address.isBucketRoot { throw ValidationError("\(address) names no object") }
    }

    func run(_ context: CommandContext) async throws {
        var body = JSONObject()
        if let contentType { body["contentType"] = .string(contentType) }
        if let cacheControl { body["cacheControl"] = .string(cacheControl) }
        if !pairs.isEmpty {
            var custom = JSONObject()
            for (key, value) in pairs { custom[key] = .string(value) }
            body["metadata"] = .object(custom)
        }
        try await MetadataPatch.send(body, to: address, client: client)
    }
}

/// `silo meta unset gs://b/x k … [--content-type] [--cache-control]`.
struct MetaUnsetCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "unset", abstract: "Remove custom metadata keys and standard fields.",
            options: [
                .flag("content-type", help: "remove the content type"),
                .flag("cache-control", help: "remove Cache-Control"),
            ] + ClientOptions.definitions,
            arguments: [
                ArgumentDefinition("URL", help: "gs://bucket/path"),
                ArgumentDefinition("KEY", help: "custom metadata keys to remove", optional: true, repeating: true),
            ])
    }

    var address: ObjectAddress
    var keys: [String]
    var contentType: Bool
    var cacheControl: Bool
    var client: ClientOptions

    init(from values: ParsedValues) throws {
        address = try ObjectAddress(parsing: values.positionals[0])
        keys = Array(values.positionals.dropFirst())
        contentType = try values.flag("content-type")
        cacheControl = try values.flag("cache-control")
        client = try ClientOptions(from: values)
    }

    func validate() throws {
        if keys.isEmpty && !contentType && !cacheControl {
            throw ValidationError("nothing to unset: give KEYs, --content-type or --cache-control")
        }
        if address.isBucketRoot { throw ValidationError("\(address) names no object") }
    }

    func run(_ context: CommandContext) async throws {
        var body = JSONObject()
        if contentType { body["contentType"] = .null }
        if cacheControl { body["cacheControl"] = .null }
        if !keys.isEmpty {
            var custom = JSONObject()
            for key in keys { custom[key] = .null }
            body["metadata"] = .object(custom)
        }
        try await MetadataPatch.send(body, to: address, client: client)
    }
}

/// A v0 `PATCH` of the metadata: absent keys stay, `null` removes, `metadata` merges per key.
enum MetadataPatch {
    static func send(_ body: JSONObject, to address: ObjectAddress, client: ClientOptions) async throws {
        let connection = ServerConnection(client)
        _ = try await connection.send(
            "PATCH", ServerConnection.v0Path(address), headers: ["Content-Type": "application/json; charset=utf-8"],
            body: .data(Data(JSONValue.object(body).serialized())), operation: .update, address: address)
    }
}
