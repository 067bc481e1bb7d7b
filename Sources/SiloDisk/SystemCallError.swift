#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed syscall: which call, on which path, and the errno it left. The `cause` of SiloDisk's StorageErrors.
public struct SystemCallError: Error, Sendable, CustomStringConvertible {
    public var call: String
    public var path: String
    public var errno: Int32

    public init(call: String, path: String, errno: Int32) {
        self.call = call
        self.path = path
        self.errno = errno
    }

    public var description: String { "\(call)(\(path)): \(String(cString: strerror(errno))) (errno \(errno))" }
}
