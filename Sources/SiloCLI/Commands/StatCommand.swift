import SiloStorage
import SiloWire

/// `silo stat`: one object's metadata.
struct StatCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "stat", abstract: "Show an object's metadata.",
            options: [ClientOptions.json] + ClientOptions.definitions,
            arguments: [ArgumentDefinition("URL", help: "gs://bucket/path", repeating: true)])
    }

    var addresses: [ObjectAddress]
    var json: Bool
    var client: ClientOptions

    init(from values: ParsedValues) throws {
        addresses = try values.positionals.map(ObjectAddress.init(parsing:))
        json = try values.flag("json")
        client = try ClientOptions(from: values)
    }

    func validate() throws {
        if let root = addresses.first(where: \.isBucketRoot) { throw ValidationError("\(root) names no object") }
    }

    func run(_ context: CommandContext) async throws {
        let connection = ServerConnection(client)
        var results: [JSONValue] = []
        for address in addresses {
            let reference = try connection.reference(address)
            let metadata = try await connection.run(.read, address) { try await reference.getMetadata() }
            if json {
                results.append(MetadataFormatting.json(metadata, address: address))
            } else {
                context.stdout.write(MetadataFormatting.text(metadata, address: address))
            }
        }
        if json { context.stdout.line((results.count == 1 ? results[0] : .array(results)).serializedString) }
    }
}
