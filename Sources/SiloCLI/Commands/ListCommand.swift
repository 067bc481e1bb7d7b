import SiloStorage
import SiloWire

/// `silo ls`: the objects and folders under a prefix.
struct ListCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "ls", abstract: "List objects and folders under gs://bucket/prefix.",
            options: [
                .flag("long", short: "l", help: "show size, update time and content type"),
                .flag("recursive", short: "r", help: "list every object below the prefix"),
                ClientOptions.json,
            ] + ClientOptions.definitions,
            arguments: [ArgumentDefinition("URL", help: "gs://bucket or gs://bucket/prefix")])
    }

    var address: ObjectAddress
    var long: Bool
    var recursive: Bool
    var json: Bool
    var client: ClientOptions

    init(from values: ParsedValues) throws {
        address = try ObjectAddress(parsing: values.positionals[0])
        long = try values.flag("long")
        recursive = try values.flag("recursive")
        json = try values.flag("json")
        client = try ClientOptions(from: values)
    }

    func run(_ context: CommandContext) async throws {
        let connection = ServerConnection(client)
        let folder = try connection.reference(ObjectAddress(bucket: address.bucket, path: address.folderPrefix))
        var items: [StorageReference]
        var prefixes: [StorageReference] = []
        if recursive {
            items = try await Listing.all(under: folder, connection: connection, address: address)
        } else {
            let page = try await connection.run(.list, address) { try await folder.listAll() }
            items = page.items
            prefixes = page.prefixes
        }
        if items.isEmpty && prefixes.isEmpty && !address.isFolder {
            // `ls gs://b/file` lists that one object.
            let object = try connection.reference(address)
            let found = try? await connection.run(.read, address) { try await object.getMetadata() }
            guard found != nil else { throw CommandFailure("no objects match \(address)") }
            items = [object]
        }
        var entries: [(address: ObjectAddress, metadata: StorageMetadata?)] = []
        for item in items {
            let itemAddress = ObjectAddress(bucket: item.bucket, path: item.fullPath)
            let metadata = long ? try await connection.run(.read, itemAddress) { try await item.getMetadata() } : nil
            entries.append((itemAddress, metadata))
        }
        let folders = prefixes.map { ObjectAddress(bucket: $0.bucket, path: $0.fullPath + "/") }
        if json {
            var array: [JSONValue] = folders.map { .object(["url": .string("\($0)"), "type": .string("folder")]) }
            for entry in entries {
                if let metadata = entry.metadata {
                    guard case .object(var object) = MetadataFormatting.json(metadata, address: entry.address) else {
                        continue
                    }
                    object["type"] = .string("object")
                    array.append(.object(object))
                } else {
                    array.append(.object(["url": .string("\(entry.address)"), "type": .string("object")]))
                }
            }
            context.stdout.line(JSONValue.array(array).serializedString)
            return
        }
        for folder in folders {
            context.stdout.line(long ? String(repeating: " ", count: 12) + "  \(folder)" : "\(folder)")
        }
        var totalBytes: Int64 = 0
        for entry in entries {
            guard let metadata = entry.metadata else {
                context.stdout.line("\(entry.address)")
                continue
            }
            totalBytes += metadata.size
            let size = String(metadata.size)
            let padded = String(repeating: " ", count: max(0, 12 - size.count)) + size
            context.stdout.line(
                "\(padded)  \(MetadataFormatting.timestamp(metadata.updated))  \(metadata.contentType ?? "-")  \(entry.address)"
            )
        }
        if long {
            context.stdout.line(
                "TOTAL: \(entries.count) objects, \(totalBytes) bytes (\(ProgressBar.bytes(totalBytes)))")
        }
    }
}
