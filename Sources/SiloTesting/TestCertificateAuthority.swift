import Foundation
import SiloCore

/// A throwaway certificate authority for TLS tests, made with the `openssl` command line in a temporary directory:
/// a CA certificate clients are told to trust, and server certificates it signs for `localhost` and `127.0.0.1`
/// with a chosen serial number (so a test can tell which certificate a connection saw).
public final class TestCertificateAuthority: Sendable {
    /// The key algorithm of the CA and of the certificates it issues.
    public enum KeyType: Sendable {
        /// ECDSA on P-256.
        case ecdsa
        /// RSA, 2048 bits.
        case rsa
    }

    /// A server certificate and its key, both PEM files.
    public struct Issued: Sendable {
        public let certificateFile: String
        public let privateKeyFile: String
        /// The serial number in upper-case hex, as `openssl x509 -serial` (and `TLSCertificateSummary`) print it.
        public let serialNumber: String
    }

    public let directory: TemporaryDirectory
    public let keyType: KeyType
    /// The CA certificate (PEM): what clients trust.
    public let certificateFile: String
    private let keyFile: String

    public init(keyType: KeyType = .ecdsa) throws {
        directory = try TemporaryDirectory()
        self.keyType = keyType
        certificateFile = directory.path + "/ca.crt"
        keyFile = directory.path + "/ca.key"
        try Self.openssl(
            [
                "req", "-x509", "-nodes", "-days", "2", "-subj", "/CN=Silo test CA", "-keyout", keyFile, "-out",
                certificateFile,
            ] + Self.newKey(keyType))
    }

    /// Signs a new server certificate named `name` (its files are `name.crt` and `name.key`), valid for `days` days
    /// from now (a negative number makes one that has already expired).
    public func issue(
        _ name: String = "server", serial: UInt64, days: Int = 2, hosts: [String] = ["localhost", "127.0.0.1"]
    ) throws -> Issued {
        let base = directory.path + "/" + name
        let names = hosts.map { $0.allSatisfy { $0.isNumber || $0 == "." || $0 == ":" } ? "IP:\($0)" : "DNS:\($0)" }
        try "subjectAltName=\(names.joined(separator: ","))\nbasicConstraints=CA:FALSE\n"
            .write(toFile: base + ".ext", atomically: true, encoding: .utf8)
        try Self.openssl(
            [
                "req", "-nodes", "-subj", "/CN=\(hosts.first ?? "localhost")", "-keyout", base + ".key", "-out",
                base + ".csr",
            ] + Self.newKey(keyType))
        let hex = String(serial, radix: 16, uppercase: true)
        try Self.openssl([
            "x509", "-req", "-in", base + ".csr", "-CA", certificateFile, "-CAkey", keyFile, "-set_serial",
            "0x" + hex, "-days", "\(days)", "-extfile", base + ".ext", "-out", base + ".crt",
        ])
        return Issued(
            certificateFile: base + ".crt", privateKeyFile: base + ".key",
            serialNumber: hex.count % 2 == 0 ? hex : "0" + hex)
    }

    private static func newKey(_ type: KeyType) -> [String] {
        switch type {
        case .ecdsa: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
        case .rsa: ["-newkey", "rsa:2048"]
        }
    }

    /// Runs `openssl ARGUMENTS`; throws with its error output when it fails.
    private static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw StorageError(
                .internalError,
                "openssl \(arguments.first ?? "") failed: \(String(decoding: output.suffix(2000), as: UTF8.self))")
        }
    }
}
