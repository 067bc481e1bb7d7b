import SiloCore
import SiloServer
import Testing

@testable import SiloConsole
@testable import SiloFirebaseAPI
@testable import SiloGCSAPI
@testable import SiloServerKit
@testable import SiloTestFaults

/// The byte-wise reading of `Host` that every request takes gives the answer the general, character-wise one does.
@Suite struct VirtualHostTests {
    static let suffixes = ["storage.googleapis.com", "localhost", "Upper.Example", ""]
    static let hosts = [
        "demo.appspot.com.localhost", "demo.appspot.com.localhost:9199", "DEMO.AppSpot.com.LOCALHOST:1",
        "b.storage.googleapis.com", "b.storage.googleapis.com.", "b.storage.googleapis.com.:80", "localhost",
        ".localhost", "localhost:9199", "127.0.0.1:9199", "[::1]:9199", "[::1]", "x.upper.example",
        "x.Upper.Example", "bad_bucket!.localhost", "a..localhost", "x.", "x..", ":", "", "ünï.localhost",
        "b.ünï.localhost", "b.storage.googleapis.com:", "my-bucket.localhost:65536",
    ]

    @Test(arguments: hosts) func asciiAndGeneralAgree(_ host: String) {
        #expect(
            VirtualHost.bucket(host: host, suffixes: Self.suffixes) == VirtualHost.generalBucket(host, Self.suffixes))
        let plain = ["storage.googleapis.com", "localhost"]
        #expect(VirtualHost.bucket(host: host, suffixes: plain) == VirtualHost.generalBucket(host, plain))
    }

    @Test func theUsualAnswers() throws {
        let plain = ["storage.googleapis.com", "localhost"]
        #expect(VirtualHost.bucket(host: "Demo.localhost:9199", suffixes: plain) == (try BucketName("demo")))
        #expect(VirtualHost.bucket(host: "127.0.0.1:9199", suffixes: plain) == nil)
        #expect(VirtualHost.bucket(host: "demo.localhost", suffixes: []) == nil)
    }
}
