public import SiloCore
import Synchronization

/// Keeps every log entry in memory, for tests that check what the server logs (and what it must never log).
public final class CapturingLogHandler: LogHandler {
    public struct Entry: Sendable {
        public var level: Logger.Level
        public var message: String
        public var metadata: Logger.Metadata
    }

    private let entries = Mutex<[Entry]>([])

    public init() {}

    public func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {
        entries.withLock { $0.append(Entry(level: level, message: message, metadata: metadata)) }
    }

    public var logged: [Entry] { entries.withLock { $0 } }

    /// A logger at `level` that writes here.
    public func logger(level: Logger.Level = .debug) -> Logger {
        Logger(label: "test", level: level, handler: self)
    }
}
