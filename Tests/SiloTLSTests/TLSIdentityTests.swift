#if os(Linux)
import Foundation
import SiloTLS
import SiloTesting
import Testing

/// Certificate and key loading, what is refused and why, and reload keeping the old certificate when the new one
/// is bad. The CA and certificates are made by each test with the openssl command line.
@Suite struct TLSIdentityTests {
    @Test(arguments: [TestCertificateAuthority.KeyType.ecdsa, .rsa])
    func loadsACertificateAndItsKey(_ keyType: TestCertificateAuthority.KeyType) throws {
        let ca = try TestCertificateAuthority(keyType: keyType)
        let issued = try ca.issue(serial: 0x5150)
        let context = try TLSContext(
            certificateChainFile: issued.certificateFile, privateKeyFile: issued.privateKeyFile)
        #expect(context.certificate.serialNumber == "5150")
        #expect(context.certificate.subject == "/CN=localhost")
        #expect(context.certificate.notAfter > Int(Date().timeIntervalSince1970))
    }

    @Test func loadsAChainWithIntermediates() throws {
        let ca = try TestCertificateAuthority()
        let issued = try ca.issue(serial: 7)
        let chain = ca.directory.path + "/chain.pem"
        // The leaf, then a further certificate (the CA's own stands in for an intermediate).
        let text =
            try String(contentsOfFile: issued.certificateFile, encoding: .utf8)
            + String(contentsOfFile: ca.certificateFile, encoding: .utf8)
        try text.write(toFile: chain, atomically: true, encoding: .utf8)
        let context = try TLSContext(certificateChainFile: chain, privateKeyFile: issued.privateKeyFile)
        #expect(context.certificate.serialNumber == "07")
    }

    @Test func refusesAKeyThatIsNotTheCertificates() throws {
        let ca = try TestCertificateAuthority()
        let first = try ca.issue("first", serial: 1)
        let second = try ca.issue("second", serial: 2)
        let error = try #require(throws: TLSError.self) {
            try TLSContext(certificateChainFile: first.certificateFile, privateKeyFile: second.privateKeyFile)
        }
        #expect(error.code == .keyMismatch)
        #expect(error.message.contains(first.certificateFile) && error.message.contains(second.privateKeyFile))
    }

    @Test func refusesAnExpiredCertificate() throws {
        let ca = try TestCertificateAuthority()
        let expired = try ca.issue(serial: 3, days: -1)
        let error = try #require(throws: TLSError.self) {
            try TLSContext(certificateChainFile: expired.certificateFile, privateKeyFile: expired.privateKeyFile)
        }
        #expect(error.code == .expiredCertificate)
        #expect(error.message.contains("serial 03"))
    }

    @Test func refusesFilesThatAreNotPEM() throws {
        let ca = try TestCertificateAuthority()
        let issued = try ca.issue(serial: 4)
        let garbage = ca.directory.path + "/garbage.pem"
        try "not a certificate\n".write(toFile: garbage, atomically: true, encoding: .utf8)
        let certificate = try #require(throws: TLSError.self) {
            try TLSContext(certificateChainFile: garbage, privateKeyFile: issued.privateKeyFile)
        }
        #expect(certificate.code == .invalidCertificate)
        #expect(certificate.message.contains(garbage))
        let key = try #require(throws: TLSError.self) {
            try TLSContext(certificateChainFile: issued.certificateFile, privateKeyFile: garbage)
        }
        #expect(key.code == .invalidPrivateKey)
        // A certificate where the key should be is not a key either.
        let swapped = try #require(throws: TLSError.self) {
            try TLSContext(certificateChainFile: issued.certificateFile, privateKeyFile: issued.certificateFile)
        }
        #expect(swapped.code == .invalidPrivateKey)
    }

    /// An encrypted key is refused at once: nobody is asked for a passphrase (a prompt would block the start).
    @Test func refusesAnEncryptedKeyWithoutPrompting() throws {
        let ca = try TestCertificateAuthority()
        let issued = try ca.issue(serial: 5)
        let encrypted = ca.directory.path + "/encrypted.key"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = [
            "pkey", "-in", issued.privateKeyFile, "-aes256", "-passout", "pass:secret", "-out", encrypted,
        ]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let error = try #require(throws: TLSError.self) {
            try TLSContext(certificateChainFile: issued.certificateFile, privateKeyFile: encrypted)
        }
        #expect(error.code == .invalidPrivateKey)
    }

    @Test func refusesMissingHugeAndNonRegularFiles() throws {
        let ca = try TestCertificateAuthority()
        let issued = try ca.issue(serial: 6)
        let missing = ca.directory.path + "/missing.pem"
        let huge = ca.directory.path + "/huge.pem"
        try Data(count: (1 << 20) + 1).write(to: URL(fileURLWithPath: huge))
        for path in [missing, huge, ca.directory.path, "/dev/zero"] {
            let error = try #require(throws: TLSError.self) {
                try TLSContext(certificateChainFile: path, privateKeyFile: issued.privateKeyFile)
            }
            #expect(error.code == .unreadableFile, "\(path)")
            #expect(error.message.contains(path))
        }
    }

    @Test func reloadServesTheNewCertificateAndKeepsTheOldOneWhenTheNewIsBad() throws {
        let ca = try TestCertificateAuthority()
        let first = try ca.issue("first", serial: 0x10)
        let certificate = ca.directory.path + "/live.crt"
        let key = ca.directory.path + "/live.key"
        func install(_ issued: TestCertificateAuthority.Issued) throws {
            for (from, to) in [(issued.certificateFile, certificate), (issued.privateKeyFile, key)] {
                try? FileManager.default.removeItem(atPath: to)
                try FileManager.default.copyItem(atPath: from, toPath: to)
            }
        }
        try install(first)
        let identity = try TLSIdentity(certificateChainFile: certificate, privateKeyFile: key)
        let original = identity.context
        #expect(original.certificate.serialNumber == "10")

        let second = try ca.issue("second", serial: 0x20)
        try install(second)
        #expect(try identity.reload().serialNumber == "20")
        #expect(identity.context.certificate.serialNumber == "20")
        #expect(identity.context !== original)

        // Half-replaced (the new certificate with the old key), then a truncated file: both refused, the second
        // certificate stays.
        let third = try ca.issue("third", serial: 0x30)
        try? FileManager.default.removeItem(atPath: certificate)
        try FileManager.default.copyItem(atPath: third.certificateFile, toPath: certificate)
        let mismatch = try #require(throws: TLSError.self) { try identity.reload() }
        #expect(mismatch.code == .keyMismatch)
        #expect(identity.context.certificate.serialNumber == "20")
        try "-----BEGIN CERTIFICATE-----\nMIIB\n".write(toFile: certificate, atomically: true, encoding: .utf8)
        let truncated = try #require(throws: TLSError.self) { try identity.reload() }
        #expect(truncated.code == .invalidCertificate)
        #expect(identity.context.certificate.serialNumber == "20")
    }
}
#endif
