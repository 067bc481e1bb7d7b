import Foundation
import SiloStorage

/// `silo url`: an object's download URL (with its download token).
struct URLCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "url", abstract: "Print an object's download URL.",
            options: [ClientOptions.json] + ClientOptions.definitions,
            arguments: [ArgumentDefinition("URL", help: "gs://bucket/path")])
    }

    var address: ObjectAddress
    var json: Bool
    var client: ClientOptions

    init(from values: ParsedValues) throws {
        address = try ObjectAddress(parsing: values.positionals[0])
        json = try values.flag("json")
        client = try ClientOptions(from: values)
    }

    func validate() throws {
        if address.isBucketRoot { throw ValidationError("\(address) names no object") }
    }

    func run(_ context: CommandContext) async throws {
        let connection = ServerConnection(client)
        let reference = try connection.reference(address)
        let url = try await connection.run(.read, address) { try await reference.downloadURL() }
        if json {
            context.stdout.line("{\"url\":\"\(address)\",\"downloadURL\":\"\(url.absoluteString)\"}")
        } else {
            context.stdout.line(url.absoluteString)
        }
    }
}
