#if os(Linux)
internal import COpenSSL
import Glibc

/// What the log says about a loaded certificate: enough to tell which one is being served after a reload.
public struct TLSCertificateSummary: Sendable, Equatable, CustomStringConvertible {
    /// The subject as OpenSSL prints it on one line (`/CN=localhost`).
    public var subject: String
    /// The serial number in upper-case hex, as `openssl x509 -serial` prints it.
    public var serialNumber: String
    /// The end of validity, in seconds since 1970.
    public var notAfter: Int

    public var description: String { "\(subject) serial \(serialNumber)" }

    /// Reads the fields of `certificate` (an `X509 *`).
    init(_ certificate: OpaquePointer) {
        var name = [CChar](repeating: 0, count: 512)
        if let subjectName = X509_get_subject_name(certificate) {
            _ = X509_NAME_oneline(subjectName, &name, Int32(name.count))
        }
        subject = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        serialNumber = ""
        if let serial = X509_get_serialNumber(certificate), let number = ASN1_INTEGER_to_BN(serial, nil) {
            if let hex = BN_bn2hex(number) {
                serialNumber = String(cString: hex)
                CRYPTO_free(hex, #fileID, #line)
            }
            BN_free(number)
        }
        var time = tm()
        notAfter = 0
        if let end = X509_get0_notAfter(certificate), ASN1_TIME_to_tm(end, &time) == 1 {
            notAfter = timegm(&time)
        }
    }
}
#endif
