internal import CZlib
internal import SiloCore

/// A zlib return code and message, carried as the `cause` of the ``StorageError`` the gzip streams throw.
public struct ZlibError: Error, Sendable, CustomStringConvertible {
    public var call: String
    public var code: Int32
    public var message: String

    public var description: String { "\(call) returned \(code): \(message)" }
}

extension ZlibError {
    init(_ call: String, _ code: Int32, _ stream: UnsafeMutablePointer<z_stream>) {
        self.call = call
        self.code = code
        self.message = stream.pointee.msg.map { String(cString: $0) } ?? "no message"
    }

    /// Data errors are the caller's bad input; anything else is our bug or memory exhaustion.
    func storageError(_ what: String) -> StorageError {
        switch code {
        case Z_DATA_ERROR, Z_NEED_DICT:
            StorageError(.invalidArgument, "\(what): the data is not valid gzip (\(message))", cause: self)
        default:
            StorageError(.internalError, "\(what): zlib failed", cause: self)
        }
    }
}
