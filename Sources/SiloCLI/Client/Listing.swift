import SiloStorage

/// Recursive listing through the SDK.
enum Listing {
    /// Every object at or below the folder `root`, sorted by name.
    static func all(under root: StorageReference, connection: ServerConnection, address: ObjectAddress) async throws
        -> [StorageReference]
    {
        var result: [StorageReference] = []
        var pending = [root]
        while let folder = pending.popLast() {
            let page = try await connection.run(.list, address) { try await folder.listAll() }
            result += page.items
            pending += page.prefixes
        }
        return result.sorted { $0.fullPath < $1.fullPath }
    }
}
