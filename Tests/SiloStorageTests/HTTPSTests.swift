#if os(Linux)
import Foundation
import SiloStorage
import SiloTestStores
import SiloTesting
import Testing

/// The SDK against a Silo served over HTTPS (`silo serve --tls-cert`), its self-signed CA trusted through
/// `CurlStorageTransport(trustedCertificatesFile:)` — what `SSL_CERT_FILE` sets by default.
@Suite(.timeLimit(.minutes(3))) struct HTTPSTests {
    @Test func uploadsAndDownloadsOverHTTPSTrustingATestCA() async throws {
        let ca = try TestCertificateAuthority()
        let issued = try ca.issue(serial: 0x77)
        let server = try TestServer(
            tls: .files(certificate: issued.certificateFile, key: issued.privateKeyFile))
        defer { server.shutdown() }
        let storage = Storage(
            url: "gs://demo.appspot.com",
            transport: CurlStorageTransport(trustedCertificatesFile: ca.certificateFile))
        storage.useEmulator(withHost: "localhost", port: server.port, secure: true)
        // Several resumable chunks, then a download of the whole.
        storage.uploadChunkSizeBytes = 256 * 1024
        let bytes = Data((0..<(1 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        let reference = storage.reference().child("tls/object.bin")
        let metadata = try await reference.putDataAsync(bytes)
        #expect(metadata.size == Int64(bytes.count))
        #expect(try await reference.data(maxSize: Int64(bytes.count)) == bytes)
        #expect(try await reference.getMetadata().size == Int64(bytes.count))
    }

    @Test func aServerCertificateFromAnotherCAIsRefused() async throws {
        let ca = try TestCertificateAuthority()
        let other = try TestCertificateAuthority()
        let issued = try ca.issue(serial: 0x78)
        let server = try TestServer(
            tls: .files(certificate: issued.certificateFile, key: issued.privateKeyFile))
        defer { server.shutdown() }
        let storage = Storage(
            url: "gs://demo.appspot.com",
            transport: CurlStorageTransport(trustedCertificatesFile: other.certificateFile))
        storage.useEmulator(withHost: "localhost", port: server.port, secure: true)
        storage.maxOperationRetryTime = 1
        await #expect(throws: (any Error).self) {
            try await storage.reference().child("tls/refused.bin").getMetadata()
        }
    }
}
#endif
