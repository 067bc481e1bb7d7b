import Foundation
import SiloCore
import SiloEvents

/// `silo serve`'s storage events: the dispatcher for `--event-webhook`, started once the listener is up.
enum ServeEvents {
    /// The secret's bounds: short keys are guessable, and a key file past 4 KiB is not a key.
    static let secretBytes = 16...4096

    /// Nil without `--event-webhook` (the store then records no events either).
    static func start(_ options: ServeOptions, metadata: any MetadataStore, port: Int, logger: Logger) throws
        -> EventDispatcher?
    {
        guard !options.eventWebhooks.isEmpty, let path = options.eventSecretFile else { return nil }
        var configuration = EventDispatcher.Configuration()
        configuration.targets = options.eventWebhooks
        configuration.secret = try secret(path)
        configuration.timeout = .seconds(options.eventTimeoutSeconds)
        configuration.concurrency = options.eventConcurrency
        configuration.retention = .seconds(options.eventRetentionSeconds)
        let host = options.host.contains(":") ? "[\(options.host)]" : options.host
        configuration.base = "http://\(host == "0.0.0.0" ? "127.0.0.1" : host):\(port)"
        let dispatcher = EventDispatcher(store: metadata, configuration: configuration, logger: logger)
        dispatcher.start()
        return dispatcher
    }

    static func describe(_ options: ServeOptions) -> String {
        options.eventWebhooks.isEmpty
            ? "none" : "\(options.eventWebhooks.count) webhook(s), \(options.eventConcurrency) at a time"
    }

    /// The file's bytes without a trailing newline (as `echo … > file` leaves one).
    private static func secret(_ path: String) throws -> [UInt8] {
        // Read no more than a key can hold (plus its newline and one byte to tell it is too long).
        guard let file = FileHandle(forReadingAtPath: path) else {
            throw StorageError(.notFound, "cannot read --event-secret-file \(path)")
        }
        defer { try? file.close() }
        var bytes = [UInt8](file.readData(ofLength: secretBytes.upperBound + 3))
        while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
        guard secretBytes.contains(bytes.count) else {
            throw StorageError(
                .invalidArgument,
                "--event-secret-file \(path) must hold \(secretBytes.lowerBound) to \(secretBytes.upperBound) bytes")
        }
        return bytes
    }
}
