import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a command writes: a file descriptor in the `silo` binary, a buffer in tests.
public protocol OutputSink: Sendable {
    func write(_ bytes: [UInt8])
    /// Whether this is a terminal, which turns progress bars on.
    var isTerminal: Bool { get }
}

extension OutputSink {
    public func write(_ text: String) { write(Array(text.utf8)) }
    func line(_ text: String) { write(text + "\n") }
}

/// Writes to a file descriptor (1 or 2), retrying short writes and EINTR. A closed pipe (EPIPE) ends writing
/// quietly.
public struct FileDescriptorSink: OutputSink {
    public let descriptor: Int32
    public let isTerminal: Bool

    public init(descriptor: Int32) {
        self.descriptor = descriptor
        self.isTerminal = isatty(descriptor) == 1
    }

    public static let standardOutput = FileDescriptorSink(descriptor: 1)
    public static let standardError = FileDescriptorSink(descriptor: 2)

    public func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = systemWrite(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}

#if canImport(Glibc)
private let systemWrite = Glibc.write
#else
private let systemWrite = Darwin.write
#endif

/// Collects output in memory (tests).
public final class OutputBuffer: OutputSink {
    private let bytes = Mutex<[UInt8]>([])
    public let isTerminal: Bool

    public init(isTerminal: Bool = false) { self.isTerminal = isTerminal }

    public func write(_ bytes: [UInt8]) { self.bytes.withLock { $0 += bytes } }

    public var data: [UInt8] { bytes.withLock { $0 } }
    public var text: String { String(decoding: data, as: UTF8.self) }
}
