#if os(Linux)
internal import COpenSSL
import Glibc
internal import SiloHashing

/// The bytes of a PEM file, read whole with a bound (a certificate chain or a key is a few KiB; 1 MiB is far more
/// than any real one), so a wrong path (a device, a huge file) cannot make the server read without end. Key bytes
/// are wiped when the value is released.
final class PEMFile {
    static let maxBytes = 1 << 20

    let path: String
    private(set) var bytes: [UInt8]

    /// Reads `path`; `what` names the file in errors ("certificate", "private key").
    init(path: String, what: String) throws {
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw TLSError(.unreadableFile, "cannot open the \(what) file \(path): \(Self.reason(errno))")
        }
        defer { _ = close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw TLSError(.unreadableFile, "cannot stat the \(what) file \(path): \(Self.reason(errno))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw TLSError(.unreadableFile, "the \(what) file \(path) is not a regular file")
        }
        guard info.st_size <= Self.maxBytes else {
            throw TLSError(
                .unreadableFile, "the \(what) file \(path) is \(info.st_size) bytes, more than \(Self.maxBytes)")
        }
        var buffer = [UInt8](repeating: 0, count: Int(info.st_size) + 1)
        var filled = 0
        while filled < buffer.count {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw TLSError(.unreadableFile, "cannot read the \(what) file \(path): \(Self.reason(errno))")
            }
            if count == 0 { break }
            filled += count
        }
        // One byte more than fstat said fits only if the file grew meanwhile: still bounded, but refused.
        guard filled <= Self.maxBytes, filled < buffer.count else {
            throw TLSError(.unreadableFile, "the \(what) file \(path) grew beyond \(Self.maxBytes) bytes while read")
        }
        guard filled > 0 else { throw TLSError(.unreadableFile, "the \(what) file \(path) is empty") }
        buffer.removeSubrange(filled...)
        bytes = buffer
    }

    /// A read-only memory BIO over the bytes, for the PEM readers; freed by the caller with BIO_free.
    func withBIO<Result>(_ body: (OpaquePointer) throws -> Result) throws -> Result {
        try bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
                throw TLSError(.setupFailed, "cannot read \(path)", cause: CryptoError.fromQueue("BIO_new_mem_buf"))
            }
            defer { BIO_free(bio) }
            return try body(bio)
        }
    }

    deinit {
        let count = bytes.count
        bytes.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, count) }
    }

    private static func reason(_ code: Int32) -> String { String(cString: strerror(code)).lowercased() }
}
@available(*, unavailable) extension PEMFile: Sendable {}
#endif
