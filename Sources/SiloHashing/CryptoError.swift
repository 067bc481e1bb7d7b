internal import CCrypto

/// A libcrypto call that failed, with the reasons OpenSSL queued for it.
///
/// Carried as the `cause` of higher-level errors (key files that do not parse, keys that are too small). It holds
/// OpenSSL's reason strings and the name of the call, never key material or the data being verified.
public struct CryptoError: Error, Sendable, CustomStringConvertible {
    /// The libcrypto function (or our own check) that failed.
    public var call: String
    /// OpenSSL's queued reasons, oldest first, or our own explanation.
    public var reasons: [String]

    public init(call: String, reasons: [String]) {
        self.call = call
        self.reasons = reasons
    }

    public var description: String {
        reasons.isEmpty ? "\(call) failed" : "\(call) failed: \(reasons.joined(separator: "; "))"
    }

    /// Drains this thread's OpenSSL error queue into an error naming `call`.
    ///
    /// Draining matters beyond the message: the queue is per thread, and a stale entry left behind would be
    /// reported against some later, unrelated call on the same thread.
    public static func fromQueue(_ call: String) -> CryptoError {
        CryptoError(call: call, reasons: drainErrorQueue())
    }
}

/// Empties this thread's OpenSSL error queue, returning the reasons (at most a handful are kept).
func drainErrorQueue() -> [String] {
    var reasons: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        guard reasons.count < 8 else { continue }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return reasons
}
