import SiloStorage

/// `silo rm`: delete objects; `-r` deletes everything below a prefix.
struct RemoveCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "rm", abstract: "Delete objects.",
            options: [.flag("recursive", short: "r", help: "delete every object below the prefix")]
                + ClientOptions.definitions,
            arguments: [ArgumentDefinition("URL", help: "gs://bucket/path", repeating: true)])
    }

    var addresses: [ObjectAddress]
    var recursive: Bool
    var client: ClientOptions

    init(from values: ParsedValues) throws {
        addresses = try values.positionals.map(ObjectAddress.init(parsing:))
        recursive = try values.flag("recursive")
        client = try ClientOptions(from: values)
    }

    func validate() throws {
        if !recursive, let root = addresses.first(where: \.isFolder) {
            throw ValidationError("\(root) is a folder; use rm -r")
        }
    }

    func run(_ context: CommandContext) async throws {
        let connection = ServerConnection(client)
        for address in addresses {
            var targets: [ObjectAddress] = []
            if recursive {
                let folder = try connection.reference(ObjectAddress(bucket: address.bucket, path: address.folderPrefix))
                let items = try await Listing.all(under: folder, connection: connection, address: address)
                targets = items.map { ObjectAddress(bucket: $0.bucket, path: $0.fullPath) }
            }
            if !address.isFolder {
                let object = try connection.reference(address)
                let exists = (try? await connection.run(.read, address) { try await object.getMetadata() }) != nil
                if exists || targets.isEmpty { targets.insert(address, at: 0) }
                if !exists && !recursive {
                    let folder = try connection.reference(
                        ObjectAddress(bucket: address.bucket, path: address.folderPrefix))
                    let children = try? await connection.run(.list, address) { try await folder.list(maxResults: 1) }
                    if let children, !(children.items.isEmpty && children.prefixes.isEmpty) {
                        throw CommandFailure("\(address) is a folder; use rm -r")
                    }
                }
            } else if targets.isEmpty {
                throw CommandFailure("no objects under \(address)")
            }
            for target in targets {
                let reference = try connection.reference(target)
                try await connection.run(.delete, target) { try await reference.delete() }
            }
        }
    }
}
