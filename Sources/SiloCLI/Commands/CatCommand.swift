/// `silo cat`: an object's bytes on stdout.
struct CatCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "cat", abstract: "Write an object's bytes to stdout.",
            options: [
                .value(
                    "range", valueName: "A-B",
                    help: "only bytes A to B inclusive ('A-' to the end, '-N' the last N bytes)")
            ] + ClientOptions.definitions,
            arguments: [ArgumentDefinition("URL", help: "gs://bucket/path", repeating: true)])
    }

    var addresses: [ObjectAddress]
    var range: String?
    var client: ClientOptions

    init(from values: ParsedValues) throws {
        addresses = try values.positionals.map(ObjectAddress.init(parsing:))
        range = values.value("range")
        client = try ClientOptions(from: values)
    }

    func validate() throws {
        if let range {
            let parts = range.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            let valid =
                parts.count == 2 && !(parts[0].isEmpty && parts[1].isEmpty)
                && parts.allSatisfy { $0.isEmpty || UInt64($0) != nil }
                && (parts[0].isEmpty || parts[1].isEmpty || UInt64(parts[0])! <= UInt64(parts[1])!)
            guard valid else { throw ValidationError("--range must be A-B, A- or -N with A ≤ B, not '\(range)'") }
        }
        if let root = addresses.first(where: \.isBucketRoot) { throw ValidationError("\(root) names no object") }
    }

    func run(_ context: CommandContext) async throws {
        let connection = ServerConnection(client)
        for address in addresses {
            let receiver = MediaReceiver(target: .sink(context.stdout))
            try await connection.stream(
                "GET", ServerConnection.v0Path(address, query: "alt=media"),
                headers: range.map { ["Range": "bytes=\($0)"] } ?? [:], receiver: receiver, operation: .read,
                address: address)
            guard (200..<300).contains(receiver.status) else {
                throw ErrorMessages.httpFailure(
                    status: receiver.status, body: receiver.errorBody, operation: .read, address: address,
                    endpoint: connection.endpoint)
            }
        }
    }
}
