/// `silo export DIR`: a running server's objects in the Firebase emulator's export layout.
struct ExportCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "export", abstract: "Export a running server's objects in the Firebase emulator's export layout.",
            discussion: """
                Writes DIR/firebase-export-metadata.json and DIR/storage_export/{buckets.json,blobs/,metadata/} as
                'firebase emulators:export' does, so 'firebase emulators:start --import DIR' and 'silo import DIR'
                read it. The export is built in a temporary directory and renamed over DIR at the end.
                """,
            options: [.repeating("bucket", valueName: "NAME", help: "export only this bucket (default: every bucket)")]
                + ClientOptions.definitions,
            arguments: [ArgumentDefinition("DIR", help: "the export directory")])
    }

    var directory: String
    var buckets: [String]
    var client: ClientOptions

    init(from values: ParsedValues) throws {
        directory = values.positionals[0]
        buckets = values.values("bucket")
        client = try ClientOptions(from: values)
    }

    func run(_ context: CommandContext) async throws {
        let exporter = Exporter(connection: ServerConnection(client), log: context.stderr)
        let summary = try await exporter.export(to: directory, buckets: buckets)
        context.stdout.line(
            "exported \(summary.objects) objects (\(ProgressBar.bytes(summary.bytes))) from \(summary.buckets) buckets to \(directory)"
        )
    }
}

/// `silo import DIR`: load a Firebase emulator export into a running server.
struct ImportCommand: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            name: "import", abstract: "Load a Firebase emulator export (or a Silo export) into a running server.",
            discussion: """
                Reads DIR/firebase-export-metadata.json (or DIR/storage_export, or DIR itself when it holds
                metadata/) and uploads every object with its metadata and download tokens. Metadata whose blob is
                missing is skipped with a warning.
                """,
            options: ClientOptions.definitions,
            arguments: [ArgumentDefinition("DIR", help: "the export directory")])
    }

    var directory: String
    var client: ClientOptions

    init(from values: ParsedValues) throws {
        directory = values.positionals[0]
        client = try ClientOptions(from: values)
    }

    func run(_ context: CommandContext) async throws {
        let importer = Importer(connection: ServerConnection(client), log: context.stderr)
        let summary = try await importer.importExport(from: directory)
        var line = "imported \(summary.objects) objects (\(ProgressBar.bytes(summary.bytes))) from \(directory)"
        if summary.skipped > 0 { line += "; skipped \(summary.skipped)" }
        context.stdout.line(line)
    }
}
