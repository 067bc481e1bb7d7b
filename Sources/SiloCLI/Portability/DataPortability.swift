/// Import and export for `silo serve --import DIR --export-on-exit`: the serve command calls these against its own
/// listener (after it is up, and on SIGINT/SIGTERM before it stops), with the admin credential so rules do not
/// apply.
public enum DataPortability {
    /// Loads the emulator export at `directory` into the server at `endpoint` (`http://host:port`). Returns a
    /// one-line summary; warnings about skipped entries go to `log`.
    public static func importExport(
        from directory: String, endpoint: String, token: String? = "owner", log: any OutputSink
    ) async throws -> String {
        let connection = ServerConnection(try ClientOptions(endpoint: endpoint, token: token))
        let summary = try await Importer(connection: connection, log: log).importExport(from: directory)
        return "imported \(summary.objects) objects from \(directory)"
            + (summary.skipped > 0 ? " (skipped \(summary.skipped))" : "")
    }

    /// Writes every bucket of the server at `endpoint` to `directory` in the emulator's layout. Returns a one-line
    /// summary.
    public static func export(
        to directory: String, endpoint: String, token: String? = "owner", log: any OutputSink
    ) async throws -> String {
        let connection = ServerConnection(try ClientOptions(endpoint: endpoint, token: token))
        let summary = try await Exporter(connection: connection, log: log).export(to: directory, buckets: [])
        return "exported \(summary.objects) objects from \(summary.buckets) buckets to \(directory)"
    }

    /// Whether `directory` holds an emulator export to import (false for a missing or empty directory).
    public static func holdsExport(_ directory: String) -> Bool {
        (try? EmulatorExportLayout.storageDirectory(of: directory)) != nil
    }

    /// The one-line message for an error from these functions (never a type dump).
    public static func describe(_ error: any Error) -> String {
        if let failure = error as? CommandFailure { return failure.message }
        if let validation = error as? ValidationError { return validation.message }
        return ErrorMessages.describe(error)
    }
}

extension ClientOptions {
    init(endpoint: String, token: String?) throws {
        self.endpoint = try Endpoint(parsing: endpoint)
        self.token = token
    }
}
