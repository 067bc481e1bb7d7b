/// A small logger facade shaped like swift-log (which cannot be fetched here). Libraries take a `Logger` and never
/// make one; messages are static and details go in metadata under the `silo.` prefix.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CustomStringConvertible {
        case trace, debug, info, notice, warning, error, critical
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var description: String {
            ["trace", "debug", "info", "notice", "warning", "error", "critical"][rawValue]
        }
    }
    public typealias Metadata = [String: String]

    public let label: String
    public var level: Level
    public var metadata: Metadata
    private let handler: any LogHandler

    public init(label: String, level: Level = .info, handler: any LogHandler = StderrLogHandler()) {
        self.label = label
        self.level = level
        self.metadata = [:]
        self.handler = handler
    }

    /// A logger that discards everything.
    public static let disabled = Logger(label: "disabled", level: .critical, handler: NullLogHandler())

    public func log(
        _ level: Level, _ message: @autoclosure () -> String, metadata extra: @autoclosure () -> Metadata = [:]
    ) {
        guard level >= self.level else { return }
        var all = metadata
        for (k, v) in extra() { all[k] = v }
        handler.log(level: level, label: label, message: message(), metadata: all)
    }

    public func trace(_ m: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) {
        log(.trace, m(), metadata: metadata())
    }
    public func debug(_ m: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) {
        log(.debug, m(), metadata: metadata())
    }
    public func info(_ m: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) {
        log(.info, m(), metadata: metadata())
    }
    public func notice(_ m: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) {
        log(.notice, m(), metadata: metadata())
    }
    public func warning(_ m: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) {
        log(.warning, m(), metadata: metadata())
    }
    public func error(_ m: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:]) {
        log(.error, m(), metadata: metadata())
    }
}

public protocol LogHandler: Sendable {
    func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata)
}

public struct NullLogHandler: LogHandler {
    public init() {}
    public func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {}
}

/// Writes one line per message to standard error: `time level label: message key=value ...`.
public struct StderrLogHandler: LogHandler {
    public init() {}
    public func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {
        var line = "\(Timestamp.now().rfc3339) \(level) \(label): \(message)"
        for key in metadata.keys.sorted() { line += " \(key)=\(metadata[key]!)" }
        line += "\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { _ = write(2, $0.baseAddress, $0.count) }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
