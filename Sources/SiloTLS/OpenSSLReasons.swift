#if os(Linux)
internal import COpenSSL

/// What OpenSSL queued for a failed call: the call's name and its reason strings, oldest first (at most 8).
public struct OpenSSLReasons: Error, Sendable, CustomStringConvertible {
    public var call: String
    public var reasons: [String]

    public init(call: String, reasons: [String]) {
        self.call = call
        self.reasons = reasons
    }

    public var description: String {
        reasons.isEmpty ? "\(call) failed" : "\(call) failed: \(reasons.joined(separator: "; "))"
    }

    /// Drains this thread's OpenSSL error queue into the reasons of `call`. Draining matters beyond the message:
    /// the queue is per thread, and an entry left behind would be reported against a later, unrelated connection
    /// served by the same thread.
    static func drain(_ call: String) -> OpenSSLReasons {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            guard reasons.count < 8 else { continue }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return OpenSSLReasons(call: call, reasons: reasons)
    }
}
#endif
